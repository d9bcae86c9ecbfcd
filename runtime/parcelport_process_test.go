package runtime

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The process tests again with every locality on the nbio parcelport
// (TESSERA_PARCELPORT=nbio, as `tessera run --parcelport nbio` sets it):
// actions, collectives, a killed and a silent locality, an oversized frame
// and an intruder, each over real sockets between real processes.
func TestProcessNBIO(t *testing.T) {
	t.Setenv("TESSERA_PARCELPORT", ParcelportNBIO)
	t.Run("Collectives", func(t *testing.T) {
		job := startProcesses(t, colljob, 4)
		for i, p := range job.Procs {
			select {
			case <-p.Done:
			case <-time.After(60 * time.Second):
				t.Fatalf("locality %d did not finish in 60 s; stdout:\n%s\nstderr:\n%s", i, p.Stdout, p.Stderr)
			}
			want := fmt.Sprintf("locality %d ok", i)
			if code := p.ExitCode(); code != 0 || !strings.Contains(p.Stdout.String(), want) {
				t.Errorf("locality %d: exit %d, stdout:\n%s\nstderr:\n%s", i, code, p.Stdout, p.Stderr)
			}
			// nbio announces its engine on standard output.
			if engine := fmt.Sprintf("NBIO Engine[tessera-L%d]", i); !strings.Contains(p.Stdout.String(), engine) {
				t.Errorf("locality %d did not run on nbio (no %q in its output):\n%s", i, engine, p.Stdout)
			}
		}
	})
	t.Run("KilledLocality", TestProcessKilledLocalityFailsTheJob)
	t.Run("CollectiveKilledLocality", TestProcessCollectiveKilledLocality)
	t.Run("SilentLocality", TestProcessSilentLocalityFailsTheJob)
	t.Run("OversizedFrame", TestProcessOversizedFrameRefusedWithoutAllocation)
	t.Run("WrongSecret", TestProcessWrongSecretIsRejectedAndJobGoesOn)
}

// The process tests again on the shared-memory parcelport
// (TESSERA_PARCELPORT=shm): every pair of localities, all on this
// machine, talks through rings in shared memory.
func TestProcessSHM(t *testing.T) {
	t.Setenv("TESSERA_PARCELPORT", ParcelportSHM)
	t.Run("Collectives", func(t *testing.T) {
		const n = 4
		job := startProcesses(t, colljob, n)
		for i, p := range job.Procs {
			select {
			case <-p.Done:
			case <-time.After(60 * time.Second):
				t.Fatalf("locality %d did not finish in 60 s; stdout:\n%s\nstderr:\n%s", i, p.Stdout, p.Stderr)
			}
			want := fmt.Sprintf("locality %d ok", i)
			if code := p.ExitCode(); code != 0 || !strings.Contains(p.Stdout.String(), want) {
				t.Errorf("locality %d: exit %d, stdout:\n%s\nstderr:\n%s", i, code, p.Stdout, p.Stderr)
			}
			if shared := fmt.Sprintf("locality %d: %d peers in shared memory", i, n-1); !strings.Contains(p.Stdout.String(), shared) {
				t.Errorf("locality %d: not every peer in shared memory (no %q):\n%s\nstderr:\n%s", i, shared, p.Stdout, p.Stderr)
			}
		}
	})
	t.Run("KilledLocality", TestProcessKilledLocalityFailsTheJob)
	t.Run("CollectiveKilledLocality", TestProcessCollectiveKilledLocality)
	t.Run("SilentLocality", TestProcessSilentLocalityFailsTheJob)
	t.Run("OversizedFrame", TestProcessOversizedFrameRefusedWithoutAllocation)
	t.Run("WrongSecret", TestProcessWrongSecretIsRejectedAndJobGoesOn)
}

func TestProcessUnknownParcelport(t *testing.T) {
	t.Setenv("TESSERA_PARCELPORT", "carrier-pigeon")
	job := startProcesses(t, colljob, 2)
	for i, p := range job.Procs {
		select {
		case <-p.Done:
		case <-time.After(30 * time.Second):
			t.Fatalf("locality %d did not exit", i)
		}
		if code := p.ExitCode(); code == 0 || !strings.Contains(p.Stderr.String(), `TESSERA_PARCELPORT="carrier-pigeon"`) {
			t.Errorf("locality %d: exit %d, stderr does not name the bad setting:\n%s", i, code, p.Stderr)
		}
	}
}
