//go:build ucx

package parcel

import (
	"encoding/binary"
	goruntime "runtime"
)

// The two ways a UCX port sends a parcel's message: copied into the
// worker's C memory when it is small, from its own pinned memory else.

// sendCopied sends a message whose frame head fits the AM header and whose
// data are small: both are copied into the worker's C memory, which UCX
// sends from, so no Go memory is pinned and nothing is allocated unless
// UCX cannot send it at once (then that memory goes with the operation).
// The caller set hdr's source and token.
func (u *UCX) sendCopied(p *ucxPeer, hdr []byte, chunks [][]byte) error {
	binary.LittleEndian.PutUint32(hdr[4:], ucxInlined)
	var data int
	for _, c := range chunks {
		data += len(c)
	}
	u.w.mu.Lock()
	if u.shut {
		u.w.mu.Unlock()
		return &PeerError{p.id, "send", ErrClosed}
	}
	if p.broken != nil || p.ep == nil {
		cause := p.broken
		u.w.mu.Unlock()
		return u.verdict(p, cause)
	}
	binary.LittleEndian.PutUint64(hdr[8:], p.seq)
	id := u.nextID
	u.nextID++
	sb := u.w.scratch(len(hdr) + data)
	n := copy(sb, hdr)
	for _, c := range chunks {
		n += copy(sb[n:], c)
	}
	done, err := u.w.sendScratch(p.ep, len(hdr), data, id)
	var op *ucxOp
	if !done {
		op = &ucxOp{done: make(chan error, 1), cmem: u.w.takeScratch()}
	}
	if err = u.settle(p, id, op, err); err != nil {
		return u.verdict(p, err)
	}
	return nil
}

// settle ends a send that UCX took as message id: it counts the message
// in p's sequence unless UCX refused it at once, wakes the progress
// goroutine when it sleeps or op (UCX did not finish at once; nil
// otherwise) needs it, and waits for op. The caller holds u.w.mu, which
// settle unlocks; err is UCX's at once.
func (u *UCX) settle(p *ucxPeer, id uint64, op *ucxOp, err error) error {
	if op != nil {
		u.ops[id] = op
	}
	if op != nil || err == nil {
		p.seq++
	}
	sleeping := u.sleeping.Load()
	u.w.mu.Unlock()
	if op != nil || sleeping {
		u.w.signal()
	}
	if op != nil {
		err = <-op.done
	}
	return err
}

// sendPinned sends a message from its own memory, pinned until UCX is
// done with it: its frame head in the AM header if it fits, else leading
// the data. wire is the frame's length.
func (u *UCX) sendPinned(p *ucxPeer, head []byte, chunks [][]byte, wire int64) error {
	hdr := make([]byte, len(head))
	copy(hdr, head)
	bufs := make([][]byte, 0, len(chunks)+1)
	flags := uint32(ucxInlined)
	if len(hdr) > u.w.maxH {
		flags = 0
		bufs = append(bufs, hdr[ucxPrefix:])
		hdr = hdr[:ucxPrefix]
	}
	bufs = append(bufs, chunks...)
	if len(bufs) > 1 && wire <= ucxGather {
		// Small data in pieces: one buffer, which UCX can send at once.
		one := make([]byte, 0, wire)
		for _, b := range bufs {
			one = append(one, b...)
		}
		bufs = append(bufs[:0], one)
	}
	binary.LittleEndian.PutUint32(hdr[4:], flags)
	v := newUCXIOV(bufs, true)
	v.pin.Pin(&hdr[0])

	u.w.mu.Lock()
	if u.shut {
		u.w.mu.Unlock()
		v.free()
		return &PeerError{p.id, "send", ErrClosed}
	}
	if p.broken != nil || p.ep == nil {
		cause := p.broken
		u.w.mu.Unlock()
		v.free()
		return u.verdict(p, cause)
	}
	binary.LittleEndian.PutUint64(hdr[8:], p.seq)
	id := u.nextID
	u.nextID++
	done, err := u.w.send(p.ep, ucxPtr(hdr), len(hdr), v, id)
	var op *ucxOp
	if !done {
		op = &ucxOp{done: make(chan error, 1), iov: v}
	}
	err = u.settle(p, id, op, err)
	if op == nil {
		v.free()
	}
	goruntime.KeepAlive(hdr)
	if err != nil {
		return u.verdict(p, err)
	}
	return nil
}
