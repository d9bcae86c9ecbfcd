package primitives

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/internal/jobtest"
	"github.com/tessera-amt/tessera/trace"
)

// These tests run the scenarios of testdata/arrayjob as jobs of 1 to 5 real
// processes over real sockets, with the environment `tessera run` gives
// each locality.

// buildArrayJob builds testdata/arrayjob.
func buildArrayJob(t *testing.T) string {
	t.Helper()
	bin, err := jobtest.Build("./testdata/arrayjob", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runProcesses runs bin with args as a job of n localities and waits until
// every process has ended or limit has passed; it fails the test unless
// every locality exited with 0 and printed "locality N ok". env is added
// to each process's environment.
func runProcesses(t *testing.T, bin string, n int, limit time.Duration, env []string, args ...string) {
	t.Helper()
	job := jobtest.Start(t, bin, n, env, args...)
	timeout := time.After(limit)
	for i, p := range job.Procs {
		select {
		case <-p.Done:
			want := fmt.Sprintf("locality %d ok", i)
			if p.Err != nil || !strings.Contains(p.Stdout.String(), want) {
				t.Errorf("%s on %d localities: locality %d: %v, did not print %q; stdout:\n%s\nstderr:\n%s",
					strings.Join(args, " "), n, i, p.Err, want, p.Stdout, p.Stderr)
			}
		case <-timeout:
			t.Fatalf("%s on %d localities: locality %d did not end within %v; stdout:\n%s\nstderr:\n%s",
				strings.Join(args, " "), n, i, limit, p.Stdout, p.Stderr)
		}
	}
}

// TestProcessScenarios runs every scenario arrayjob lists on 1 to 5
// processes.
func TestProcessScenarios(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process jobs: not in -short")
	}
	bin := buildArrayJob(t)
	out, err := exec.Command(bin, "-list").Output()
	if err != nil {
		t.Fatalf("arrayjob -list: %v", err)
	}
	names := strings.Fields(string(out))
	if len(names) == 0 {
		t.Fatal("arrayjob -list lists no scenario")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for n := 1; n <= 5; n++ {
				runProcesses(t, bin, n, 2*time.Minute, nil, name)
			}
		})
	}
}

// TestProcessFetchBlockTraced: a traced retile on 3 processes shows the
// fetch_block region in the job's OTF2 archive.
func TestProcessFetchBlockTraced(t *testing.T) {
	if testing.Short() {
		t.Skip("real-process jobs: not in -short")
	}
	bin := buildArrayJob(t)
	dir := t.TempDir()
	runProcesses(t, bin, 3, 2*time.Minute, []string{"TESSERA_TRACE=" + dir}, "retile")
	anchor, err := trace.FindOTF2(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, err := trace.ReadOTF2(anchor)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range a.Regions {
		if n := a.StringOf(r.Name); n == "fetch_block" {
			return
		} else {
			names = append(names, n)
		}
	}
	t.Fatalf("no fetch_block region in the trace of a retile; regions: %v", names)
}
