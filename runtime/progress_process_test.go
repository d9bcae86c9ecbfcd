package runtime

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The process tests again with every locality polling
// (TESSERA_PROGRESS=poll, as `tessera run --progress poll` sets it):
// collectives and actions, a killed and a silent locality found within
// seconds, each over real sockets between real processes that also finish
// (Finalize) without hanging.
func TestProcessPoll(t *testing.T) {
	t.Setenv("TESSERA_PROGRESS", ProgressNamePoll)
	t.Run("Collectives", func(t *testing.T) {
		for _, n := range []int{2, 4} {
			start := time.Now()
			job := startProcesses(t, colljob, n)
			for i, p := range job.Procs {
				select {
				case <-p.Done:
				case <-time.After(90 * time.Second):
					t.Fatalf("%d localities: locality %d did not finish in 90 s; stdout:\n%s\nstderr:\n%s", n, i, p.Stdout, p.Stderr)
				}
				want := fmt.Sprintf("locality %d ok", i)
				if code := p.ExitCode(); code != 0 || !strings.Contains(p.Stdout.String(), want) {
					t.Errorf("%d localities: locality %d: exit %d, stdout:\n%s\nstderr:\n%s", n, i, code, p.Stdout, p.Stderr)
				}
			}
			t.Logf("%d localities: %v", n, time.Since(start).Round(time.Millisecond))
		}
	})
	t.Run("KilledLocality", TestProcessKilledLocalityFailsTheJob)
	t.Run("CollectiveKilledLocality", TestProcessCollectiveKilledLocality)
	t.Run("SilentLocality", TestProcessSilentLocalityFailsTheJob)
}

func TestProcessUnknownProgress(t *testing.T) {
	t.Setenv("TESSERA_PROGRESS", "sometimes")
	job := startProcesses(t, colljob, 2)
	for i, p := range job.Procs {
		select {
		case <-p.Done:
		case <-time.After(30 * time.Second):
			t.Fatalf("locality %d did not exit", i)
		}
		if code := p.ExitCode(); code == 0 || !strings.Contains(p.Stderr.String(), `TESSERA_PROGRESS: progress mode "sometimes"`) {
			t.Errorf("locality %d: exit %d, stderr does not name the bad setting:\n%s", i, code, p.Stderr)
		}
	}
}
