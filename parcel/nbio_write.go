package parcel

import (
	"context"
	"errors"
	"time"
)

// The write path of the NBIO parcelport: Send's small parcels copied into
// the peer's outgoing buffer, large ones written from the caller's memory
// within the window, and the port's own frames.

// write hands b to nbio. Only the holder of the connection calls it, without
// p.mu.
func (p *nbioPeer) write(b []byte) error {
	p.accepted.Add(int64(len(b)))
	_, err := p.conn.Write(b)
	p.lastWrite.Store(time.Now().UnixNano())
	p.ctr.writes.Add(1)
	if err != nil {
		return err
	}
	p.ctr.bytesSent.Add(uint64(len(b)))
	if u := p.unsent(); u > p.peak.Load() {
		p.peak.Store(u)
	}
	return nil
}

// flushLocked writes p.out until it is empty. The caller holds the
// connection (flushing) and p.mu, which is let go of during each write.
func (p *nbioPeer) flushLocked() error {
	for len(p.out) > 0 {
		buf := p.out
		p.out = nil
		p.mu.Unlock()
		err := p.write(buf)
		p.mu.Lock()
		if p.out == nil && cap(buf) <= nbioKeepBuffer {
			p.out = buf[:0]
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sendSmall copies the frame of pc into p.out and, unless somebody holds the
// connection (and so will write it), writes p.out.
func (t *NBIO) sendSmall(ctx context.Context, p *nbioPeer, pc *Parcel) error {
	p.mu.Lock()
	start := len(p.out)
	out, err := appendFrameHead(p.out, &pc.Header, pc.Chunks)
	if err != nil {
		p.mu.Unlock()
		return &PeerError{p.id, "send", err}
	}
	for _, c := range pc.Chunks {
		out = append(out, c...)
	}
	n := len(out) - start
	window := int64(t.cfg.Window)
	fits := func() bool {
		used := p.unsent() + int64(len(p.out))
		return used == 0 || used+int64(n) <= window
	}
	if !fits() {
		// Wait for room with the frame taken out again: p.out may be
		// written (and replaced) meanwhile.
		frame := append([]byte(nil), out[start:]...)
		p.out = out[:start]
		if err := p.wait(ctx, fits); err != nil {
			p.mu.Unlock()
			return err
		}
		out = append(p.out, frame...)
	}
	if err := p.usable(); err != nil {
		p.out = out[:len(out)-n]
		p.mu.Unlock()
		return err
	}
	p.out = out
	p.ctr.parcelsSent.Add(1)
	if p.flushing {
		p.mu.Unlock()
		return nil // the holder writes it
	}
	p.flushing = true
	err = p.flushLocked()
	p.release()
	p.mu.Unlock()
	if err != nil {
		return t.writeFailed(p, err)
	}
	return nil
}

// sendLarge takes the connection, writes what is buffered before it, then
// pc's frame from the caller's memory, piece by piece as the window allows.
// Once its first byte is written a frame is finished whatever ctx says: the
// stream cannot be cut mid-frame.
func (t *NBIO) sendLarge(ctx context.Context, p *nbioPeer, pc *Parcel) error {
	head, err := appendFrameHead(nil, &pc.Header, pc.Chunks)
	if err != nil {
		return &PeerError{p.id, "send", err}
	}
	p.mu.Lock()
	window := int64(t.cfg.Window)
	if err := p.wait(ctx, func() bool { return !p.flushing && p.unsent()+int64(len(p.out)) < window }); err != nil {
		p.mu.Unlock()
		return err
	}
	if err := p.usable(); err != nil {
		p.mu.Unlock()
		return err
	}
	p.flushing = true
	err = p.flushLocked()
	p.mu.Unlock()
	if err == nil {
		if err = p.writeWindowed(head); err == nil {
			for _, c := range pc.Chunks {
				if err = p.writeWindowed(c); err != nil {
					break
				}
			}
		}
	}
	if err == nil {
		p.ctr.parcelsSent.Add(1)
	}
	p.mu.Lock()
	if err == nil {
		err = p.flushLocked() // small frames queued behind this one
	}
	p.release()
	p.mu.Unlock()
	var stopped *stoppedError
	switch {
	case errors.As(err, &stopped):
		return stopped.err
	case err != nil:
		return t.writeFailed(p, err)
	}
	return nil
}

// stoppedError is a write that stopped because the connection went down
// (or is being closed) while it waited for the window.
type stoppedError struct{ err error }

func (e *stoppedError) Error() string { return e.err.Error() }

// writeWindowed writes b in pieces that keep what nbio holds unsent within
// the window. The caller holds the connection, not p.mu.
func (p *nbioPeer) writeWindowed(b []byte) error {
	window := int64(p.port.cfg.Window)
	for len(b) > 0 {
		p.mu.Lock()
		var room int64
		err := p.wait(nil, func() bool {
			room = window - p.unsent() - int64(len(p.out))
			return room > 0
		})
		p.mu.Unlock()
		if err != nil {
			return &stoppedError{err}
		}
		n := int(min(room, int64(len(b))))
		if err := p.write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// sendControl writes one of the port's own frames (a heartbeat, the
// goodbye) without waiting for the window. If somebody holds the
// connection the frame goes out after what they write.
func (t *NBIO) sendControl(p *nbioPeer, verb string) {
	hb := Header{Kind: KindHeartbeat, Action: verb, Source: t.cfg.Locality, Dest: p.id}
	p.mu.Lock()
	out, err := AppendFrameHead(p.out, &hb, nil)
	if err != nil {
		p.mu.Unlock()
		return
	}
	p.out = out
	if p.flushing {
		p.mu.Unlock()
		return
	}
	p.flushing = true
	err = p.flushLocked()
	p.release()
	p.mu.Unlock()
	if err != nil {
		t.writeFailed(p, err)
	}
}
