//go:build !linux

package nodecoll

import "runtime"

// Yield lets the process's other goroutines run: without sched_yield a
// spinning waiter cannot offer the core to the machine's other threads.
func Yield() { runtime.Gosched() }
