//go:build linux

package nodecoll

import "syscall"

// Yield offers the core to the machine's other threads (sched_yield), for
// a waiter that spins while the sites it waits for may need the core.
func Yield() { syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
