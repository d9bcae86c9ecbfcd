package runtime

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var failjob = &testProgram{name: "failjob"}

// Without a launcher that collects the reports (under srun), the locality
// where the job failed prints the cause, locality 0 sums up the others,
// and the others print one line each, naming the cause's locality only.
func TestProcessFailureReportedOnce(t *testing.T) {
	const n, fails = 4, 2
	job := startProcesses(t, failjob, n, fmt.Sprint(fails))
	var all strings.Builder
	for i, p := range job.Procs {
		select {
		case <-p.Done:
		case <-time.After(30 * time.Second):
			t.Fatalf("locality %d still running; stderr:\n%s", i, p.Stderr)
		}
		want, status := fmt.Sprintf("tessera: locality %d stopped because locality %d failed\n", i, fails), ExitStopped
		switch i {
		case fails:
			want, status = fmt.Sprintf("tessera: locality %d failed in main: input.csv line 7: column 2: \"abc\" is not an integer\n", i), ExitFailed
		case 0:
			want = fmt.Sprintf("tessera: %d other localities stopped because locality %d failed\n", n-1, fails)
		}
		if code, stderr := p.ExitCode(), p.Stderr.String(); code != status || stderr != want {
			t.Errorf("locality %d: exit %d, stderr:\n%s\nwant %d and\n%s", i, code, stderr, status, want)
		}
		all.WriteString(p.Stderr.String())
	}
	if c := strings.Count(all.String(), `"abc"`); c != 1 {
		t.Errorf("the cause is printed %d times, want once", c)
	}
}
