//go:build linux

package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The futex operations (linux/futex.h), shared between processes: not
// FUTEX_PRIVATE_FLAG.
const (
	futexWait = 0
	futexWake = 1
)

// FutexWait sleeps while *w holds val, until FutexWake on the same word
// (in any process that maps it), a signal, or timeout. It may return
// early for no reason; callers check their condition again. The word must
// be in a shared mapping (a Region) for another process to wake it: the
// futex is not private to the process.
func FutexWait(w *atomic.Uint32, val uint32, timeout time.Duration) {
	ts := unix.NsecToTimespec(int64(timeout))
	// Syscall, not RawSyscall: the scheduler hands this thread's
	// processor to other goroutines while it sleeps.
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// FutexWake wakes up to n sleepers of FutexWait on w.
func FutexWake(w *atomic.Uint32, n int) {
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(n), 0, 0, 0)
}
