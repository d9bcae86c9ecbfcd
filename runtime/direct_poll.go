package runtime

import "sync/atomic"

// ringPoller is a parcelport whose incoming rings a waiting task may read
// itself (parcel.SHM.Poll).
type ringPoller interface{ Poll() bool }

// awaiter is a parcelport whose worker a waiting task progresses itself,
// blocking or polling (parcel.UCX.Await): it takes the reply on its own
// goroutine instead of being woken by the port's progress goroutine.
type awaiter interface{ Await(done func() bool) bool }

// pollGoschedEvery is how often, in looks, a task that reads the rings
// itself while it waits lets the process's other goroutines run.
const pollGoschedEvery = 64

// awaitReady is spinReady for a port whose rings the waiting task reads
// itself: in poll mode it looks at the rings on its own goroutine, and
// delivers what they hold (a reply to it, most likely) without a switch
// to the ring's reader goroutine and back; it lets the other goroutines
// run every pollGoschedEvery looks. It stops as spinReady does: after
// futureSpin, when a task is queued for a lane, or when no reader of the
// port polls. A port that is an awaiter is progressed by the waiting task
// in either mode, for as long as the port says. It reports whether ready
// turned true.
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
	return s.spin(ready, pp, rp.Poll, pollGoschedEvery)
}
