// Package jobtest starts jobs of real processes for Tessera's tests: N
// localities of a program on this machine, each with the environment and
// the share of the cores that `tessera run` gives it, talking over real
// sockets, so that each has to notice failures on its own. Only tests
// import it.
package jobtest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/tessera-amt/tessera/internal/jobenv"
)

// Build builds the Go package in dir (a path such as "./testdata/faultjob",
// relative to the test's package) into the directory out and returns the
// binary's path.
func Build(dir, out string) (string, error) {
	bin := filepath.Join(out, filepath.Base(dir))
	if msg, err := exec.Command("go", "build", "-o", bin, dir).CombinedOutput(); err != nil {
		return "", &BuildError{dir, err, msg}
	}
	return bin, nil
}

// BuildError is a failed Build: the package, why, and the compiler's output.
type BuildError struct {
	Dir    string
	Err    error
	Output []byte
}

func (e *BuildError) Error() string {
	return "building " + e.Dir + ": " + e.Err.Error() + "\n" + string(e.Output)
}

// Buffer is output that other goroutines write (a process's, a logger's),
// safe to read meanwhile.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Proc is one locality's process.
type Proc struct {
	Cmd            *exec.Cmd
	Stdout, Stderr *Buffer
	Done           chan struct{} // closed once the process has exited
	Err            error         // what waiting for it returned; set before Done closes
}

// ExitCode is the process's exit code, or -1 while it runs or if a
// signal ended it.
func (p *Proc) ExitCode() int {
	if p.Cmd.ProcessState == nil {
		return -1
	}
	return p.Cmd.ProcessState.ExitCode()
}

// Job is a running job.
type Job struct {
	Procs  []*Proc
	Secret string // the job secret (TESSERA_SECRET)
	Root   string // locality 0's address (TESSERA_ROOT_ADDR)
}

// Start starts n localities of bin with args, each with the environment
// `tessera run` provides (jobenv.Launch.Environ over this process's
// environment: the locality, the job's size, the root address and a fresh
// secret, and for locality 0 the root listener itself; GOMAXPROCS its
// share of the cores) plus env. The processes are killed, if still
// running, when the test ends.
func Start(t testing.TB, bin string, n int, env []string, args ...string) *Job {
	t.Helper()
	// Locality 0 inherits the listening socket (TESSERA_ROOT_FD), as under
	// tessera run: a port closed and reopened could be taken meanwhile,
	// even by another locality's listener.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	root := ln.Addr().String()
	rootFile, err := ln.(*net.TCPListener).File()
	ln.Close() // rootFile keeps the socket open
	if err != nil {
		t.Fatal(err)
	}
	defer rootFile.Close() // locality 0 has its own copy once started
	key := make([]byte, 32)
	rand.Read(key)
	job := &Job{Secret: hex.EncodeToString(key), Root: root}
	cores := max(1, goruntime.NumCPU()/n)
	t.Cleanup(func() {
		for _, p := range job.Procs {
			p.Cmd.Process.Kill()
			<-p.Done
		}
	})
	launch := jobenv.Launch{Source: jobenv.Launcher, NumLocalities: uint32(n), NodeLocalities: n,
		RootAddr: root, ListenHost: "127.0.0.1", Secret: job.Secret}
	for i := range n {
		cmd := exec.Command(bin, args...)
		l := launch
		l.Locality = uint32(i)
		if i == 0 {
			l.RootFD = jobenv.RootFD
			cmd.ExtraFiles = []*os.File{rootFile} // jobenv.RootFD in the child
		}
		cmd.Env = append(l.Environ(os.Environ()), "GOMAXPROCS="+strconv.Itoa(cores))
		cmd.Env = append(cmd.Env, env...)
		p := &Proc{Cmd: cmd, Stdout: &Buffer{}, Stderr: &Buffer{}, Done: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = p.Stdout, p.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.Err = cmd.Wait(); close(p.Done) }()
		job.Procs = append(job.Procs, p)
	}
	return job
}

// WaitOutput waits until every process has printed want on stdout, and
// fails the test if one has not within limit.
func (j *Job) WaitOutput(t testing.TB, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for i, p := range j.Procs {
		for !strings.Contains(p.Stdout.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("locality %d did not print %q; stdout:\n%s\nstderr:\n%s", i, want, p.Stdout, p.Stderr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
