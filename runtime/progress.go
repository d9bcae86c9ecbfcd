package runtime

import (
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"time"
)

// Progress is how a locality waits for messages: by blocking until the
// system wakes it, or by polling. The zero value blocks; Main takes it
// from the environment variable TESSERA_PROGRESS (set by `tessera run
// --progress`) first.
//
// Blocking costs no processor time while nothing arrives, but each message
// that finds the locality asleep pays a wake-up: on a machine whose idle
// cores halt (a virtual machine, say), tens of microseconds. Polling, as
// MPI libraries do, keeps the locality awake while it waits for a message:
// its connection readers retry non-blocking reads, and a task waiting on a
// future retries for a short while before it gives its lane back. A
// polling locality keeps a core busy while it waits (it yields the core to
// any other runnable thread between tries, and goes back to blocking after
// a millisecond of silence on a connection).
type Progress uint8

const (
	ProgressDefault Progress = iota // ProgressBlock (Main: TESSERA_PROGRESS first)
	ProgressBlock                   // wait in the system's poller
	ProgressPoll                    // busy-poll, then block after 1 ms of silence
)

// The names of the progress modes in TESSERA_PROGRESS and `tessera run
// --progress`.
const (
	ProgressNameBlock = "block"
	ProgressNamePoll  = "poll"
)

// pollWindow is how long a polling connection reader keeps polling
// without data before it blocks; the next message then wakes it as in the
// blocking mode, and it polls again.
const pollWindow = time.Millisecond

// futureSpin bounds how long, in poll mode, a task waiting on a future
// retries before it gives its lane back and blocks.
const futureSpin = 50 * time.Microsecond

func (p Progress) String() string {
	switch p {
	case ProgressDefault:
		return "default"
	case ProgressBlock:
		return ProgressNameBlock
	case ProgressPoll:
		return ProgressNamePoll
	}
	return fmt.Sprintf("Progress(%d)", uint8(p))
}

// parseProgress returns the mode named s: "block" or "poll".
func parseProgress(s string) (Progress, error) {
	switch s {
	case ProgressNameBlock:
		return ProgressBlock, nil
	case ProgressNamePoll:
		return ProgressPoll, nil
	}
	return 0, fmt.Errorf("progress mode %q: want %s or %s", s, ProgressNameBlock, ProgressNamePoll)
}

// pollFor is the TCP parcelport's PollFor for mode p.
func (p Progress) pollFor() time.Duration {
	if p == ProgressPoll {
		return pollWindow
	}
	return 0
}

// poller is a parcelport whose readers may poll (parcel.TCP).
type poller interface{ Polling() bool }

// spinReady waits, in poll mode, up to futureSpin for ready to turn true
// while the task keeps its lane, letting the other goroutines (the
// connection readers among them) run between looks. It stops early when a
// task is queued for a lane, and when no connection reader polls: a
// message would then arrive through the network poller, which the Go
// scheduler does not consult while goroutines keep yielding. It reports
// whether ready turned true.
func (s *scheduler) spinReady(ready *atomic.Bool) bool {
	if s == nil || s.rt == nil || s.rt.cfg.Progress != ProgressPoll {
		return false
	}
	pp, ok := s.rt.port.(poller)
	if !ok {
		return false
	}
	return s.spin(ready, pp, nil, 1)
}

// spin is the loop of spinReady and awaitReady: it looks at ready, and
// calls look first when there is one; it lets the other goroutines run
// every goschedEvery looks, and gives up after futureSpin, when a task is
// queued for a lane, or when pp (if any) says no reader polls.
func (s *scheduler) spin(ready *atomic.Bool, pp poller, look func() bool, goschedEvery int) bool {
	var start time.Time
	for try := 0; ; try++ {
		if ready.Load() || (look != nil && look() && ready.Load()) {
			return true
		}
		if s.queued.Load() > 0 || (pp != nil && !pp.Polling()) {
			return false
		}
		if try%16 == 0 {
			now := time.Now()
			if start.IsZero() {
				start = now
			} else if now.Sub(start) >= futureSpin {
				return false
			}
		}
		if try%goschedEvery == goschedEvery-1 {
			goruntime.Gosched()
		}
	}
}
