package runtime

import "sync/atomic"

// ringPoller is a parcelport whose incoming rings a waiting task may read
// itself (parcel.SHM.Poll).
type ringPoller interface{ Poll() bool }

// pollGoschedEvery is how often, in looks, a task that reads the rings
// itself while it waits lets the process's other goroutines run.
const pollGoschedEvery = 64

// awaitReady is spinReady for a port whose rings the waiting task reads
// itself: in poll mode it looks at the rings on its own goroutine, and
// delivers what they hold (a reply to it, most likely) without a switch
// to the ring's reader goroutine and back; it lets the other goroutines
// run every pollGoschedEvery looks. It stops as spinReady does: after
// futureSpin, when a task is queued for a lane, or when no reader of the
// port polls. It reports whether ready turned true.
func (s *scheduler) awaitReady(ready *atomic.Bool) bool {
	if s == nil || s.rt == nil || s.rt.cfg.Progress != ProgressPoll {
		return false
	}
	rp, ok := s.rt.port.(ringPoller)
	if !ok {
		return s.spinReady(ready)
	}
	pp, _ := s.rt.port.(poller)
	return s.spin(ready, pp, rp.Poll, pollGoschedEvery)
}
