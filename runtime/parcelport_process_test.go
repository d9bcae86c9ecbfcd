package runtime

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/internal/jobtest"
)

// The process tests again with every locality on the nbio parcelport
// (TESSERA_PARCELPORT=nbio, as `tessera run --parcelport nbio` sets it):
// actions, collectives, a killed and a silent locality, an oversized frame
// and an intruder, each over real sockets between real processes.
func TestProcessNBIO(t *testing.T) {
	t.Setenv("TESSERA_PARCELPORT", ParcelportNBIO)
	t.Run("Collectives", func(t *testing.T) {
		for i, p := range checkCollJob(t, 4, 0) {
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

// The job picks shared memory by itself (no TESSERA_PARCELPORT): every
// pair of localities, all on this machine, talks through rings in shared
// memory, and the process tests above run so.
func TestProcessDefaultIsSharedMemory(t *testing.T) {
	t.Setenv("TESSERA_PARCELPORT", "")
	checkCollJob(t, 4, 3)
}

// The process tests again on the tcp parcelport (TESSERA_PARCELPORT=tcp,
// as `tessera run --parcelport tcp` sets it): no peer in shared memory.
func TestProcessTCP(t *testing.T) {
	t.Setenv("TESSERA_PARCELPORT", ParcelportTCP)
	t.Run("Collectives", func(t *testing.T) { checkCollJob(t, 4, 0) })
	t.Run("KilledLocality", TestProcessKilledLocalityFailsTheJob)
	t.Run("CollectiveKilledLocality", TestProcessCollectiveKilledLocality)
	t.Run("SilentLocality", TestProcessSilentLocalityFailsTheJob)
	t.Run("OversizedFrame", TestProcessOversizedFrameRefusedWithoutAllocation)
	t.Run("WrongSecret", TestProcessWrongSecretIsRejectedAndJobGoesOn)
}

// checkCollJob runs colljob's checks on n localities, wants each to pass
// with shared of its peers in shared memory, and returns the processes.
func checkCollJob(t *testing.T, n, shared int) []*jobtest.Proc {
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
		if line := fmt.Sprintf("locality %d: %d peers in shared memory", i, shared); !strings.Contains(p.Stdout.String(), line) {
			t.Errorf("locality %d: want %q in its output:\n%s\nstderr:\n%s", i, line, p.Stdout, p.Stderr)
		}
	}
	return job.Procs
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
