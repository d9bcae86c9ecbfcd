//go:build ucx

package parcel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	goruntime "runtime"
	"time"
	"unsafe"
)

// ucxSpin is how long the progress goroutine of a blocking port (PollFor
// 0) polls the worker after the last event before it blocks: a reply that
// comes that soon is then taken without a wake-up. Measured on 2 cores,
// the 64-byte round trip over UCX_TLS=sm,self took 51 µs blocking at once
// and 15 µs with this spin.
const ucxSpin = 50 * time.Microsecond

// ucxYieldEvery is how many idle rounds the polling progress goroutine
// makes between two sched_yields: each costs a trip through the kernel's
// scheduler, and the goroutine lets the process's others run every round.
const ucxYieldEvery = 32

// ucxBusyWait bounds a wait on the event descriptor while operations are
// in flight and the cores are shared (so the goroutine does not spin).
const ucxBusyWait = 200 * time.Microsecond

// The progress goroutine of the UCX port and what it receives.

// ucxStep is what one round of progress leaves to do once the worker is
// let go: parcels to hand over, peers to fail, operations to answer.
type ucxStep struct {
	fail   []ucxFailure
	answer []ucxAnswer
	busy   bool // operations are in flight
	queued bool // parcels were queued for the Handler
}

type ucxFailure struct {
	peer *ucxPeer
	err  error
}

type ucxAnswer struct {
	ch  chan error
	err error
}

// progressLoop progresses the worker until Close: it drains the events of
// each round, and when a round did nothing it polls on (PollFor) or arms
// the worker and blocks on its event descriptor in Go's poller.
func (u *UCX) progressLoop() {
	var st ucxStep
	rc, rcErr := u.efd.SyscallConn()
	idleSince, idleFor := time.Time{}, time.Duration(0)
	gaveUp, tries := false, 0
	for !u.stop.Load() {
		if u.stepAside() {
			// A caller that found the cores shared stopped: then do
			// not spin either.
			idleSince, gaveUp, tries = time.Time{}, u.sharedNow(), 0
			continue
		}
		u.w.mu.Lock()
		active := u.roundLocked(&st)
		busy, delivered := st.busy, st.queued
		u.finish(&st)
		if active {
			idleSince, gaveUp, tries = time.Time{}, false, 0
			if delivered && !busy {
				// Let a task the handler woke run now, on this
				// processor, rather than after another round; not
				// while operations are in flight (bulk data), whose
				// progress comes first.
				goruntime.Gosched()
			}
			continue
		}
		if idleSince.IsZero() || tries%16 == 0 {
			// The clock is read every 16 idle rounds, not each one.
			now := time.Now()
			if idleSince.IsZero() {
				idleSince = now
			}
			idleFor = now.Sub(idleSince)
		}
		if !gaveUp && (busy || idleFor < max(u.cfg.PollFor, u.spin)) {
			// Poll, as the TCP port's readers do (tcp_poll_unix.go):
			// let the process's goroutines run between tries, and the
			// machine's processes every few; stop once a sched_yield
			// shows that another thread wanted the core.
			u.polling.Store(true)
			goruntime.Gosched()
			if tries++; tries%ucxYieldEvery == 0 {
				t0 := time.Now()
				osYield()
				gaveUp = time.Since(t0) >= yieldTaken
				if at := int64(0); gaveUp || u.shared.Load() != 0 {
					if gaveUp {
						at = t0.UnixNano()
					}
					u.shared.Store(at)
				}
			}
			continue
		}
		u.polling.Store(false)
		u.w.mu.Lock()
		armed, err := u.w.arm()
		// Set with the arm, under the lock: a sender that posts after
		// it sees it and wakes the goroutine, which must progress what
		// UCX took but has not sent yet.
		u.sleeping.Store(armed && err == nil)
		u.w.mu.Unlock()
		if err != nil || rcErr != nil {
			// Cannot sleep on the descriptor: poll gently instead.
			time.Sleep(50 * time.Microsecond)
			continue
		}
		if !armed || u.stop.Load() {
			u.sleeping.Store(false)
			continue
		}
		if busy {
			// Operations in flight may need progress that no event
			// announces (UCX's tcp rendezvous does): wake up soon.
			u.efd.SetReadDeadline(time.Now().Add(ucxBusyWait))
		}
		// Wait until the descriptor is readable, judged by its level.
		// RawConn.Read first forgets any readiness Go's poller noted
		// (it resets the descriptor's state, as before every read),
		// then calls the function, and parks only when it says false.
		// The poller watches the descriptor edge-triggered and reports
		// an edge once: one that came after the arm but before Read
		// (a reply arriving while this goroutine got here) was thus
		// dropped, and a function that said false without looking
		// parked until some later, unrelated event (a stall of up to
		// a heartbeat, or for ever). Asking the kernel for the level
		// after the reset closes that window: an edge before the reset
		// shows in the level, one after it wakes the park.
		rc.Read(readable)
		u.sleeping.Store(false)
		if busy {
			u.efd.SetReadDeadline(time.Time{})
		}
		idleSince, gaveUp, tries = time.Time{}, false, 0
	}
	u.polling.Store(false)
}

// finish does what a round left to do, without the worker's lock.
func (u *UCX) finish(st *ucxStep) {
	for _, a := range st.answer {
		a.ch <- a.err
	}
	if st.queued {
		st.queued = false
		u.deliverQueued()
	}
	for _, f := range st.fail {
		u.cfg.Logger.Warn("parcel: bad UCX message", "locality", u.cfg.Locality, "peer", f.peer.id, "err", f.err)
		if tp, err := u.tcp.peer(f.peer.id); err == nil {
			u.tcp.fail(tp, &PeerError{f.peer.id, "read", fmt.Errorf("%w: %w", ErrPeerDown, f.err)})
		}
	}
	clear(st.answer)
	clear(st.fail)
	st.answer, st.fail = st.answer[:0], st.fail[:0]
}

// closeDown force-closes the endpoints of peers the TCP side found down or
// gone, so that what is in flight to them ends. w.mu held.
func (u *UCX) closeDown() {
	if !u.downs.Load() || !u.downs.Swap(false) {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, p := range u.peers {
		if p.ep == nil || p.epClosed {
			continue
		}
		tp, err := u.tcp.peer(p.id)
		if err == nil {
			select {
			case <-tp.down:
			default:
				continue
			}
		}
		p.epClosed = true
		id := u.nextID
		u.nextID++
		if done, _ := u.w.closeEndpoint(p.ep, true, id); !done {
			u.ops[id] = &ucxOp{done: make(chan error, 1)}
		}
	}
}

// event takes one event of the worker. w.mu held.
func (u *UCX) event(ev *ucxEvent, st *ucxStep) {
	switch ev.kind {
	case ucxEvDone:
		op := u.ops[ev.id]
		if op == nil {
			return
		}
		delete(u.ops, ev.id)
		err := ucxErr("operation", ev.status)
		if op.iov != nil {
			op.iov.free()
		}
		if op.cmem != nil {
			freeC(op.cmem)
		}
		if op.in != nil {
			u.received(op.in, err, st)
			return
		}
		st.answer = append(st.answer, ucxAnswer{op.done, err})
	case ucxEvEPError:
		if p := u.peer(uint32(ev.id)); p != nil {
			p.broken = ucxErr("endpoint", ev.status)
		}
	case ucxEvAM:
		u.am(ev, st)
	}
}

// am takes an active message: it checks the sender and its token, decodes
// the frame head, and either copies the eager data into the chunks or
// starts the rendezvous receive into them. w.mu held.
func (u *UCX) am(ev *ucxEvent, st *ucxStep) {
	// Data dropped: an eager message's memory goes back; a rendezvous
	// ends, and its sender completes.
	release := func() { u.w.release(ev.data) }
	if len(ev.hdr) < ucxPrefix {
		u.cfg.Logger.Warn("parcel: UCX message without a Tessera header dropped", "locality", u.cfg.Locality, "bytes", len(ev.hdr))
		release()
		return
	}
	src := binary.LittleEndian.Uint32(ev.hdr)
	flags := binary.LittleEndian.Uint32(ev.hdr[4:])
	seq := binary.LittleEndian.Uint64(ev.hdr[8:])
	p := u.peer(src)
	if p == nil || !bytes.Equal(ev.hdr[16:32], p.recvTok[:]) {
		u.cfg.Logger.Warn("parcel: UCX message with a wrong token dropped", "locality", u.cfg.Locality, "claimed peer", src)
		release()
		return
	}
	if p.failed {
		release()
		return
	}
	bad := func(err error) {
		p.failed = true
		st.fail = append(st.fail, ucxFailure{p, err})
	}
	if seq < p.next || p.parked[seq] != nil {
		release()
		bad(fmt.Errorf("message %d came twice", seq))
		return
	}
	if p.dec == nil {
		p.dec = newFrameDecoder(u.cfg.MaxFrame, u.cfg.Handler.Buffer)
		p.dec.recycle = u.recycler != nil
	}
	var (
		pc     *Parcel
		wire   int64
		chunks [][]byte
		whole  []byte
		room   [4][]byte // the chunks of most parcels, without an allocation
	)
	if flags&ucxInlined != 0 {
		// The data must be the frame's chunks: checked before the
		// decoder takes memory for them.
		if f := ev.hdr[ucxPrefix:]; len(f) >= FrameHeadLen {
			body, hlen := binary.LittleEndian.Uint64(f), uint64(binary.LittleEndian.Uint32(f[8:]))
			err := checkFrameHead(body, hlen, u.cfg.MaxFrame)
			if err == nil && body-hlen != uint64(ev.len) {
				err = &FrameError{"frame length", fmt.Errorf("body of %d bytes with a header of %d, %d bytes of data sent", body, hlen, ev.len)}
			}
			if err != nil {
				release()
				bad(err)
				return
			}
		}
		var err error
		if pc, chunks, err = ucxHead(p.dec, ev.hdr[ucxPrefix:], room[:0]); err != nil {
			release()
			bad(err)
			return
		}
		wire = int64(len(ev.hdr) - ucxPrefix + ev.len)
		var total int
		for _, c := range chunks {
			total += len(c)
		}
		if total != ev.len {
			release()
			bad(&FrameError{"chunk 0", fmt.Errorf("%d bytes of chunks declared, %d sent", total, ev.len)})
			return
		}
	} else if ev.rndv {
		if int64(ev.len) > u.cfg.MaxFrame+FrameHeadLen {
			release()
			bad(&FrameError{"frame length", fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, ev.len, u.cfg.MaxFrame)})
			return
		}
		whole = make([]byte, ev.len)
		chunks = [][]byte{whole}
	}
	if !ev.rndv {
		data := ev.copied
		if data == nil {
			data = cView(ev.data, ev.len)
		}
		var err error
		if flags&ucxInlined != 0 {
			for _, c := range chunks {
				data = data[copy(c, data):]
			}
		} else {
			pc, wire, err = ucxWhole(p.dec, data)
		}
		u.w.release(ev.data)
		if err == nil && seq == p.next && len(p.parked) == 0 {
			// In turn, and nothing parked: due now, without parking.
			p.next++
			u.dq = append(u.dq, ucxDue{p, seq, pc, wire})
			st.queued = true
			return
		}
		in := &ucxIn{peer: p, seq: seq, p: pc, wire: wire}
		p.parked[seq] = in
		u.received(in, err, st)
		return
	}
	in := &ucxIn{peer: p, seq: seq, p: pc, wire: wire, whole: whole}
	p.parked[seq] = in
	// Always an IOV array: a rendezvous over UCX's shared-memory
	// transports into one contiguous buffer streamed at about two thirds
	// of the rate of the same buffer described as an IOV (8 MiB calls,
	// UCX_TLS=sm,self, alternating runs).
	v := newUCXIOV(chunks, false)
	id := u.nextID
	u.nextID++
	done, err := u.w.recv(ev.data, v, id)
	if !done {
		u.ops[id] = &ucxOp{iov: v, in: in}
		return
	}
	v.free()
	u.received(in, err, st)
}

// received marks in arrived (or failed, err) and queues what is now due
// of its peer in order. w.mu held.
func (u *UCX) received(in *ucxIn, err error, st *ucxStep) {
	p := in.peer
	if err == nil && in.whole != nil {
		in.p, in.wire, err = ucxWhole(p.dec, in.whole)
		in.whole = nil
	}
	if err != nil {
		if !p.failed {
			p.failed = true
			st.fail = append(st.fail, ucxFailure{p, err})
		}
		return
	}
	in.ready = true
	for {
		next := p.parked[p.next]
		if next == nil || !next.ready {
			return
		}
		delete(p.parked, p.next)
		p.next++
		u.dq = append(u.dq, ucxDue{p, next.seq, next.p, next.wire})
		st.queued = true
	}
}

// ucxHead feeds a frame's prefix and header to d and returns the parcel
// with its chunks' memory (from Handler.Buffer where it gives some),
// appended to chunks, which the AM's data is then to fill; d is left
// between frames.
func ucxHead(d *frameDecoder, b []byte, chunks [][]byte) (*Parcel, [][]byte, error) {
	for {
		sp, direct := d.space()
		n := 0
		if direct {
			// The header is in; this is a chunk's memory: claim it whole.
			chunks = append(chunks, sp)
			n = len(sp)
		} else {
			if len(b) == 0 {
				return nil, nil, &FrameError{"header", errors.New("the AM header ends inside the frame's header")}
			}
			n = copy(sp, b)
			b = b[n:]
		}
		d.advance(n, direct)
		p, _, err := d.next()
		if err != nil {
			return nil, nil, err
		}
		if p != nil {
			if len(b) != 0 || d.midFrame() {
				return nil, nil, &FrameError{"header", fmt.Errorf("%d stray bytes after the frame's header", len(b))}
			}
			return p, chunks, nil
		}
	}
}

// ucxWhole decodes a whole frame, b, with d.
func ucxWhole(d *frameDecoder, b []byte) (*Parcel, int64, error) {
	for {
		sp, direct := d.space()
		n := copy(sp, b)
		b = b[n:]
		d.advance(n, direct)
		p, wire, err := d.next()
		if err != nil {
			return nil, 0, err
		}
		if p != nil {
			if len(b) != 0 || d.midFrame() {
				return nil, 0, &FrameError{"frame length", fmt.Errorf("%d stray bytes after the frame", len(b))}
			}
			return p, wire, nil
		}
		if len(b) == 0 {
			return nil, 0, d.end()
		}
	}
}

// ucxPtr is the address of b's first byte, pinned by the caller.
func ucxPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// cView is a view of n bytes of C memory at p.
func cView(p unsafe.Pointer, n int) []byte { return unsafe.Slice((*byte)(p), n) }
