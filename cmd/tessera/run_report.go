package main

import (
	"errors"
	"fmt"
	"github.com/tessera-amt/tessera/internal/jobenv"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// exitReport is what the launcher knows of one locality once the job is
// over.
type exitReport struct {
	loc    int
	order  int    // how many localities exited before it
	code   int    // what it contributes to the job's status (exitStatus)
	desc   string // how it exited (exitStatus)
	killed bool   // the launcher killed it
	// failure is what it reported of its failure (jobenv.WriteFailure),
	// nil if nothing.
	failure *jobenv.Failure
}

// exitReports collects what the children of a finished job left: how they
// exited, and the failures they reported in dir. A report that cannot be
// read counts as none.
func exitReports(children []*child, dir string) []exitReport {
	reps := make([]exitReport, len(children))
	for i, c := range children {
		code, desc := exitStatus(c)
		reps[i] = exitReport{loc: c.loc, order: c.order, code: code, desc: desc, killed: c.killed}
		reps[i].failure, _ = jobenv.ReadFailure(dir, uint32(c.loc))
	}
	return reps
}

// root reports whether r reported that the job failed at its locality.
func (r *exitReport) root() bool { return r.failure != nil && r.failure.Root }

// summarize turns how the localities of a job exited into the launcher's
// report and the job's exit status. A job where every locality exited 0
// has status 0 and no report. Otherwise the report is one line for the
// locality where the job failed first — its phase and the cause, from its
// own report — and one line that sums up the others, which stopped
// because of it or failed in the same way. A locality that failed on its
// own with another cause has a line of its own. The status is that of the
// locality where the job failed first.
//
// That locality is, of those that reported a failure of their own, the
// first to report it; when none did (it died, or is not a Tessera
// program), the one the others' reports name, else the first to exit
// with a non-zero status.
func summarize(reps []exitReport) (lines []string, status int) {
	firstBad := -1
	for i, r := range reps {
		if r.code != 0 && (firstBad < 0 || r.order < reps[firstBad].order) {
			firstBad = i
		}
	}
	if firstBad < 0 {
		return nil, 0
	}
	root := -1
	for i := range reps {
		if reps[i].root() && (root < 0 || reps[i].failure.Time.Before(reps[root].failure.Time)) {
			root = i
		}
	}
	if root < 0 {
		root = namedOrigin(reps)
	}
	if root < 0 {
		root = firstBad
	}
	r := &reps[root]
	status = r.code
	if status == 0 {
		status = reps[firstBad].code
	}
	switch {
	case r.root():
		lines = append(lines, r.failure.Failed())
	case r.killed:
		// It hung (went silent, say): how the others lost it is all
		// there is to say.
		line := fmt.Sprintf("locality %d %s", r.loc, r.desc)
		for _, o := range reps {
			if o.failure != nil && !o.failure.Root && !o.failure.Told && o.failure.Origin == uint32(r.loc) {
				line += fmt.Sprintf(" after the others lost it (%s)", o.failure.Cause)
				break
			}
		}
		lines = append(lines, line)
	default:
		lines = append(lines, fmt.Sprintf("locality %d %s", r.loc, r.desc))
	}

	var same []string // localities that failed the same way on their own
	alike := 0        // localities that exited as root did, without a report (all killed by Ctrl-C, say)
	stopped := 0      // localities that stopped because of root
	for i := range reps {
		o := &reps[i]
		switch {
		case i == root || (o.code == 0 && !o.killed):
		case o.root() && r.root() && jobenv.SameCause(*o.failure, *r.failure):
			same = append(same, strconv.Itoa(o.loc))
		case o.root():
			lines = append(lines, strings.Replace(o.failure.Failed(), " failed ", " also failed ", 1))
		case o.failure == nil && !r.root() && !o.killed && o.desc == r.desc:
			alike++
		default:
			stopped++
		}
	}
	others := localities(len(same)+alike+stopped, "other ")
	because := fmt.Sprintf("because locality %d failed", r.loc)
	switch {
	case len(same)+alike+stopped == 0:
	case len(same)+alike == 0:
		lines = append(lines, fmt.Sprintf("%s stopped %s", others, because))
	case len(same)+stopped == 0:
		lines = append(lines, others+" exited the same way")
	default:
		var parts []string
		if len(same) == 1 {
			parts = append(parts, "locality "+same[0]+" with the same error")
		} else if len(same) > 1 {
			parts = append(parts, "localities "+strings.Join(same, ", ")+" with the same error")
		}
		if alike > 0 {
			parts = append(parts, fmt.Sprintf("%d exited the same way", alike))
		}
		if stopped > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", stopped, because))
		}
		lines = append(lines, others+" stopped: "+strings.Join(parts, ", "))
	}
	return lines, status
}

// namedOrigin returns the index of the locality that most reports of
// localities that stopped name as the one they stopped for, if it exited
// non-zero or was killed; -1 if there is none.
func namedOrigin(reps []exitReport) int {
	votes := make(map[uint32]int)
	for _, r := range reps {
		if r.failure != nil && !r.failure.Root {
			votes[r.failure.Origin]++
		}
	}
	best := -1
	for i, r := range reps {
		if v := votes[uint32(r.loc)]; v > 0 && (r.code != 0 || r.killed) && (best < 0 || v > votes[uint32(reps[best].loc)]) {
			best = i
		}
	}
	return best
}

// localities is "1 <adj>locality" or "n <adj>localities".
func localities(n int, adj string) string {
	if n == 1 {
		return "1 " + adj + "locality"
	}
	return strconv.Itoa(n) + " " + adj + "localities"
}

// checkTraceDir refuses a --trace directory that exists and is not empty:
// the run's trace would be mixed with what is there, or look like it.
func checkTraceDir(dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--trace %s: %w", dir, err)
	case len(entries) > 0:
		names := make([]string, 0, 3)
		for _, e := range entries[:min(3, len(entries))] { // sorted by name
			names = append(names, e.Name())
		}
		more := ""
		if len(entries) > 3 {
			more = ", ..."
		}
		return fmt.Errorf("--trace %s: the directory is not empty (it holds %s%s); give a new or empty one",
			dir, strings.Join(names, ", "), more)
	}
	return nil
}
