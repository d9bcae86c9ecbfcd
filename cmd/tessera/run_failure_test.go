//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/internal/jobtest"
	"github.com/tessera-amt/tessera/runtime"
)

// A failed job reports its root cause once: one line naming the locality
// where it failed first, the phase and the cause, and one line for the
// localities that stopped because of it; the job exits with that
// locality's status.

// alsProgram is the ALS example, built once for these tests.
type alsProgram struct {
	once sync.Once
	path string
	err  error
}

func (p *alsProgram) build(t *testing.T) string {
	t.Helper()
	p.once.Do(func() {
		dir, err := os.MkdirTemp("", "als")
		if err != nil {
			p.err = err
			return
		}
		p.path, p.err = jobtest.Build("../../examples/als", dir)
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.path
}

// ratingsWithBadLine writes a ratings file whose line 3000 (counting the
// header as 1) is "1,abc,3.5,0".
func ratingsWithBadLine(t *testing.T, als string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ratings.csv")
	if out, err := exec.Command(als, "--synthetic", "400,300,0.05", "--make-ratings", path).CombinedOutput(); err != nil {
		t.Fatalf("als --make-ratings: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 5000 {
		t.Fatalf("only %d lines of ratings", len(lines))
	}
	lines[2999] = "1,abc,3.5,0"
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// launcherLines returns the launcher's lines of stderr; it fails the test
// on a line of a locality that holds want (a report of the failure).
func launcherLines(t *testing.T, stderr, want string) []string {
	t.Helper()
	var own []string
	for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if rest, ok := strings.CutPrefix(l, "[tessera] "); ok {
			own = append(own, rest)
		} else if strings.Contains(l, want) {
			t.Errorf("a locality reported the failure itself: %q", l)
		}
	}
	return own
}

var als alsProgram

func TestRunReportsRootCauseOnce(t *testing.T) {
	t.Parallel()
	prog := als.build(t)
	bad := ratingsWithBadLine(t, prog)
	cause := fmt.Sprintf(`ratings %s line 3000: column 2 (movieId): "abc" is not an integer`, bad)
	opts := runOptions{N: 4, Grace: 10 * time.Second, Prog: prog, Args: []string{"--ratings", bad, "--iterations", "1"}}
	code, stdout, stderr := runHelperJob(t, opts)
	if code != runtime.ExitFailed {
		t.Errorf("exit status %d, want %d, the status of the locality that failed", code, runtime.ExitFailed)
	}
	if n := strings.Count(stdout+stderr, `"abc" is not an integer`); n != 1 {
		t.Errorf("the cause is printed %d times, want once", n)
	}
	lines := launcherLines(t, stderr, "abc")
	// The reader adds where in the line and which locality read it.
	re := regexp.MustCompile(`^locality (\d) failed in main: als on locality (\d): ` + regexp.QuoteMeta(cause) +
		` \(at column 3 of the line; read by locality (\d)\)$`)
	if len(lines) != 2 {
		t.Fatalf("the launcher printed %d lines, want 2:\n%s", len(lines), stderr)
	}
	m := re.FindStringSubmatch(lines[0])
	if m == nil || m[1] != m[2] || m[1] != m[3] {
		t.Fatalf("first line %q, want the cause and the locality that failed; stderr:\n%s", lines[0], stderr)
	}
	if want := fmt.Sprintf("3 other localities stopped because locality %s failed", m[1]); lines[1] != want {
		t.Errorf("second line %q, want %q", lines[1], want)
	}

	// With --verbose, every locality's report and exit are shown too.
	opts.Verbose = true
	code, _, stderr = runHelperJob(t, opts)
	if code != runtime.ExitFailed {
		t.Errorf("--verbose: exit status %d, want %d", code, runtime.ExitFailed)
	}
	for _, want := range []string{"aborted: locality " + m[1] + ": als on locality", "ERROR runtime: locality failed",
		"[tessera] locality " + m[1] + " exited with status 1", "exited with status 3",
		"[tessera] " + lines[0] + "\n[tessera] " + lines[1] + "\n"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--verbose: stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestRunReportsMissingInputOnce(t *testing.T) {
	t.Parallel()
	prog := als.build(t)
	missing := filepath.Join(t.TempDir(), "missing.csv")
	code, stdout, stderr := runHelperJob(t, runOptions{N: 4, Grace: 10 * time.Second, Prog: prog, Args: []string{"--ratings", missing}})
	if code != runtime.ExitFailed {
		t.Errorf("exit status %d, want %d", code, runtime.ExitFailed)
	}
	if n := strings.Count(stdout+stderr, "no such file or directory"); n != 1 {
		t.Errorf("the cause is printed %d times, want once:\n%s", n, stderr)
	}
	lines := launcherLines(t, stderr, "no such file")
	if len(lines) != 2 || !regexp.MustCompile(`^locality \d failed in main: .*`+regexp.QuoteMeta(missing)+`: no such file or directory$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^3 other localities stopped( because locality \d failed|: localit(y|ies) [\d, ]+ with the same error(, \d because locality \d failed)?)$`).MatchString(lines[1]) {
		t.Errorf("the launcher printed\n%s\nwant the cause and a summary of the others; stderr:\n%s", strings.Join(lines, "\n"), stderr)
	}
}

// A locality of a Tessera program that fails, or dies, is named with its
// status; the others' failures are summed up.
func TestRunTesseraProgramFails(t *testing.T) {
	t.Parallel()
	code, _, stderr := runHelperJob(t, helperJob(t, 3, "tessera", "fail", "1"))
	lines := launcherLines(t, stderr, helperCause)
	want := []string{"locality 1 failed in main: reading input: " + helperCause, "2 other localities stopped because locality 1 failed"}
	if code != runtime.ExitFailed || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("exit status %d, launcher's lines\n%s\nwant %d and\n%s", code, strings.Join(lines, "\n"), runtime.ExitFailed, strings.Join(want, "\n"))
	}

	code, _, stderr = runHelperJob(t, helperJob(t, 4, "tessera", "die", "2"))
	lines = launcherLines(t, stderr, "locality 2 down")
	want = []string{`locality 2 was killed by signal "killed" (status 137)`, "3 other localities stopped because locality 2 failed"}
	if code != 128+int(syscall.SIGKILL) || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("exit status %d, launcher's lines\n%s\nwant %d and\n%s", code, strings.Join(lines, "\n"), 128+int(syscall.SIGKILL), strings.Join(want, "\n"))
	}
}
