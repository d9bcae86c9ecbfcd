package runtime

import (
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
)

// The collectives as real processes over real sockets: testdata/colljob
// started with the environment `tessera run` provides.

var collBuild struct {
	sync.Once
	path string
	err  error
}

func colljob(t *testing.T) string {
	t.Helper()
	collBuild.Do(func() {
		dir, err := os.MkdirTemp("", "colljob")
		if err != nil {
			collBuild.err = err
			return
		}
		collBuild.path = filepath.Join(dir, "colljob")
		out, err := exec.Command("go", "build", "-o", collBuild.path, "./testdata/colljob").CombinedOutput()
		if err != nil {
			collBuild.err = fmt.Errorf("building colljob: %v\n%s", err, out)
		}
	})
	if collBuild.err != nil {
		t.Fatal(collBuild.err)
	}
	return collBuild.path
}

// startCollJob starts n localities of colljob with args, each with
// GOMAXPROCS = max(1, cores/n) as under `tessera run`.
func startCollJob(t *testing.T, n int, args ...string) *processJob {
	t.Helper()
	bin := colljob(t)
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

// Every operation on 1 to 5 localities, small and 4 MiB payloads, against
// the sequential reference; 200 AllReduce generations; sub-communicators
// over the odd and the even localities.
func TestProcessCollectives(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			start := time.Now()
			job := startCollJob(t, n)
			for i, p := range job.procs {
				select {
				case <-p.done:
				case <-time.After(60 * time.Second):
					t.Fatalf("locality %d did not finish in 60 s; stdout:\n%s\nstderr:\n%s", i, p.stdout, p.stderr)
				}
			}
			for i, p := range job.procs {
				want := fmt.Sprintf("locality %d ok", i)
				if code := exitCode(p); code != 0 || !strings.Contains(p.stdout.String(), want) {
					t.Errorf("locality %d: exit %d, stdout:\n%s\nstderr:\n%s", i, code, p.stdout, p.stderr)
				}
			}
			t.Logf("%d localities: %v", n, time.Since(start).Round(time.Millisecond))
		})
	}
}

// A locality killed while the others are in a loop of AllReduce fails them
// all, naming it, within 10 s.
func TestProcessCollectiveKilledLocality(t *testing.T) {
	job := startCollJob(t, 4, "spin")
	job.waitOutput(t, "ready", 30*time.Second)
	const victim = 2
	if err := job.procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for i, p := range job.procs {
		if i == victim {
			continue
		}
		select {
		case <-p.done:
		case <-time.After(10*time.Second - time.Since(killed)):
			t.Fatalf("locality %d still running 10 s after locality %d was killed; stderr:\n%s", i, victim, p.stderr)
		}
		if code := exitCode(p); code == 0 {
			t.Errorf("locality %d exited 0 after locality %d died", i, victim)
		}
		if !strings.Contains(p.stderr.String(), fmt.Sprintf("locality %d down", victim)) {
			t.Errorf("locality %d's error does not name locality %d:\n%s", i, victim, p.stderr)
		}
	}
	t.Logf("all survivors exited non-zero within %v", time.Since(killed).Round(time.Millisecond))
}
