package runtime

import (
	"context"
	"errors"
	"fmt"
	"github.com/tessera-amt/tessera/runtime/internal/slots"
	"time"

	"github.com/tessera-amt/tessera/internal/shm"
	"github.com/tessera-amt/tessera/parcel"
)

// An operation's run: one site's part in one generation, which sends and
// receives the generation's messages.

// opRun is one site's part in one generation of one operation.
type opRun struct {
	c      *Communicator
	ctx    context.Context
	gen    uint64
	op     collOp
	count  uint64 // this site's element count, sent with every message
	expect uint64 // the count expected of the others, or anyCount
	// lent, for Channel.Lend (op opLent), is the segment sent in place
	// of the data.
	lent *shm.Desc
}

// collSend is a collective message being sent: the parcel, room for its
// encoded collHeader (a longer basename spills over to the heap) and its
// one chunk.
type collSend struct {
	p     parcel.Parcel
	head  [64]byte
	chunk [1][]byte
}

// Send sends data to site `to` as message step of this generation. The
// caller may reuse data when it returns.
func (r *opRun) Send(step uint32, to int, data []float64) error {
	h := collHeader{base: r.c.name, gen: r.gen, step: step, from: uint32(r.c.here), op: r.op, count: r.count}
	dest := r.c.sites[to]
	// One allocation for the parcel, its header and its chunk list, reused:
	// once Send returns, the port keeps nothing of it.
	m, _ := r.c.rt.coll.sends.Get().(*collSend)
	if m == nil {
		m = new(collSend)
	}
	defer func() {
		m.p, m.chunk[0] = parcel.Parcel{}, nil // keeps none of data alive
		r.c.rt.coll.sends.Put(m)
	}()
	p := &m.p
	p.Header = parcel.Header{Kind: parcel.KindControl, Dest: dest, Action: ctlColl, Args: h.appendTo(m.head[:0])}
	if r.lent != nil {
		p.Header.Args = appendDesc(p.Header.Args, *r.lent)
	}
	if len(data) > 0 {
		m.chunk[0] = parcel.Float64Bytes(data)
		p.Chunks = m.chunk[:]
	}
	if err := r.c.rt.port.Send(r.ctx, p); err != nil {
		return r.c.rt.sendError(dest, err)
	}
	return nil
}

// Recv waits for message step of this generation from site `from` and
// checks that the sender is in the same operation with the same count.
func (r *opRun) Recv(step uint32, from int) ([]float64, error) {
	v, _, err := r.RecvCount(step, from)
	return v, err
}

// RecvCount is recv that also returns the sender's element count.
func (r *opRun) RecvCount(step uint32, from int) ([]float64, uint64, error) {
	rt := r.c.rt
	msg, f, err := rt.coll.wait(rt.sched, r.c.box, slots.Key{Gen: r.gen, Step: step, From: uint32(from)})
	if err != nil {
		return nil, 0, err
	}
	if f != nil {
		if msg, err = r.await(f, from); err != nil {
			return nil, 0, err
		}
		rt.coll.reuse(f)
	}
	if msg.source != r.c.sites[from] {
		return nil, 0, fmt.Errorf("message for site %d (locality %d) came from locality %d: the sites disagree on the communicator's localities",
			from, r.c.sites[from], msg.source)
	}
	if msg.op != r.op || (r.expect != anyCount && msg.count != anyCount && msg.count != r.expect) {
		e := &MismatchError{Basename: r.c.name, Generation: r.gen, Calls: [2]CollectiveCall{
			{Site: r.c.here, Locality: rt.here, Op: r.op.String(), Count: countOf(r.count)},
			{Site: from, Locality: msg.source, Op: msg.op.String(), Count: countOf(msg.count)},
		}}
		r.abort(e)
		return nil, 0, e
	}
	return msg.data, msg.count, nil
}

// RecvN is recv that also checks the payload's length.
func (r *opRun) RecvN(step uint32, from, n int) ([]float64, error) {
	v, err := r.Recv(step, from)
	if err == nil && len(v) != n {
		err = fmt.Errorf("message from site %d (locality %d) has %d elements, want %d", from, r.c.sites[from], len(v), n)
	}
	return v, err
}

// Post has message step of this generation from site `from` read straight
// into dst when it arrives (collMailbox.post); recvInto then takes it.
func (r *opRun) Post(step uint32, from int, dst []float64) {
	r.c.rt.coll.post(r.c.box, slots.Key{Gen: r.gen, Step: step, From: uint32(from)}, r.c.sites[from], dst)
}

// RecvInto is recvN into dst: it waits for message step from site `from`
// and leaves its elements in dst — read there by the port if the receive
// was posted before the message came, copied otherwise.
func (r *opRun) RecvInto(step uint32, from int, dst []float64) error {
	v, err := r.RecvN(step, from, len(dst))
	if err != nil {
		return err
	}
	if len(v) > 0 && &v[0] != &dst[0] {
		copy(dst, v)
		r.Recycle(v)
	}
	return nil
}

// Size, Rank, SetCount, Unpost, Recycle and Uncleared complete the
// collective.Link the algorithms see.
func (r *opRun) Size() int                 { return len(r.c.sites) }
func (r *opRun) Rank() int                 { return r.c.here }
func (r *opRun) SetCount(n uint64)         { r.count = n }
func (r *opRun) Unpost()                   { r.c.rt.coll.unpost(r.c.box, r.gen) }
func (r *opRun) Uncleared(n int) []float64 { return r.c.rt.uncleared(n) }

// Recycle hands a received payload that has been used up back to the
// runtime, so the next message of its size is read into it.
func (r *opRun) Recycle(v []float64) { r.c.rt.giveBack(v) }

// abort fails this generation here and tells every other site, so that
// none of them waits for messages that will not come.
func (r *opRun) abort(e *MismatchError) {
	rt := r.c.rt
	rt.coll.abort(r.c.box, r.gen, e)
	h := collHeader{base: r.c.name, gen: r.gen, from: uint32(r.c.here), op: opAbort}
	args := appendCall(appendCall(h.appendTo(nil), e.Calls[0]), e.Calls[1])
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for s, l := range r.c.sites {
		if s == r.c.here {
			continue
		}
		p := &parcel.Parcel{Header: parcel.Header{Kind: parcel.KindControl, Dest: l, Action: ctlColl, Args: args}}
		rt.port.Send(ctx, p) // best effort: a site that is gone fails anyway
	}
}

// startOp runs body as a task for res's generation — or, with res nil,
// the communicator's next one — and returns the future of its result.
// Waits inside body give the task's lane back; they end when ctx ends,
// when the generation fails, or when the locality does.
func startOp[T any](ctx context.Context, c *Communicator, res *Reservation, op collOp, count, expect uint64, body func(r *opRun) (T, error)) *Future[T] {
	var gen uint64
	var err error
	if res != nil {
		gen, err = res.take()
	} else {
		gen, err = c.nextGen()
	}
	if err == nil {
		err = c.rt.Err()
	}
	if err != nil {
		return MakeFailed[T](fmt.Errorf("runtime: %v on communicator %q, site %d (locality %d): %w", op, c.name, c.here, c.rt.here, err))
	}
	early := c.rt.coll.enter(c, gen, op, count, expect)
	c.node.begin() // the board, if any, stays mapped until end
	return SpawnNamed(ctx, c.rt, op.String(), func(wctx context.Context) (T, error) {
		defer c.node.end()
		r := &opRun{c: c, ctx: wctx, gen: gen, op: op, count: count, expect: expect}
		if early != nil {
			r.abort(early)
			var zero T
			return zero, early
		}
		v, err := body(r)
		if err != nil {
			var me *MismatchError
			if errors.As(err, &me) {
				return v, err
			}
			return v, fmt.Errorf("runtime: %v on communicator %q, generation %d, site %d (locality %d): %w",
				op, c.name, gen, c.here, c.rt.here, err)
		}
		return v, nil
	})
}
