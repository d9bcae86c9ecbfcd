//go:build linux

package nodecoll

import "syscall"

// Yield offers the core to the machine's other threads (sched_yield), for
// a waiter that spins while the sites it waits for may need the core. It
// is a raw system call: Go's scheduler does not see the thread in a
// system call, so it does not hand the thread's processor to another
// thread when the yield lets other processes run for a while — one more
// thread of this process that wants a core.
func Yield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
