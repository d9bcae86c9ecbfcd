package runtime

import (
	goruntime "runtime"
	"sync/atomic"
	"time"
)

// ringPoller is a parcelport whose incoming rings a waiting task may read
// itself (parcel.SHM.Poll).
type ringPoller interface{ Poll() bool }

// awaiter is a parcelport whose worker a waiting task progresses itself,
// blocking or polling (parcel.UCX.Await): it takes the reply on its own
// goroutine instead of being woken by the port's progress goroutine.
type awaiter interface{ Await(done func() bool) bool }

// How a task that reads the rings itself while it waits spends its looks
// (one look: a Poll, tens of nanoseconds): it lets the process's other
// goroutines run every pollGoschedEvery looks, asks the port whether a
// reader still polls every pollPortEvery, and reads the clock every
// pollClockEvery. A Gosched costs about 150 ns and time.Now over 100 ns
// on some machines (virtual ones): read every 16 looks, as spin does, the
// clock took a fifth of the wait, and a reply that came then waited.
const (
	pollGoschedEvery = 64
	pollPortEvery    = 16
	pollClockEvery   = 128
)

// awaitReady is spinReady for a port whose rings the waiting task reads
// itself: in poll mode it looks at the rings on its own goroutine, and
// delivers what they hold (a reply to it, most likely) without a switch
// to the ring's reader goroutine and back. It stops as spinReady does:
// after futureSpin, when a task is queued for a lane, or when no reader
// of the port polls. A port that is an awaiter is progressed by the
// waiting task in either mode, for as long as the port says. It reports
// whether ready turned true.
func (s *scheduler) awaitReady(ready *atomic.Bool) bool {
	if s == nil || s.rt == nil {
		return false
	}
	if aw, ok := s.rt.port.(awaiter); ok {
		// Until the reply, or a task is queued for a lane.
		return aw.Await(func() bool { return ready.Load() || s.queued.Load() > 0 }) && ready.Load()
	}
	if s.rt.cfg.Progress != ProgressPoll {
		return false
	}
	rp, ok := s.rt.port.(ringPoller)
	if !ok {
		return s.spinReady(ready)
	}
	pp, _ := s.rt.port.(poller)
	var start time.Time
	for try := 0; ; try++ {
		if ready.Load() || (rp.Poll() && ready.Load()) {
			return true
		}
		if s.queued.Load() > 0 {
			return false
		}
		if try%pollPortEvery == 0 && pp != nil && !pp.Polling() {
			return false
		}
		if try%pollClockEvery == pollClockEvery-1 {
			// Not at the first look: most waits end before the clock
			// would be read at all.
			now := time.Now()
			if start.IsZero() {
				start = now
			} else if now.Sub(start) >= futureSpin {
				return false
			}
		}
		if try%pollGoschedEvery == pollGoschedEvery-1 {
			goruntime.Gosched()
		}
	}
}
