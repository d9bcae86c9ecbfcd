package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The collectives as real processes over real sockets: testdata/colljob
// started with the environment `tessera run` provides.

// Every operation on 1 to 5 localities, small and 4 MiB payloads, against
// the sequential reference; 200 AllReduce generations; sub-communicators
// over the odd and the even localities.
func TestProcessCollectives(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			start := time.Now()
			job := startProcesses(t, colljob, n)
			for i, p := range job.Procs {
				select {
				case <-p.Done:
				case <-time.After(60 * time.Second):
					t.Fatalf("locality %d did not finish in 60 s; stdout:\n%s\nstderr:\n%s", i, p.Stdout, p.Stderr)
				}
			}
			for i, p := range job.Procs {
				want := fmt.Sprintf("locality %d ok", i)
				if code := p.ExitCode(); code != 0 || !strings.Contains(p.Stdout.String(), want) {
					t.Errorf("locality %d: exit %d, stdout:\n%s\nstderr:\n%s", i, code, p.Stdout, p.Stderr)
				}
			}
			t.Logf("%d localities: %v", n, time.Since(start).Round(time.Millisecond))
		})
	}
}

// A locality killed while the others are in a loop of AllReduce fails them
// all, naming it, within 10 s.
func TestProcessCollectiveKilledLocality(t *testing.T) {
	job := startProcesses(t, colljob, 4, "spin")
	job.WaitOutput(t, "ready", 30*time.Second)
	const victim = 2
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
