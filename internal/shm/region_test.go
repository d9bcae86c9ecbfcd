//go:build linux

package shm

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func TestRegionMappedTwiceSharesMemory(t *testing.T) {
	r, err := NewRegion(3 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := MapRegion(r.PID, r.FD, r.Ino, int64(len(r.Mem)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if &m.Mem[0] == &r.Mem[0] {
		t.Fatal("MapRegion returned the creator's mapping, want one of its own")
	}
	r.Mem[5000] = 42
	m.Mem[9000] = 7
	if m.Mem[5000] != 42 || r.Mem[9000] != 7 {
		t.Fatalf("writes do not show through the other mapping: %d, %d", m.Mem[5000], r.Mem[9000])
	}
	if err := m.Close(); err != nil || m.Close() != nil {
		t.Fatalf("Close, twice: %v", err)
	}
}

func TestMapRegionRefusesAnotherFile(t *testing.T) {
	r, err := NewRegion(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		name    string
		fd      int32
		ino     uint64
		size    int64
		wantErr string
	}{
		{"other inode", r.FD, r.Ino + 1, 4096, "not the region"},
		{"other size", r.FD, r.Ino, 8192, "not the region"},
		{"no such descriptor", 1 << 20, r.Ino, 4096, "opening"},
		{"no size", r.FD, r.Ino, 0, "bad size"},
	} {
		if m, err := MapRegion(r.PID, c.fd, c.ino, c.size); err == nil {
			m.Close()
			t.Errorf("%s: mapped", c.name)
		} else if !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), fmt.Sprint("process ", r.PID)) {
			t.Errorf("%s: %v, want %q and the process named", c.name, err, c.wantErr)
		}
	}
	// A descriptor of a plain file (not sealed) is refused too.
	f, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Truncate(4096)
	st, _ := f.Stat()
	ino := st.Sys().(*syscall.Stat_t).Ino
	if m, err := MapRegion(int32(os.Getpid()), int32(f.Fd()), ino, 4096); err == nil {
		m.Close()
		t.Error("mapped a file that is not sealed")
	} else if !strings.Contains(err.Error(), "sealed") {
		t.Errorf("plain file: %v, want it refused as not sealed", err)
	}
}

// TestFutexWakesASleeper: a sleeper on a word in a region is woken
// through another mapping of it, long before its timeout.
func TestFutexWakesASleeper(t *testing.T) {
	r, err := NewRegion(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m, err := MapRegion(r.PID, r.FD, r.Ino, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sleeper := (*atomic.Uint32)(unsafe.Pointer(&r.Mem[64]))
	waker := (*atomic.Uint32)(unsafe.Pointer(&m.Mem[64]))
	woke := make(chan time.Duration, 1)
	started := make(chan struct{})
	go func() {
		start := time.Now()
		close(started)
		for sleeper.Load() == 0 {
			FutexWait(sleeper, 0, 10*time.Second)
		}
		woke <- time.Since(start)
	}()
	<-started
	time.Sleep(20 * time.Millisecond)
	waker.Store(1)
	FutexWake(waker, 1)
	select {
	case d := <-woke:
		if d > 5*time.Second {
			t.Fatalf("woke after %v: by the timeout, not the wake", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the sleeper was not woken")
	}
	// A wait on a word that no longer holds the value returns at once.
	start := time.Now()
	FutexWait(sleeper, 0, 10*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a wait on a changed word took %v", d)
	}
}
