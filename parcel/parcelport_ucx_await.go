//go:build ucx

package parcel

import (
	goruntime "runtime"
	"time"
)

// Progress on the caller's goroutine: a task that waits for a reply
// progresses the UCX worker itself (UCX.Await) instead of leaving it to
// the progress goroutine, which would take the reply and then wake the
// task: one goroutine switch less on each round trip, as SHM.Poll saves
// in poll mode. While any caller polls, the progress goroutine steps
// aside (it parks until the last caller leaves), so one goroutine of the
// process spins, not two; the worker is not armed then, so senders ring
// no doorbell.
//
// Whoever progresses the worker drains its events under ucxWorker.mu;
// the parcels due go to one queue (UCX.dq) in order, and one goroutine at
// a time (whoever holds UCX.dmu) hands them to the Handler, so parcels of
// one peer keep their order whoever took them from UCX.

// ucxAwaitGoschedEvery is how often, in looks, a polling caller lets the
// process's other goroutines run.
const ucxAwaitGoschedEvery = 64

// Await progresses the worker on the calling goroutine until done reports
// true, and reports whether it did. It gives up, false, after the spin of
// the port's progress goroutine (50 µs; at once for a port without one),
// when a sched_yield shows that the cores are shared (and does not start
// within ucxSharedFor of one, its own or the progress goroutine's, that
// showed that, nor while operations are in flight), or when the port
// closes.
// done is called between looks and must not block. The runtime's tasks
// call it while they wait for a reply.
func (u *UCX) Await(done func() bool) bool {
	if done() {
		return true
	}
	window := u.spin
	if window <= 0 || u.closed.Load() || u.sharedNow() || u.busy.Load() {
		// A sched_yield showed the cores shared lately: a spinning
		// caller would take one from the process it waits for. Or
		// operations are in flight (rendezvous of bulk data, whose
		// replies take far longer than a spin): the progress
		// goroutine polls for them anyway.
		return false
	}
	u.callers.Add(1)
	defer u.leave()
	var start time.Time
	for try := 1; ; try++ {
		u.poll()
		if done() {
			return true
		}
		if u.closed.Load() {
			return false
		}
		if try%16 == 1 {
			now := time.Now()
			if start.IsZero() {
				start = now
			} else if now.Sub(start) >= window {
				return false
			}
		}
		if try%ucxAwaitGoschedEvery == 0 {
			goruntime.Gosched()
		}
		if try%ucxYieldEvery == 0 {
			// As the progress goroutine: stop once another thread of
			// the machine wanted the core.
			t0 := time.Now()
			osYield()
			if time.Since(t0) >= yieldTaken {
				u.shared.Store(t0.UnixNano())
				return false
			}
		}
	}
}

// ucxSharedFor is how long after a sched_yield showed the cores shared
// callers wait without spinning, and the progress goroutine back from
// stepping aside does not spin: a yield of a later spin may show the
// cores free again, but none comes while nobody spins.
const ucxSharedFor = time.Millisecond

// sharedNow reports whether a poller's sched_yield showed the cores
// shared within ucxSharedFor.
func (u *UCX) sharedNow() bool {
	at := u.shared.Load()
	return at != 0 && time.Now().UnixNano()-at < int64(ucxSharedFor)
}

// leave ends a caller's polling; the last one wakes the progress
// goroutine if it stepped aside.
func (u *UCX) leave() {
	if u.callers.Add(-1) == 0 && u.benched.Load() {
		select {
		case u.unbench <- struct{}{}:
		default:
		}
	}
}

// stepAside parks the progress goroutine while callers poll the worker,
// until the last leaves or the port closes (whose flushes need it).
// It reports whether it parked.
func (u *UCX) stepAside() bool {
	if u.callers.Load() == 0 || u.closed.Load() {
		return false
	}
	u.benched.Store(true)
	// After the flag: a caller that left before it was set is seen here,
	// one that leaves after it sees the flag and wakes the goroutine.
	if u.callers.Load() > 0 {
		select {
		case <-u.unbench:
		case <-u.done:
		}
	}
	u.benched.Store(false)
	return true
}

// poll makes one round of progress on a caller's goroutine if nobody else
// progresses the worker now, and reports whether it took anything.
func (u *UCX) poll() bool {
	if u.stop.Load() || !u.w.mu.TryLock() {
		return false
	}
	st := u.steps.Get().(*ucxStep)
	n := u.roundLocked(st)
	u.finish(st)
	u.steps.Put(st)
	return n
}

// roundLocked progresses the worker once and drains its events into st
// and the delivery queue, then lets the worker go; it reports whether
// anything happened. Called with w.mu held; returns without it.
func (u *UCX) roundLocked(st *ucxStep) bool {
	did := u.w.progress()
	n := 0
	err := u.w.drain(func(ev *ucxEvent) { n++; u.event(ev, st) })
	u.closeDown()
	st.busy = len(u.ops) > 0
	if st.busy != u.busy.Load() {
		u.busy.Store(st.busy)
	}
	u.w.mu.Unlock()
	if err != nil {
		u.cfg.Logger.Error("parcel: UCX progress", "locality", u.cfg.Locality, "err", err)
	}
	return did || n > 0
}

// deliverQueued hands the queued parcels to the Handler in order, unless
// another goroutine does so now: that one then delivers these too.
func (u *UCX) deliverQueued() {
	for {
		if !u.dmu.TryLock() {
			return
		}
		u.w.mu.Lock()
		batch := u.dq
		u.dq = u.dqSpare[:0]
		u.dqSpare = nil
		u.w.mu.Unlock()
		for _, in := range batch {
			in.peer.ctr.parcelsRecv.Add(1)
			in.peer.ctr.bytesRecv.Add(uint64(in.wire))
			if in.p.Header.Kind != KindHeartbeat && !u.closed.Load() {
				if u.recycler == nil {
					u.cfg.Handler.Receive(in.p)
				} else if !u.recycler.ReceiveOnce(in.p) {
					// Its memory takes the peer's next parcel. The
					// decoder is used under the worker's lock.
					u.w.mu.Lock()
					in.peer.dec.reuse(in.p)
					u.w.mu.Unlock()
				}
			}
			in.peer.delivered.Store(in.seq + 1)
		}
		clear(batch)
		u.w.mu.Lock()
		if u.dqSpare == nil {
			u.dqSpare = batch[:0]
		}
		u.w.mu.Unlock()
		u.dmu.Unlock()
		// A parcel queued while this goroutine delivered, by one that
		// found dmu taken, is this goroutine's to deliver: looked for
		// after letting dmu go, so none is missed.
		u.w.mu.Lock()
		more := len(u.dq) > 0
		u.w.mu.Unlock()
		if !more {
			return
		}
	}
}
