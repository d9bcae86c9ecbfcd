//go:build !linux

package shm

import (
	"sync/atomic"
	"time"
)

// FutexWait sleeps a little while *w holds val: without futexes the
// sleeper polls.
func FutexWait(w *atomic.Uint32, val uint32, timeout time.Duration) {
	if w.Load() == val {
		time.Sleep(min(timeout, 100*time.Microsecond))
	}
}

// FutexWake does nothing: sleepers of FutexWait poll.
func FutexWake(w *atomic.Uint32, n int) {}
