package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

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
		dir, err := os.MkdirTemp("", tp.name)
		if err != nil {
			tp.err = err
			return
		}
		tp.path = filepath.Join(dir, tp.name)
		out, err := exec.Command("go", "build", "-o", tp.path, "./testdata/"+tp.name).CombinedOutput()
		if err != nil {
			tp.err = fmt.Errorf("building %s: %v\n%s", tp.name, err, out)
		}
	})
	if tp.err != nil {
		t.Fatal(tp.err)
	}
	return tp.path
}

type proc struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type processJob struct {
	procs  []*proc
	secret string
	root   string
}

// startProcesses starts n localities of prog with args, each with the
// environment and the share of the cores (GOMAXPROCS) `tessera run` gives.
func startProcesses(t *testing.T, prog *testProgram, n int, args ...string) *processJob {
	t.Helper()
	bin := prog.build(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	root := ln.Addr().String()
	ln.Close() // locality 0 listens here; a rare port race only fails the test
	key := make([]byte, 32)
	rand.Read(key)
	job := &processJob{secret: hex.EncodeToString(key), root: root}
	procs := max(1, goruntime.NumCPU()/n)
	for i := range n {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(),
			"TESSERA_LOCALITY="+strconv.Itoa(i), "TESSERA_NUM_LOCALITIES="+strconv.Itoa(n),
			"TESSERA_ROOT_ADDR="+root, "TESSERA_LISTEN_HOST=127.0.0.1", "TESSERA_SECRET="+job.secret,
			"GOMAXPROCS="+strconv.Itoa(procs))
		p := &proc{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.err = cmd.Wait(); close(p.done) }()
		job.procs = append(job.procs, p)
	}
	t.Cleanup(func() {
		for _, p := range job.procs {
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return job
}

// waitOutput waits until every process printed want on stdout.
func (j *processJob) waitOutput(t *testing.T, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for i, p := range j.procs {
		for !strings.Contains(p.stdout.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("locality %d did not print %q; stdout:\n%s\nstderr:\n%s", i, want, p.stdout, p.stderr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func exitCode(p *proc) int {
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

func TestProcessKilledLocalityFailsTheJob(t *testing.T) {
	job := startProcesses(t, faultjob, 4, "spin")
	job.waitOutput(t, "ready", 30*time.Second)
	victim := job.procs[2]
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for i, p := range job.procs {
		if i == 2 {
			continue
		}
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("locality %d still running 10 s after locality 2 was killed; stderr:\n%s", i, p.stderr)
		}
		if code := exitCode(p); code == 0 {
			t.Errorf("locality %d exited 0 after locality 2 died", i)
		}
		if !strings.Contains(p.stderr.String(), "locality 2") {
			t.Errorf("locality %d's error does not name locality 2:\n%s", i, p.stderr)
		}
	}
	t.Logf("all survivors exited non-zero within %v", time.Since(killed).Round(time.Millisecond))
}

func TestProcessWrongSecretIsRejectedAndJobGoesOn(t *testing.T) {
	goFile := filepath.Join(t.TempDir(), "go")
	job := startProcesses(t, faultjob, 3, "wait", goFile)
	job.waitOutput(t, "ready", 30*time.Second)

	// An intruder with the wrong secret tries to join as a locality.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	intruder, err := parcel.NewTCP(parcel.TCPConfig{Locality: 5, Listener: ln, Secret: []byte("definitely-not-the-job-secret"), Handler: nopHandler{}})
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = intruder.Connect(ctx, 0, job.root)
	if err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("connecting with the wrong secret: %v, want a rejection naming the secret", err)
	}
	os.WriteFile(goFile, nil, 0o600)
	for i, p := range job.procs {
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("locality %d did not finish", i)
		}
		if code := exitCode(p); code != 0 || !strings.Contains(p.stdout.String(), "finished") {
			t.Errorf("locality %d: exit %d, stdout:\n%s\nstderr:\n%s", i, code, p.stdout, p.stderr)
		}
	}
	if log := job.procs[0].stderr.String(); !strings.Contains(log, "failed the handshake") || !strings.Contains(log, ln.Addr().(*net.TCPAddr).IP.String()) {
		t.Errorf("locality 0 did not log the rejected connection with its address:\n%s", log)
	}
}

func TestProcessOversizedFrameRefusedWithoutAllocation(t *testing.T) {
	job := startProcesses(t, faultjob, 2, "oversize")
	for i, p := range job.procs {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("locality %d did not exit", i)
		}
		if exitCode(p) == 0 {
			t.Errorf("locality %d exited 0", i)
		}
	}
	l0 := job.procs[0]
	if !strings.Contains(l0.stderr.String(), "frame too large") {
		t.Errorf("locality 0 did not report the oversized frame:\n%s", l0.stderr)
	}
	var total uint64
	for _, line := range strings.Split(l0.stdout.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "total-alloc "); ok {
			total, _ = strconv.ParseUint(v, 10, 64)
		}
	}
	if total == 0 || total > 32<<20 {
		t.Errorf("locality 0 allocated %d bytes in all; the 64 MiB frame must not be allocated", total)
	}
	if !strings.Contains(job.procs[1].stderr.String(), "locality 0") {
		t.Errorf("locality 1's error does not name locality 0:\n%s", job.procs[1].stderr)
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
	job.waitOutput(t, "ready", 30*time.Second)
	victim := job.procs[1]
	if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer victim.cmd.Process.Signal(syscall.SIGCONT)
	stopped := time.Now()
	for _, i := range []int{0, 2} {
		p := job.procs[i]
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("locality %d still running 20 s after locality 1 went silent; stderr:\n%s", i, p.stderr)
		}
		if exitCode(p) == 0 || !strings.Contains(p.stderr.String(), "locality 1") {
			t.Errorf("locality %d: exit %d, stderr:\n%s", i, exitCode(p), p.stderr)
		}
	}
	t.Logf("survivors exited after %v", time.Since(stopped).Round(time.Millisecond))
}
