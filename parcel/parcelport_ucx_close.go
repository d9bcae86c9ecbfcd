//go:build ucx

package parcel

import (
	"context"
	"encoding/binary"
	"time"
)

// The end of a UCX port.

// Close flushes what was sent through UCX to every peer (for at most a
// second a peer), says goodbye on the TCP side, and ends the worker.
func (u *UCX) Close() error {
	if u.closed.Swap(true) {
		return nil
	}
	close(u.done)
	u.w.mu.Lock()
	u.shut = true
	var flushes []chan error
	for _, p := range u.peerList() {
		if p.ep == nil {
			continue
		}
		if tp, err := u.tcp.peer(p.id); err != nil || tp.usable() != nil {
			continue // gone: nothing to flush to
		}
		id := u.nextID
		u.nextID++
		if done, _ := u.w.flushEndpoint(p.ep, id); !done {
			op := &ucxOp{done: make(chan error, 1)}
			u.ops[id] = op
			flushes = append(flushes, op.done)
		}
	}
	u.w.mu.Unlock()
	u.w.signal()
	limit := time.After(min(u.cfg.HeartbeatTimeout, time.Second))
	for _, f := range flushes {
		select {
		case <-f:
		case <-limit:
		}
	}
	for _, p := range u.peerList() {
		u.w.mu.Lock()
		n, ok := p.seq, p.ep != nil && !p.epClosed
		u.w.mu.Unlock()
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		pc := &Parcel{Header: Header{Kind: KindControl, Dest: p.id, Action: ucxLast, Args: binary.LittleEndian.AppendUint64(nil, n)}}
		if u.tcp.Send(ctx, pc) == nil {
			p.ctlSent.Add(1)
		}
		cancel()
	}
	err := u.tcp.Close()
	// Force the endpoints closed: operations still in flight end, failed.
	u.w.mu.Lock()
	closing := 0
	for _, p := range u.peerList() {
		if p.ep == nil || p.epClosed {
			continue
		}
		p.epClosed = true
		id := u.nextID
		u.nextID++
		if done, _ := u.w.closeEndpoint(p.ep, true, id); !done {
			u.ops[id] = &ucxOp{done: make(chan error, 1)}
			closing++
		}
	}
	u.w.mu.Unlock()
	u.w.signal()
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		u.w.mu.Lock()
		n := len(u.ops)
		u.w.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	u.stop.Store(true)
	u.w.signal()
	u.wg.Wait()
	u.w.mu.Lock()
	u.w.close()
	for id, op := range u.ops { // UCX is gone: nobody touches their memory now
		if op.iov != nil {
			op.iov.free()
		}
		if op.cmem != nil {
			freeC(op.cmem)
		}
		op.done <- &PeerError{u.cfg.Locality, "close", ErrClosed}
		delete(u.ops, id)
	}
	for _, p := range u.peerList() {
		if p.ep != nil {
			p.ep.free()
		}
	}
	u.w.mu.Unlock()
	u.efd.Close()
	return err
}

func (u *UCX) peerList() []*ucxPeer {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]*ucxPeer, 0, len(u.peers))
	for _, p := range u.peers {
		out = append(out, p)
	}
	return out
}
