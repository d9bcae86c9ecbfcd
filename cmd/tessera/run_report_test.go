package main

import (
	"bytes"
	"flag"
	"github.com/tessera-amt/tessera/internal/jobenv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime"
)

// tessera help lists every flag of run, in the synopsis and with its
// help, because both are made from run's flag set.
func TestUsageListsEveryRunFlag(t *testing.T) {
	text := usage()
	synopsis, flags, ok := strings.Cut(text, "Flags of run:\n")
	if !ok {
		t.Fatalf("usage has no section for the flags of run:\n%s", text)
	}
	synopsis = strings.Join(strings.Fields(synopsis), " ")
	var o runOptions
	fs := newRunFlagSet(&o)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		want := "[" + flagWithArg(f) + "]"
		if f.Name == "n" {
			want = "run -n N"
		}
		if !strings.Contains(synopsis, want) {
			t.Errorf("the synopsis of run lacks %q:\n%s", want, synopsis)
		}
		if !strings.Contains(flags, "\n  "+flagWithArg(f)+"\n") && !strings.HasPrefix(flags, "  "+flagWithArg(f)+"\n") {
			t.Errorf("the flags of run lack %q:\n%s", flagWithArg(f), flags)
		}
		_, help := flag.UnquoteUsage(f)
		if words := strings.Fields(help); !strings.Contains(strings.Join(strings.Fields(flags), " "), strings.Join(words[len(words)-3:], " ")) {
			t.Errorf("the help of %s is not in the usage", flagName(f))
		}
	})
	for _, name := range []string{"n", "grace", "trace", "trace-format", "profile", "parcelport", "progress",
		"bind", "tcp-congestion", "metrics-addr", "verbose"} {
		if fs.Lookup(name) == nil {
			t.Errorf("run has no flag %s", name)
		}
	}
	if n < 11 {
		t.Errorf("run has %d flags, want at least 11", n)
	}
	for _, l := range strings.Split(text, "\n") {
		if len(l) > 80 {
			t.Errorf("usage line longer than 80 columns: %q", l)
		}
	}
}

func TestSummarize(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	root := func(loc uint32, d time.Duration, cause string) *jobenv.Failure {
		return &jobenv.Failure{Locality: loc, Root: true, Origin: loc, Phase: jobenv.PhaseMain, Cause: cause, Time: at.Add(d), Status: runtime.ExitFailed}
	}
	stopped := func(loc, origin uint32) *jobenv.Failure {
		return &jobenv.Failure{Locality: loc, Origin: origin, Told: true, Status: runtime.ExitStopped}
	}
	tests := []struct {
		name   string
		reps   []exitReport
		lines  []string
		status int
	}{
		{"all exited 0", []exitReport{{loc: 0}, {loc: 1, order: 1}}, nil, 0},
		{"one failed, the others stopped", []exitReport{
			{loc: 0, order: 1, code: 3, failure: stopped(0, 1)},
			{loc: 1, order: 2, code: 1, failure: root(1, 0, "bad line")},
			{loc: 2, order: 0, code: 3, failure: stopped(2, 1)},
			{loc: 3, order: 3, code: 3, failure: stopped(3, 1)},
		}, []string{"locality 1 failed in main: bad line", "3 other localities stopped because locality 1 failed"}, 1},
		{"two failed the same way", []exitReport{
			{loc: 0, order: 0, code: 1, failure: root(0, time.Millisecond, "als on locality 0: no such file")},
			{loc: 1, order: 1, code: 1, failure: root(1, 0, "als on locality 1: no such file")},
			{loc: 2, order: 2, code: 3, failure: stopped(2, 1)},
		}, []string{"locality 1 failed in main: als on locality 1: no such file",
			"2 other localities stopped: locality 0 with the same error, 1 because locality 1 failed"}, 1},
		{"two failed in different ways", []exitReport{
			{loc: 0, order: 0, code: 1, failure: root(0, time.Millisecond, "out of memory")},
			{loc: 1, order: 1, code: 1, failure: root(1, 0, "bad line")},
			{loc: 2, order: 2, code: 3, failure: stopped(2, 1)},
		}, []string{"locality 1 failed in main: bad line", "locality 0 also failed in main: out of memory",
			"1 other locality stopped because locality 1 failed"}, 1},
		{"one died, the others name it", []exitReport{
			{loc: 0, order: 1, code: 3, failure: stopped(0, 2)},
			{loc: 1, order: 0, code: 3, failure: stopped(1, 2)},
			{loc: 2, order: 2, code: 137, desc: `was killed by signal "killed" (status 137)`},
		}, []string{`locality 2 was killed by signal "killed" (status 137)`, "2 other localities stopped because locality 2 failed"}, 137},
		{"one went silent and was killed", []exitReport{
			{loc: 0, order: 0, code: 3, desc: "exited with status 3", failure: &jobenv.Failure{Locality: 0, Origin: 1, Cause: "no heartbeat for 5s", Status: 3}},
			{loc: 1, order: 2, killed: true, desc: "was killed by the launcher"},
			{loc: 2, order: 1, code: 3, desc: "exited with status 3", failure: &jobenv.Failure{Locality: 2, Origin: 1, Cause: "no heartbeat for 5s", Status: 3}},
		}, []string{"locality 1 was killed by the launcher after the others lost it (no heartbeat for 5s)",
			"2 other localities stopped because locality 1 failed"}, 3},
		{"all interrupted", []exitReport{
			{loc: 0, order: 0, code: 130, desc: `was killed by signal "interrupt" (status 130)`},
			{loc: 1, order: 1, code: 130, desc: `was killed by signal "interrupt" (status 130)`},
			{loc: 2, order: 2, code: 130, desc: `was killed by signal "interrupt" (status 130)`},
		}, []string{`locality 0 was killed by signal "interrupt" (status 130)`, "2 other localities exited the same way"}, 130},
		{"no reports, some alike", []exitReport{
			{loc: 0, order: 0, code: 2, desc: "exited with status 2"},
			{loc: 1, order: 1, code: 2, desc: "exited with status 2"},
			{loc: 2, order: 2, killed: true, desc: "was killed by the launcher"},
		}, []string{"locality 0 exited with status 2", "2 other localities stopped: 1 exited the same way, 1 because locality 0 failed"}, 2},
		{"no reports: the first to exit non-zero", []exitReport{
			{loc: 0, order: 2, killed: true, desc: "was killed by the launcher"},
			{loc: 1, order: 0, code: 3, desc: "exited with status 3"},
			{loc: 2, order: 1, code: 5, desc: "exited with status 5"},
		}, []string{"locality 1 exited with status 3", "2 other localities stopped because locality 1 failed"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, status := summarize(tt.reps)
			if status != tt.status || strings.Join(lines, "\n") != strings.Join(tt.lines, "\n") {
				t.Errorf("summarize = %d\n%s\nwant %d\n%s", status, strings.Join(lines, "\n"), tt.status, strings.Join(tt.lines, "\n"))
			}
		})
	}
}

// A job that cannot be run says why in one line, exits non-zero and
// leaves nothing behind.
func TestRunBadInput(t *testing.T) {
	t.Parallel()
	prog, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true program:", err)
	}
	traceDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(traceDir, "notes.txt"), []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	newDir := filepath.Join(t.TempDir(), "new")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "-n", "2", "./tessera-no-such-program"}, `cannot run "./tessera-no-such-program"`},
		{[]string{"run", "-n", "2", "tessera-no-such-program"}, `cannot run "tessera-no-such-program"`},
		{[]string{"run", "-n", "0", prog}, "at least 1, not 0"},
		{[]string{"run", "-n", "2", "--trace", traceDir, prog}, "--trace " + traceDir + ": the directory is not empty (it holds notes.txt)"},
		{[]string{"run", "-n", "2", "--trace-format", "otf2", "--trace", newDir, "./tessera-no-such-program"}, `cannot run`},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := dispatch(tt.args, &stdout, &stderr)
		if code == 0 || stdout.Len() > 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("tessera %q: exit %d, stdout %q, stderr %q; want non-zero and one line with %q", tt.args, code, stdout.String(), stderr.String(), tt.want)
		}
	}
	if entries, _ := os.ReadDir(traceDir); len(entries) != 1 {
		t.Errorf("the refused --trace directory now holds %d entries, want its 1", len(entries))
	}
	if _, err := os.Stat(newDir); err == nil {
		t.Errorf("a job that was not run made its --trace directory %s", newDir)
	}
}
