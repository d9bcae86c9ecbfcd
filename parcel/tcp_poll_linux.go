package parcel

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// osYield offers the core to another runnable thread of the machine, as
// MPI libraries do when they poll on an oversubscribed machine.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// epollSet is the progress loop's own epoll instance, opened when it
// first blocks (spinners.block). A descriptor is armed for one report
// (EPOLLONESHOT) each time its reader waits in the set; a closed socket
// leaves the set by itself.
//
// The set waits in Go's network poller, which reports the epoll
// descriptor readable when one of its own descriptors is: a goroutine in
// a blocking epoll_wait would keep its processor until Go's monitor took
// it back, up to 10 ms later once the monitor idles, which stalls every
// other goroutine of a locality that runs with GOMAXPROCS=1.
type epollSet struct {
	fd     int
	file   *os.File        // fd in the network poller; nil until open
	conn   syscall.RawConn // file's
	events [16]syscall.EpollEvent
}

// open opens the set if it is not open; false: it cannot be.
func (ep *epollSet) open() bool {
	if ep.fd >= 0 {
		return true
	}
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return false
	}
	f := os.NewFile(uintptr(fd), "epoll")
	conn, err := f.SyscallConn()
	if err != nil || f.SetReadDeadline(time.Time{}) != nil { // not in the poller
		f.Close()
		return false
	}
	ep.fd, ep.file, ep.conn = fd, f, conn
	return true
}

// arm asks for one report when fd has something to read, or its end.
func (ep *epollSet) arm(fd int) {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd)}
	if syscall.EpollCtl(ep.fd, syscall.EPOLL_CTL_MOD, fd, &ev) == syscall.ENOENT {
		syscall.EpollCtl(ep.fd, syscall.EPOLL_CTL_ADD, fd, &ev)
	}
}

// wait parks for up to ms milliseconds and appends to ready the
// descriptors reported (none when the time passed or a signal came).
func (ep *epollSet) wait(ms int, ready []int) ([]int, error) {
	if err := ep.file.SetReadDeadline(time.Now().Add(time.Duration(ms) * time.Millisecond)); err != nil {
		return ready, err
	}
	var n int
	var werr error
	err := ep.conn.Read(func(fd uintptr) bool {
		n, werr = syscall.EpollWait(int(fd), ep.events[:], 0)
		if werr == syscall.EINTR {
			n, werr = 0, nil
			return true
		}
		return n > 0 || werr != nil
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return ready, nil
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		return ready, err
	}
	for _, ev := range ep.events[:n] {
		ready = append(ready, int(ev.Fd))
	}
	return ready, nil
}

func (ep *epollSet) close() {
	if ep.file != nil {
		ep.file.Close()
	}
}
