package parcel

import (
	"syscall"
	"unsafe"
)

// osYield offers the core to another runnable thread of the machine, as
// MPI libraries do when they poll on an oversubscribed machine.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

// pollFD is struct pollfd of poll(2).
type pollFD struct {
	fd      int32
	events  int16
	revents int16
}

const pollIn = 0x1 // POLLIN

// readable reports whether a read of fd would find data (or an error, or
// the end): ppoll(2) with a zero timeout. Asking the socket this way does
// not take its lock, as a read that finds nothing does; the peer's data
// arriving at the same time does not wait behind a try.
func readable(pfd *pollFD, fd uintptr) bool {
	var zero syscall.Timespec
	pfd.fd, pfd.events, pfd.revents = int32(fd), pollIn, 0
	n, _, errno := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(pfd)), 1, uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
	return errno != 0 || n != 0 // on an error, let the read say what it is
}
