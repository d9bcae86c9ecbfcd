//go:build linux

package runtime

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Four processes of testdata/colljob in a loop of AllReduce: their
// collectives go through one region of shared memory that every one of
// them maps, and a process killed mid-loop fails the others, naming it,
// within seconds although they wait on the region, not on parcels.
func TestProcessNodeCollectivesKilledLocality(t *testing.T) {
	job := startProcesses(t, colljob, 4, "spin")
	job.WaitOutput(t, "ready", 30*time.Second)
	// The default parcelport (tcp) maps no region of its own: a region
	// in every process is the board of the collectives.
	for i, p := range job.Procs {
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", p.Cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(maps), "memfd:tessera-ring") {
			t.Errorf("locality %d maps no shared region for its collectives:\n%s", i, maps)
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
