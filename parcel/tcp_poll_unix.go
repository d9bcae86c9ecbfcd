//go:build unix

package parcel

import (
	goruntime "runtime"
	"sync/atomic"
	"time"
)

// spinner is the poll progress mode of a TCP reader (TCPConfig.PollFor):
// when the socket has nothing to read, the reader tries to read it again
// and again (a probe: a non-blocking read, whose bytes, once some come, are
// the reader's next read — asking with ppoll(2) first cost a second system
// call per message, 4% of the round trip), letting the other goroutines of the process run
// between tries (runtime.Gosched) and, every yieldEvery tries, the other
// processes of the machine (sched_yield, where the system has it). Data that
// arrives is then read at once instead of after the poller's wake-up, which
// on a machine whose idle cores sleep costs tens of microseconds. While it
// spins, the reader keeps a core busy.
//
// It gives up — and the reader blocks in the network poller until data
// comes — once PollFor has passed without data, and as soon as a
// sched_yield gave the core to another thread for yieldTaken or more: then
// the cores are shared (more localities than cores, or other work), and
// spinning on would take a core from a process whose work the message may
// depend on. If the port has other readers, none spins for the
// next sharedPause: readers that spin keep the process's goroutines
// runnable, and Go's scheduler looks at its network poller — where the
// readers that gave up wait — only when it has nothing else to run, so
// readers left spinning would starve the others (an AllReduce of 4
// localities on 2 cores took 500-800 µs so, 110-140 µs with the pause).
type spinner struct {
	window time.Duration
	port   *spinners
}

// spinners is what the spinning readers of a port share.
type spinners struct {
	polling atomic.Int32 // readers spinning now
	readers atomic.Int32 // readers that spin when they wait (readRaw)
	pause   atomic.Int64 // unix nanoseconds until which none spins
}

// newSpinner returns the spinner of a reader of port that polls for
// window, or nil for one that blocks (window <= 0).
func newSpinner(window time.Duration, port *spinners) *spinner {
	if window <= 0 {
		return nil
	}
	return &spinner{window: window, port: port}
}

// await spins until probe, a non-blocking read, reports that it read
// something (or failed otherwise than finding nothing), and reports
// whether it did; false means the reader should block instead. It also
// gives up when quit says so (asked now and then with the time): when the
// peer went silent or the connection is closing, which the poller then
// reports.
func (s *spinner) await(probe func() bool, quit func(now time.Time) bool) bool {
	if time.Now().UnixNano() < s.port.pause.Load() {
		return false // the cores were found shared a moment ago
	}
	s.port.polling.Add(1)
	defer s.port.polling.Add(-1)
	var start time.Time
	for try := 0; ; try++ {
		if try%goschedEvery == 0 {
			// First of all: what the reader just delivered may have
			// readied a goroutine (a reply's waiter, a call's task).
			goruntime.Gosched()
		}
		if probe() {
			return true
		}
		// Look at the clock now and then only.
		if try%16 == 0 {
			now := time.Now()
			if start.IsZero() {
				start = now
			} else if now.Sub(start) >= s.window || quit(now) {
				return false // silent for long, or done: block
			}
		}
		if try%yieldEvery == yieldEvery-1 {
			t0 := time.Now()
			osYield()
			if now := time.Now(); now.Sub(t0) >= yieldTaken {
				// Another thread had this core meanwhile: the cores are
				// shared, and spinning on takes them from work that the
				// message awaited may depend on.
				if s.port.readers.Load() > 1 {
					s.port.pause.Store(now.Add(sharedPause).UnixNano())
				}
				return false
			}
		}
	}
}

// yieldEvery is how many tries the spinner makes per sched_yield.
const yieldEvery = 4

// goschedEvery is how many tries the spinner makes per runtime.Gosched,
// which lets the process's other goroutines run: a Gosched takes the
// scheduler's lock twice, a try is one read.
const goschedEvery = 4

// yieldTaken is how long a sched_yield must take for the spinner to
// conclude that another thread wanted its core.
const yieldTaken = 20 * time.Microsecond

// sharedPause is how long the readers of a port block at once after one
// of them found the cores shared.
const sharedPause = 10 * time.Millisecond
