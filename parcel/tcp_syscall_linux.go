package parcel

import (
	"syscall"
	"unsafe"
)

// rawIOMax is the longest read or write made a raw system call (writes
// always, reads with TCPConfig.RawReads); longer ones copy long enough for
// the scheduler to hand the processor on meanwhile, and go through it.
const rawIOMax = 64 << 10

// sysRead reads from the non-blocking descriptor fd into b, as a raw
// system call when raw is set and b is at most rawIOMax long (see
// TCPConfig.RawReads), else through Go's scheduler.
func sysRead(fd int, b []byte, raw bool) (int, error) {
	if !raw || len(b) == 0 || len(b) > rawIOMax {
		return syscall.Read(fd, b)
	}
	return rawIO(syscall.SYS_READ, fd, b)
}

// sysWrite writes b to the non-blocking descriptor fd as a raw system
// call when b is at most rawIOMax long, else through Go's scheduler.
func sysWrite(fd int, b []byte) (int, error) {
	if len(b) == 0 || len(b) > rawIOMax {
		return syscall.Write(fd, b)
	}
	return rawIO(syscall.SYS_WRITE, fd, b)
}

// rawIO is read or write (trap) of b on fd as a raw system call.
func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	n, _, e := syscall.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}
