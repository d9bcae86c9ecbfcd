//go:build unix

package parcel

import (
	"errors"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// pollConn reads a TCP connection by polling: it tries non-blocking reads
// (on Linux, it asks ppoll(2) first and reads only when there is data) and,
// between tries, lets the other goroutines of the process run
// (runtime.Gosched) and, every yieldEvery tries, the other processes of the
// machine (sched_yield, where the system has it). The try that finds data
// comes back at once instead of waiting for the poller's wake-up, which on
// a machine whose idle cores sleep costs tens of microseconds. While it
// polls, the reader keeps a core busy.
//
// It blocks in the network poller like a plain Read until data comes once
// TCPConfig.PollFor has passed without data, and as soon as a sched_yield
// gave the core to another thread for yieldTaken or more: then the cores
// are shared (more localities than cores, or other work), and polling on
// would take a core from a process whose work the message may depend on.
type pollConn struct {
	raw     syscall.RawConn
	for_    time.Duration
	polling *atomic.Int32         // the port's count of readers polling now
	try     func(fd uintptr) bool // pc.readFD, made once: a closure per try would allocate

	// The read in progress: its buffer, and what the try found.
	buf  []byte
	n    int
	rerr error
	pfd  pollFD
}

// readFD tries one non-blocking read into pc.buf.
func (pc *pollConn) readFD(fd uintptr) bool {
	if !readable(&pc.pfd, fd) {
		pc.n, pc.rerr = 0, syscall.EAGAIN
		return true
	}
	pc.n, pc.rerr = syscall.Read(int(fd), pc.buf)
	return true // never wait in the poller here
}

// newPollConn returns the poller of c, or nil when c offers no raw
// descriptor (then reads block as usual).
func newPollConn(c net.Conn, d time.Duration, polling *atomic.Int32) *pollConn {
	sc, ok := c.(syscall.Conn)
	if !ok || d <= 0 {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	pc := &pollConn{raw: raw, for_: d, polling: polling}
	pc.try = pc.readFD
	return pc
}

// read reads into b like conn.Read, polling first. The read deadline and
// Close apply to each try (RawConn.Read checks them before calling back).
func (pc *pollConn) read(conn net.Conn, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var start time.Time
	pc.buf = b
	pc.polling.Add(1)
	defer func() { pc.buf = nil; pc.polling.Add(-1) }()
	for try := 0; ; try++ {
		err := pc.raw.Read(pc.try)
		n, rerr := pc.n, pc.rerr
		switch {
		case err != nil:
			return 0, err // deadline passed, or the connection is closed
		case rerr == nil && n > 0:
			return n, nil
		case rerr == nil:
			return 0, io.EOF
		case errors.Is(rerr, syscall.EINTR):
			continue
		case !errors.Is(rerr, syscall.EAGAIN):
			return 0, &net.OpError{Op: "read", Net: "tcp", Source: conn.LocalAddr(), Addr: conn.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
		}
		// Nothing yet. Look at the clock now and then only.
		if try%16 == 0 {
			now := time.Now()
			if start.IsZero() {
				start = now
			} else if now.Sub(start) >= pc.for_ {
				return conn.Read(b) // silent for long: block
			}
		}
		goruntime.Gosched()
		if try%yieldEvery == yieldEvery-1 {
			t0 := time.Now()
			osYield()
			if time.Since(t0) >= yieldTaken {
				// Another thread had this core meanwhile: the cores are
				// shared, and polling on takes them from work that the
				// message awaited may depend on. Block.
				return conn.Read(b)
			}
		}
	}
}

// yieldEvery is how many tries the poller makes per sched_yield.
const yieldEvery = 4

// yieldTaken is how long a sched_yield must take for the poller to
// conclude that another thread wanted its core.
const yieldTaken = 20 * time.Microsecond
