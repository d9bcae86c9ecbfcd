//go:build linux

package runtime

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/internal/jobtest"
)

// Four processes of testdata/colljob in a loop of AllReduce: their
// collectives go through one region of shared memory that every one of
// them maps, and a process killed mid-loop fails the others, naming it,
// within seconds although they wait on the region, not on parcels.
func TestProcessNodeCollectivesKilledLocality(t *testing.T) {
	job := startProcesses(t, colljob, 4, "spin")
	job.WaitOutput(t, "ready", 30*time.Second)
	killMidLoop(t, job, 1)
}

// The same with AllReduces of 1 MiB, which go through the large
// operations' shared region (nodebulk): a process killed while the others
// copy into or wait on an entry fails them, naming it, within seconds.
func TestProcessNodeLargeCollectivesKilledLocality(t *testing.T) {
	job := startProcesses(t, colljob, 4, "spin-large")
	job.WaitOutput(t, "ready", 60*time.Second)
	killMidLoop(t, job, 2)
}

// killMidLoop checks that every process of job maps at least regions
// shared regions (the board; the large operations' region too), kills
// locality 1, and checks that every other exits non-zero within seconds,
// naming it.
func killMidLoop(t *testing.T, job *jobtest.Job, regions int) {
	t.Helper()
	// The default parcelport (tcp) maps no region of its own: the regions
	// in every process are the collectives'.
	for i, p := range job.Procs {
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.Cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		inodes := map[string]bool{}
		for _, line := range strings.Split(string(maps), "\n") {
			if f := strings.Fields(line); len(f) >= 6 && strings.HasPrefix(f[5], "/memfd:tessera-ring") {
				inodes[f[4]] = true
			}
		}
		if len(inodes) < regions {
			t.Errorf("locality %d maps %d shared regions for its collectives, want %d:\n%s", i, len(inodes), regions, maps)
		}
	}
	const victim = 1
	if err := job.Procs[victim].Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for i, p := range job.Procs {
		if i == victim {
			continue
		}
		select {
		case <-p.Done:
		case <-time.After(10*time.Second - time.Since(killed)):
			t.Fatalf("locality %d still running 10 s after locality %d was killed; stderr:\n%s", i, victim, p.Stderr)
		}
		if code := p.ExitCode(); code == 0 {
			t.Errorf("locality %d exited 0 after locality %d died", i, victim)
		}
		if !strings.Contains(p.Stderr.String(), fmt.Sprintf("locality %d down", victim)) {
			t.Errorf("locality %d's error does not name locality %d:\n%s", i, victim, p.Stderr)
		}
	}
	t.Logf("all survivors exited non-zero within %v", time.Since(killed).Round(time.Millisecond))
}
