package parcel

import "sync/atomic"

// Reading a ring on the caller's goroutine: a task that waits, polling,
// for the reply to a call reads the peers' rings itself (SHM.Poll) rather
// than letting the ring readers run. With one processor per locality
// (tessera run with as many localities as cores), a reader that delivers
// a reply must otherwise be scheduled to read it and then give the
// processor back to the waiting task: two goroutine switches per message,
// about a third of a small round trip's cost on each side.
//
// A ring has one reader at a time: its reader goroutine or one poller,
// whoever holds ringRx.busy. The reader lets go of it while it waits for
// data and after each batch it delivered; a poller takes it only if it is
// free (a poller never waits for it), reads what the ring holds, delivers
// it through the same decoder and handler as the reader would, and lets
// go; once it ended it keeps it. A poller that meets a failure (a ring or frame that fails its
// checks) reports it as the reader would (SHM.ringFailed), which wakes the
// reader to end; a goodbye a poller delivers ends the reader as one it
// read would, once the peer closes its connection.

// ringRx is the reading side of one peer's incoming ring.
type ringRx struct {
	busy    atomic.Bool // held by whoever reads the ring now; by the reader for good once it ended
	in      *ring
	d       *frameDecoder
	deliver func(pc *Parcel, wire int64)
	err     error // the failure a poller reported; guarded by busy
}

// take copies up to avail bytes out of the ring into the decoder and
// delivers the parcels they complete; once the goodbye is delivered it
// tells the writer (byeSeen). The caller holds busy.
func (rx *ringRx) take(p *shmPeer, avail uint64) error {
	b, direct := rx.d.space()
	n := rx.in.get(b, avail)
	if err := rx.d.feed(n, direct, rx.deliver); err != nil {
		return err
	}
	if p.gotBye.Load() {
		// Everything before the goodbye is delivered: the writer's Close
		// may return.
		rx.in.ctl.byeSeen.Store(1)
	}
	return nil
}

// pollRing reads a batch of what p's ring holds if nobody else reads it
// now, and reports whether it took anything.
func (s *SHM) pollRing(p *shmPeer, rx *ringRx) bool {
	// busy first: a reader that ended keeps it, and Close unmaps the
	// ring only once its reader ended.
	if !rx.busy.CompareAndSwap(false, true) {
		return false
	}
	// One batch at most (what the decoder's buffer holds): a peer that
	// keeps writing keeps the reader busy, not the polling task.
	took := false
	if rx.err == nil && !p.gotBye.Load() && !p.closing.Load() && rx.in.pending() {
		avail, err := rx.in.readable()
		if err == nil && avail > 0 {
			took = true
			err = rx.take(p, avail)
		}
		if err != nil {
			took = true
			rx.err = err
			s.ringFailed(p, "read", err)
		}
	}
	rx.busy.Store(false)
	return took
}

// Poll reads, on the calling goroutine, the parcels waiting in the rings
// of this machine's peers whose readers are not reading them now, and
// hands them to the Handler as the readers would. It reports whether it
// took any. It never waits: a ring being read by its reader is left to
// it. The runtime's tasks call it while they wait, polling, for a reply.
func (s *SHM) Poll() bool {
	v := s.view.Load()
	if v == nil || s.closed.Load() {
		return false
	}
	s.polls.Add(1)
	took := false
	for _, p := range *v {
		if p == nil {
			continue
		}
		if rx := p.rx.Load(); rx != nil && s.pollRing(p, rx) {
			took = true
		}
	}
	return took
}
