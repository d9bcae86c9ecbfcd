package runtime

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/internal/jobtest"
	"github.com/tessera-amt/tessera/parcel"
)

// These tests run jobs of real processes over real sockets, with the same
// environment `tessera run` provides, so that each locality has to notice
// failures on its own.

// testProgram is a program under testdata/, built once per test binary.
type testProgram struct {
	name string
	once sync.Once
	path string
	err  error
}

var (
	faultjob = &testProgram{name: "faultjob"}
	colljob  = &testProgram{name: "colljob"}
)

func (tp *testProgram) build(t *testing.T) string {
	t.Helper()
	tp.once.Do(func() {
		// Not t.TempDir: the binary outlives this test, for the others.
		dir, err := os.MkdirTemp("", tp.name)
		if err != nil {
			tp.err = err
			return
		}
		tp.path, tp.err = jobtest.Build("./testdata/"+tp.name, dir)
	})
	if tp.err != nil {
		t.Fatal(tp.err)
	}
	return tp.path
}

// startProcesses starts n localities of prog with args, each with the
// environment and the share of the cores (GOMAXPROCS) `tessera run` gives.
func startProcesses(t *testing.T, prog *testProgram, n int, args ...string) *jobtest.Job {
	t.Helper()
	return jobtest.Start(t, prog.build(t), n, nil, args...)
}

func TestProcessKilledLocalityFailsTheJob(t *testing.T) {
	job := startProcesses(t, faultjob, 4, "spin")
	job.WaitOutput(t, "ready", 30*time.Second)
	victim := job.Procs[2]
	if err := victim.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for i, p := range job.Procs {
		if i == 2 {
			continue
		}
		select {
		case <-p.Done:
		case <-time.After(10 * time.Second):
			t.Fatalf("locality %d still running 10 s after locality 2 was killed; stderr:\n%s", i, p.Stderr)
		}
		if code := p.ExitCode(); code == 0 {
			t.Errorf("locality %d exited 0 after locality 2 died", i)
		}
		if !strings.Contains(p.Stderr.String(), "locality 2") {
			t.Errorf("locality %d's error does not name locality 2:\n%s", i, p.Stderr)
		}
	}
	t.Logf("all survivors exited non-zero within %v", time.Since(killed).Round(time.Millisecond))
}

func TestProcessWrongSecretIsRejectedAndJobGoesOn(t *testing.T) {
	goFile := filepath.Join(t.TempDir(), "go")
	job := startProcesses(t, faultjob, 3, "wait", goFile)
	job.WaitOutput(t, "ready", 30*time.Second)

	// An intruder with the wrong secret tries to join as a locality.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	intruder, err := parcel.NewTCP(parcel.TCPConfig{PortConfig: parcel.PortConfig{Locality: 5, Listener: ln, Secret: []byte("definitely-not-the-job-secret"), Handler: nopHandler{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = intruder.Connect(ctx, 0, job.Root)
	if err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("connecting with the wrong secret: %v, want a rejection naming the secret", err)
	}
	os.WriteFile(goFile, nil, 0o600)
	for i, p := range job.Procs {
		select {
		case <-p.Done:
		case <-time.After(30 * time.Second):
			t.Fatalf("locality %d did not finish", i)
		}
		if code := p.ExitCode(); code != 0 || !strings.Contains(p.Stdout.String(), "finished") {
			t.Errorf("locality %d: exit %d, stdout:\n%s\nstderr:\n%s", i, code, p.Stdout, p.Stderr)
		}
	}
	if log := job.Procs[0].Stderr.String(); !strings.Contains(log, "failed the handshake") || !strings.Contains(log, ln.Addr().(*net.TCPAddr).IP.String()) {
		t.Errorf("locality 0 did not log the rejected connection with its address:\n%s", log)
	}
}

func TestProcessOversizedFrameRefusedWithoutAllocation(t *testing.T) {
	job := startProcesses(t, faultjob, 2, "oversize")
	for i, p := range job.Procs {
		select {
		case <-p.Done:
		case <-time.After(20 * time.Second):
			t.Fatalf("locality %d did not exit", i)
		}
		if p.ExitCode() == 0 {
			t.Errorf("locality %d exited 0", i)
		}
	}
	l0 := job.Procs[0]
	if !strings.Contains(l0.Stderr.String(), "frame too large") {
		t.Errorf("locality 0 did not report the oversized frame:\n%s", l0.Stderr)
	}
	var total uint64
	for _, line := range strings.Split(l0.Stdout.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "total-alloc "); ok {
			total, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	if total == 0 || total > 32<<20 {
		t.Errorf("locality 0 allocated %d bytes in all; the 64 MiB frame must not be allocated", total)
	}
	if !strings.Contains(job.Procs[1].Stderr.String(), "locality 0") {
		t.Errorf("locality 1's error does not name locality 0:\n%s", job.Procs[1].Stderr)
	}
}

type nopHandler struct{}

func (nopHandler) Buffer(*parcel.Header, int, int) []byte { return nil }
func (nopHandler) Receive(*parcel.Parcel)                 {}
func (nopHandler) PeerDown(uint32, error)                 {}

// A locality that stops answering (SIGSTOP: its sockets stay open) is found
// by the heartbeats.
func TestProcessSilentLocalityFailsTheJob(t *testing.T) {
	job := startProcesses(t, faultjob, 3, "spin")
	job.WaitOutput(t, "ready", 30*time.Second)
	defer suspend(t, job.Procs[1].Cmd.Process)()
	stopped := time.Now()
	for _, i := range []int{0, 2} {
		p := job.Procs[i]
		select {
		case <-p.Done:
		case <-time.After(20 * time.Second):
			t.Fatalf("locality %d still running 20 s after locality 1 went silent; stderr:\n%s", i, p.Stderr)
		}
		if p.ExitCode() == 0 || !strings.Contains(p.Stderr.String(), "locality 1") {
			t.Errorf("locality %d: exit %d, stderr:\n%s", i, p.ExitCode(), p.Stderr)
		}
	}
	t.Logf("survivors exited after %v", time.Since(stopped).Round(time.Millisecond))
}
