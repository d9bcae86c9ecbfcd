package jobenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Exit statuses of a locality (runtime.Main). A job that fails has one locality where it failed
// first, the root cause, and others that stopped because of it; each exits
// with the status that says which it is, so that a launcher, or a person
// reading srun's output, can tell them apart.
const (
	// ExitFailed: the job failed here. The program's body returned an
	// error, the locality could not start, or its runtime failed on its
	// own.
	ExitFailed = 1
	// ExitStopped: this locality stopped because another one failed first:
	// that locality aborted the job, or was lost (it died, or went silent).
	// Under srun, whose status is the highest of its tasks', a job that
	// failed on one locality and stopped the others exits with this status.
	ExitStopped = 3
)

// The phases of a locality's life a Failure names.
const (
	PhaseStart    = "start"    // reading the job's environment, joining the job
	PhaseMain     = "main"     // running the program's body (the root task "main")
	PhaseFinalize = "finalize" // the orderly end of the job
)

// Failure is how one locality of a failed job saw the failure: the record
// runtime.Main writes for a launcher (WriteFailure, ReadFailure), and what its
// one-line report on stderr says.
type Failure struct {
	Locality uint32 `json:"locality"` // the locality that reports
	// Root is true when the job failed here (status ExitFailed), false
	// when this locality stopped because Origin failed (ExitStopped).
	Root bool `json:"root"`
	// Origin is the locality where the job failed first as far as this
	// one knows: Locality itself when Root.
	Origin uint32 `json:"origin"`
	// Told is, for a locality that stopped, whether Origin said why it
	// failed (it aborted the job) rather than vanishing, in which case Cause
	// is how its loss was noticed.
	Told   bool   `json:"told"`
	Phase  string `json:"phase"`            // PhaseStart, PhaseMain or PhaseFinalize, here
	Action string `json:"action,omitempty"` // the failed action the cause comes from, when known
	// Cause is the root cause, once: without the chain of localities that
	// passed it on.
	Cause string `json:"cause"`
	// Detail is the whole error as this locality saw it.
	Detail string    `json:"detail"`
	Time   time.Time `json:"time"`   // when this locality reported
	Status int       `json:"status"` // the exit status Main returns
}

// Line is the one line that reports f on a locality's stderr (without a
// launcher that collects the reports), for a job of n localities.
// Locality 0 sums up the localities that stopped; the others that stopped
// name the cause's locality only.
func (f Failure) Line(n uint32) string {
	switch {
	case f.Root:
		return "tessera: " + f.Failed()
	case f.Locality == 0:
		return fmt.Sprintf("tessera: %s stopped%s", localities(int(n)-1, "other "), f.Why())
	default:
		return fmt.Sprintf("tessera: locality %d stopped%s", f.Locality, f.Why())
	}
}

// Failed says where the job failed and why, for a Failure that is Root:
// "locality 3 failed in main: cause", or "locality 3 failed to start:
// cause".
func (f Failure) Failed() string {
	if f.Phase == PhaseStart {
		return fmt.Sprintf("locality %d failed to start: %s", f.Locality, f.Cause)
	}
	return fmt.Sprintf("locality %d failed in %s: %s", f.Locality, f.Phase, f.Cause)
}

// Why says why a locality that stopped did, after "stopped": " because
// locality 3 failed", or, when that locality was lost without saying why,
// ": locality 3 down: how it was lost".
func (f Failure) Why() string {
	if f.Told {
		return fmt.Sprintf(" because locality %d failed", f.Origin)
	}
	return fmt.Sprintf(": locality %d down: %s", f.Origin, f.Cause)
}

// localities is "1 <adj>locality" or "n <adj>localities".
func localities(n int, adj string) string {
	if n == 1 {
		return "1 " + adj + "locality"
	}
	return strconv.Itoa(n) + " " + adj + "localities"
}

// FailureFile is the file in dir where locality loc writes its Failure.
func FailureFile(dir string, loc uint32) string {
	return filepath.Join(dir, fmt.Sprintf("failure-%d.json", loc))
}

// WriteFailure writes f to its FailureFile in dir, whole or not at all.
func WriteFailure(dir string, f Failure) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	path := FailureFile(dir, f.Locality)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("locality %d: writing its failure report: %w", f.Locality, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("locality %d: writing its failure report: %w", f.Locality, err)
	}
	return nil
}

// ReadFailure reads the Failure locality loc wrote in dir; it returns
// nil and no error when it wrote none.
func ReadFailure(dir string, loc uint32) (*Failure, error) {
	b, err := os.ReadFile(FailureFile(dir, loc))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f Failure
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("locality %d's failure report %s: %w", loc, FailureFile(dir, loc), err)
	}
	return &f, nil
}

// SameCause says whether the causes of two failures are the same error
// met on different localities (a missing input file that each reads, say):
// equal once the numbers of the localities they name are left out.
func SameCause(a, b Failure) bool { return withoutLocalities(a.Cause) == withoutLocalities(b.Cause) }

// withoutLocalities is s with the number after every "locality " left out.
func withoutLocalities(s string) string {
	const word = "locality "
	var b strings.Builder
	for {
		i := strings.Index(s, word)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+len(word)])
		s = strings.TrimLeft(s[i+len(word):], "0123456789")
	}
}
