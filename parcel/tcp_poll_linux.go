package parcel

import "syscall"

// osYield offers the core to another runnable thread of the machine, as
// MPI libraries do when they poll on an oversubscribed machine.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// epollSet is the progress loop's own epoll instance, opened when it
// first blocks (spinners.block). A descriptor is armed for one report
// (EPOLLONESHOT) each time its reader waits in the set; a closed socket
// leaves the set by itself.
type epollSet struct {
	fd     int
	events [16]syscall.EpollEvent
}

// open opens the set if it is not open; false: it cannot be.
func (ep *epollSet) open() bool {
	if ep.fd < 0 {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return false
		}
		ep.fd = fd
	}
	return true
}

// arm asks for one report when fd has something to read, or its end.
func (ep *epollSet) arm(fd int) {
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(fd)}
	if syscall.EpollCtl(ep.fd, syscall.EPOLL_CTL_MOD, fd, &ev) == syscall.ENOENT {
		syscall.EpollCtl(ep.fd, syscall.EPOLL_CTL_ADD, fd, &ev)
	}
}

// wait blocks for up to ms milliseconds and appends to ready the
// descriptors reported (none when the time passed or a signal came).
func (ep *epollSet) wait(ms int, ready []int) ([]int, error) {
	n, err := syscall.EpollWait(ep.fd, ep.events[:], ms)
	if err == syscall.EINTR {
		return ready, nil
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
	if ep.fd >= 0 {
		syscall.Close(ep.fd)
	}
}
