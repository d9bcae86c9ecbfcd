package primitives

import (
	"bytes"
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
	"testing"
	"time"

	"github.com/tessera-amt/tessera/trace"
)

// These tests run the scenarios of testdata/arrayjob as jobs of 1 to 5 real
// processes over real sockets, with the environment `tessera run` gives
// each locality.

// buildArrayJob builds testdata/arrayjob into dir.
func buildArrayJob(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "arrayjob")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/arrayjob").CombinedOutput(); err != nil {
		t.Fatalf("building testdata/arrayjob: %v\n%s", err, out)
	}
	return bin
}

// lockedBuffer is an output buffer written by a process and read by the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runProcesses runs bin with args as a job of n localities and waits until
// every process has ended or limit has passed; it fails the test unless
// every locality exited with 0 and printed "locality N ok". env is added
// to each process's environment.
func runProcesses(t *testing.T, bin string, n int, limit time.Duration, env []string, args ...string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	root := ln.Addr().String()
	ln.Close() // locality 0 listens here; a rare port race only fails the test
	key := make([]byte, 32)
	rand.Read(key)
	secret := hex.EncodeToString(key)
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr *lockedBuffer
		done           chan error
	}
	procs := make([]*proc, n)
	for i := range n {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(),
			"TESSERA_LOCALITY="+strconv.Itoa(i), "TESSERA_NUM_LOCALITIES="+strconv.Itoa(n),
			"TESSERA_ROOT_ADDR="+root, "TESSERA_LISTEN_HOST=127.0.0.1", "TESSERA_SECRET="+secret,
			"GOMAXPROCS="+strconv.Itoa(max(1, goruntime.NumCPU()/n)))
		cmd.Env = append(cmd.Env, env...)
		p := &proc{cmd: cmd, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan error, 1)}
		cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- cmd.Wait() }()
		procs[i] = p
	}
	timeout := time.After(limit)
	for i, p := range procs {
		select {
		case err := <-p.done:
			want := fmt.Sprintf("locality %d ok", i)
			if err != nil || !strings.Contains(p.stdout.String(), want) {
				t.Errorf("%s on %d localities: locality %d: %v, did not print %q; stdout:\n%s\nstderr:\n%s",
					strings.Join(args, " "), n, i, err, want, p.stdout, p.stderr)
			}
		case <-timeout:
			for _, q := range procs {
				q.cmd.Process.Kill()
			}
			t.Fatalf("%s on %d localities: locality %d did not end within %v; stdout:\n%s\nstderr:\n%s",
				strings.Join(args, " "), n, i, limit, p.stdout, p.stderr)
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
