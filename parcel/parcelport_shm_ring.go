package parcel

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"time"
)

// The SHM port's use of its rings: Send writing frames into a peer's ring,
// the reader taking them out, goodbyes and failures.

// publishEvery is how many bytes a writer copies into a ring before it
// publishes them even though its frame is not complete, so that the reader
// copies a large chunk out while the writer copies the rest in.
const publishEvery = 64 << 10

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// waiter is how the port's ring reader of p waits (ringWait): asleep, on
// p's doorbell.
func (s *SHM) waiter(p *shmPeer) ringWait {
	park := func() {
		select {
		case <-p.bell:
		case <-p.down:
		case <-p.tcp.down:
		case <-s.stop:
		}
	}
	pace := new(yieldPace) // the reader's, across its waits
	if s.cfg.PollFor > 0 {
		return ringWait{spin: s.cfg.PollFor, poll: true, polling: &s.polling, park: park, pace: pace, polls: &s.polls}
	}
	return ringWait{spin: max(s.cfg.SpinFor, 0), park: park, pace: pace}
}

// publish makes what was written into p's ring visible and, if p's reader
// sleeps, rings its doorbell: a control parcel on the TCP connection,
// whose reader waits in Go's network poller, without a processor, and
// wakes the ring reader (shmHandler.Receive). The caller holds p.wmu.
func (s *SHM) publish(p *shmPeer) {
	if p.out.publish() {
		s.ringBell(p)
	}
}

// ringBell sends p's reader a wake-up. It fails only when the connection
// is down, which the reader learns itself.
func (s *SHM) ringBell(p *shmPeer) { s.control(p, shmBellVerb, "", nil) }

// ringUsable returns nil while parcels may be written into p's ring.
func (s *SHM) ringUsable(p *shmPeer) error {
	if s.closed.Load() || p.abort.Load() {
		return &PeerError{p.id, "send", ErrClosed}
	}
	if err := p.usable(); err != nil {
		return err
	}
	return p.tcp.usable()
}

// smallSend reports whether pc passes checkSend's checks by a bound that
// costs no walk of its header: a known kind the port does not keep for
// itself, and a frame whose bound putFrame uses (which holds the encoded
// header) within publishEvery and maxFrame. A parcel it does not clear
// goes through checkSend.
func smallSend(pc *Parcel, maxFrame int64) bool {
	h := &pc.Header
	if h.Kind < KindCall || h.Kind >= KindHeartbeat {
		return false
	}
	need := FrameHeadLen + headerMax(h, len(pc.Chunks))
	for _, c := range pc.Chunks {
		need += len(c)
	}
	return need <= publishEvery && int64(need) <= maxFrame
}

// sendRing writes pc into p's ring, waiting for room while the ring is
// full. It returns once the frame is in the ring. As TCP's Send, it looks
// at ctx only when it cannot write at once.
func (s *SHM) sendRing(ctx context.Context, p *shmPeer, pc *Parcel) error {
	if !smallSend(pc, s.cfg.MaxFrame) {
		if err := checkSend(pc, s.cfg.MaxFrame); err != nil {
			return &PeerError{p.id, "send", err}
		}
	}
	p.wmu.Lock()
	if err := s.ringUsable(p); err != nil {
		p.wmu.Unlock()
		return err
	}
	// A small frame that fits is written in place, at once.
	wire, err := p.out.putFrame(&pc.Header, pc.Chunks, publishEvery)
	if err != nil {
		err = s.ringFailed(p, "write", err)
		p.wmu.Unlock()
		return err
	}
	if wire > 0 {
		s.publish(p)
		p.wmu.Unlock()
		p.ctr.parcelsSent.Add(1)
		p.ctr.bytesSent.Add(uint64(wire))
		p.ctr.writes.Add(1)
		return nil
	}
	defer p.wmu.Unlock()
	return s.sendPieces(ctx, p, pc)
}

// sendPieces is sendRing for a frame that is not written in place: its
// head through p.scratch, then each chunk, piece by piece as the ring has
// room. The caller holds p.wmu.
func (s *SHM) sendPieces(ctx context.Context, p *shmPeer, pc *Parcel) error {
	if err := ctx.Err(); err != nil {
		return &PeerError{p.id, "send", context.Cause(ctx)}
	}
	head, err := appendFrameHead(p.scratch[:0], &pc.Header, pc.Chunks)
	if err != nil {
		return &PeerError{p.id, "send", err}
	}
	p.scratch = head
	wire := len(head)
	if err := s.ringWrite(p, head); err != nil {
		return err
	}
	for _, c := range pc.Chunks {
		if err := s.ringWrite(p, c); err != nil {
			return err
		}
		wire += len(c)
	}
	s.publish(p)
	p.ctr.parcelsSent.Add(1)
	p.ctr.bytesSent.Add(uint64(wire))
	p.ctr.writes.Add(1)
	return nil
}

// ringWrite copies b into p's ring, publishing as it goes and waiting for
// room when the ring is full. The caller holds p.wmu.
func (s *SHM) ringWrite(p *shmPeer, b []byte) error {
	out := p.out
	var werr error
	ready := func() bool {
		free, err := out.writable()
		if err != nil {
			werr = err
			return true
		}
		return free > 0
	}
	stop := func() bool { return p.abort.Load() || isClosed(p.down) || isClosed(p.tcp.down) }
	for len(b) > 0 {
		free, err := out.writable()
		if err != nil {
			return s.ringFailed(p, "write", err)
		}
		if free == 0 {
			s.publish(p)
			s.writeWaiter().wait(&out.ctl.spaceSeq, &out.ctl.writerSleeps, ready, stop)
			if werr != nil {
				return s.ringFailed(p, "write", werr)
			}
			if stop() {
				if err := s.ringUsable(p); err != nil {
					return err
				}
				return &PeerError{p.id, "send", ErrClosed}
			}
			continue
		}
		n := out.put(b, free)
		b = b[n:]
		if out.pos-out.pub >= publishEvery {
			s.publish(p)
		}
	}
	return nil
}

// ringFailed marks p down for a ring that failed its checks, closes its
// TCP connection and returns the error, which names p and wraps
// ErrPeerDown.
func (s *SHM) ringFailed(p *shmPeer, op string, err error) error {
	e := &PeerError{p.id, op, fmt.Errorf("%w: %w", ErrPeerDown, err)}
	if !p.closing.Load() && !p.gotBye.Load() {
		s.cfg.Logger.Error("parcel: shared-memory ring failed its checks", "locality", s.cfg.Locality, "peer", p.id, "err", err)
	}
	p.markDown(e, p.wakeWriter, s.cfg.Handler.PeerDown)
	// After markDown: the TCP port reports the loss to shmHandler, which
	// finds p down already.
	s.tcp.fail(p.tcp, e)
	return p.downErr
}

// readRing is the reader of p's incoming ring: it feeds what it takes out
// to a frame decoder and delivers the parcels, until the peer says
// goodbye in the ring, the ring fails its checks, or the TCP connection
// is gone and the ring is drained. It shares the ring with Poll
// (parcelport_shm_poll.go): whoever holds rx.busy reads.
func (s *SHM) readRing(p *shmPeer, in *ring) {
	rx := &ringRx{in: in, d: newFrameDecoder(s.cfg.MaxFrame, s.cfg.Handler.Buffer)}
	rx.busy.Store(true) // the reader's until it first waits
	d := rx.d
	rx.deliver = func(pc *Parcel, wire int64) { p.received(pc, wire, s.cfg.Handler) }
	if r, ok := s.cfg.Handler.(Recycler); ok {
		// The handler says which parcels it keeps: the others' memory
		// takes the next parcel, which then costs no allocation.
		once := &onceHandler{Recycler: r}
		d.recycle = true
		rx.deliver = func(pc *Parcel, wire int64) {
			once.kept = false
			if !p.received(pc, wire, once) || !once.kept {
				d.reuse(pc)
			}
		}
	}
	p.rx.Store(rx)
	w := s.waiter(p)
	stop := func() bool { return isClosed(p.tcp.down) || isClosed(p.down) || isClosed(s.stop) }
	// Pollers move the reader's position while it waits: its waits look
	// at the positions in the ring's control instead.
	ready := in.pending
	pk := &ringPark{in: in, ready: ready, stop: stop, wake: make(chan bool, 1)}
	s.progress.readers.Add(1)
	defer s.progress.readers.Add(-1)
	var err error
	for held := true; ; held = false {
		if !held && !rx.busy.CompareAndSwap(false, true) {
			goruntime.Gosched() // a poller reads the ring now: let it
			continue
		}
		if rx.err != nil || p.gotBye.Load() {
			break // a poller reported a failure, or delivered the goodbye
		}
		var avail uint64
		if avail, err = in.readable(); err != nil {
			break
		}
		if avail == 0 {
			if !stop() {
				rx.busy.Store(false)
				if s.progress.readers.Load() > 1 {
					s.waitShared(pk, w) // parcelport_shm_progress.go
				} else {
					w.wait(&in.ctl.dataSeq, &in.ctl.readerSleeps, ready, stop)
				}
				continue
			}
			// Gone: one last look, for what the peer wrote before.
			if avail, err = in.readable(); err != nil || avail == 0 {
				break
			}
		}
		if err = rx.take(p, avail); err != nil || p.gotBye.Load() {
			break
		}
		empty := in.pos == in.ctl.head.Load()
		rx.busy.Store(false)
		if empty {
			// As TCP's reader does: let the goroutines this parcel woke
			// run before looking at the ring again.
			goruntime.Gosched()
		}
	}
	// The reader keeps busy from here on: pollers leave the ring alone,
	// and Close may unmap it once the reader returned.
	s.readEnded(p, d, err)
}

// onceHandler hands the parcels a ring reader delivers to a Recycler's
// ReceiveOnce and notes whether it kept the last one.
type onceHandler struct {
	Recycler
	kept bool
}

func (o *onceHandler) Receive(p *Parcel) { o.kept = o.ReceiveOnce(p) }

// readEnded marks p down once its ring reader stopped: quietly after a
// goodbye or while closing, else reporting why.
func (s *SHM) readEnded(p *shmPeer, d *frameDecoder, err error) {
	quiet := func() { p.markDown(&PeerError{p.id, "send", ErrClosed}, p.wakeWriter, s.cfg.Handler.PeerDown) }
	switch {
	case p.gotBye.Load() || p.closing.Load() || isClosed(s.stop):
		quiet()
	case err != nil:
		if errors.Is(err, ErrFrameTooLarge) {
			s.cfg.Logger.Error("parcel: refused oversized frame", "locality", s.cfg.Locality, "peer", p.id, "err", err)
		}
		s.ringFailed(p, "read", err)
	case isClosed(p.tcp.down):
		terr := p.tcp.downErr
		if !errors.Is(terr, ErrPeerDown) {
			p.gotBye.Store(true) // it said goodbye on TCP: it left
			quiet()
			return
		}
		if d.midFrame() {
			terr = fmt.Errorf("%w (its shared-memory ring ends inside a frame: %v)", terr, d.end())
		}
		p.markDown(terr, p.wakeWriter, s.cfg.Handler.PeerDown)
	default:
		quiet() // down already
	}
}

// sayGoodbye writes the goodbye into p's ring, after the frame being
// written, if any, and waits up to a second for the peer to have
// delivered everything before it (the reader's byeSeen). A writer that
// cannot finish within a second (the peer does not read) is stopped where
// it is, its Send failing with ErrClosed, and no goodbye follows: the TCP
// goodbye then tells the peer.
func (s *SHM) sayGoodbye(p *shmPeer) {
	timer := time.AfterFunc(time.Second, func() {
		p.abort.Store(true)
		p.wakeWriter()
	})
	defer timer.Stop()
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.abort.Load() || p.gotBye.Load() || isClosed(p.down) || isClosed(p.tcp.down) {
		return
	}
	bye := Header{Kind: KindHeartbeat, Action: byeVerb, Source: s.cfg.Locality, Dest: p.id}
	head, err := appendFrameHead(p.scratch[:0], &bye, nil)
	if err != nil {
		return
	}
	p.scratch = head
	if s.ringWrite(p, head) != nil {
		return
	}
	s.publish(p)
	p.ctr.bytesSent.Add(uint64(len(head)))
	p.ctr.writes.Add(1)
	// As TCP's Close drains its connections: return once the peer has
	// delivered what was sent before the goodbye, or after a second.
	deadline := time.Now().Add(time.Second)
	for pause := time.Microsecond; p.out.ctl.byeSeen.Load() == 0; pause = min(2*pause, time.Millisecond) {
		if time.Now().After(deadline) || isClosed(p.tcp.down) {
			return
		}
		time.Sleep(pause)
	}
}

// writeWaiter is how a writer waits for room: as a reader that does not
// poll, whatever the port does — room comes as fast as the reader copies
// out, and a writer that yields to it at every look slows it down.
func (s *SHM) writeWaiter() ringWait {
	return ringWait{spin: max(s.cfg.SpinFor, 0)}
}
