package runtime

import (
	"context"
	"fmt"
	"github.com/tessera-amt/tessera/runtime/internal/slots"
)

// Channel is a point-to-point channel communicator: a site Sets a []float64
// for another site under a tag, and that site Gets it, in either order —
// a value set before anyone asks waits in the receiver's mailbox. Each
// (sender, receiver, tag) carries one value; reusing one is an error of the
// program's that this type does not detect.
type Channel struct {
	c *Communicator
}

// NewChannel creates this locality's end of the channel communicator named
// basename over sites (ascending localities; nil: all of the job's). Every
// site creates it; the basename must differ from those of other
// communicators.
func NewChannel(rt *Runtime, basename string, sites []uint32) (*Channel, error) {
	c, err := NewCommunicator(rt, basename, sites, 0)
	if err != nil {
		return nil, err
	}
	return &Channel{c}, nil
}

// Site returns this locality's site index.
func (ch *Channel) Site() int { return ch.c.here }

// Size returns the number of sites.
func (ch *Channel) Size() int { return len(ch.c.sites) }

// Close releases the basename on this locality.
func (ch *Channel) Close() { ch.c.Close() }

// Set sends v to site under tag. The future is ready once v is on its way;
// the caller may then reuse v.
//
// The send is not a task: it runs on a goroutine of its own, which waits
// for the connection rather than for a lane, so a value travels while the
// task that set it goes on computing (Cannon's next tiles during this
// step's multiply) even when that task holds the locality's only lane.
func (ch *Channel) Set(ctx context.Context, site int, tag uint64, v []float64) *Future[struct{}] {
	c := ch.c
	if site < 0 || site >= c.Size() {
		return MakeFailed[struct{}](fmt.Errorf("runtime: channel %q: Set to site %d of %d", c.name, site, c.Size()))
	}
	if site == c.here {
		msg := collMsg{collHeader: collHeader{base: c.name, gen: tag, from: uint32(c.here), op: opChannel, count: anyCount},
			source: c.rt.here, data: append([]float64(nil), v...)}
		if err := c.rt.coll.arrive(c.box, slots.Key{Gen: tag, Step: 0, From: uint32(c.here)}, msg, nil); err != nil {
			return MakeFailed[struct{}](fmt.Errorf("runtime: channel %q: Set to site %d, tag %d: %w", c.name, site, tag, err))
		}
		return MakeReady(struct{}{})
	}
	return ch.post(ctx, site, tag, "Set", &opRun{c: c, ctx: ctx, gen: tag, op: opChannel, count: anyCount, expect: anyCount}, v, nil)
}

// post sends Set's or Lend's message r on a goroutine of its own and
// returns the future of the send; done, if set, learns how the send went
// before the future does.
func (ch *Channel) post(ctx context.Context, site int, tag uint64, verb string, r *opRun, v []float64, done func(error)) *Future[struct{}] {
	c := ch.c
	f := newFuture[struct{}](c.rt.sched)
	go func() {
		err := ctx.Err()
		if err == nil {
			err = r.Send(0, site, v)
		}
		if done != nil {
			done(err)
		}
		if err != nil {
			err = fmt.Errorf("runtime: channel %q: %s to site %d, tag %d: %w", c.name, verb, site, tag, err)
		}
		f.set(struct{}{}, err)
	}()
	return f
}

// Lend sends v to site under tag as Set does, but without a copy when v
// is shared memory — a lendable Tile (TileOptions.Lendable), or a value lent to this
// locality — and site runs on this machine and could map this locality's
// memory when the job started (the start barrier's probe, shared.go):
// site's Get then returns the
// same memory, mapped read-only there, and the memory is not reused until
// site releases it (AdoptTile, Tile.Release), as this locality does with its
// own reference. The caller must not change v afterwards. In every other case
// Lend is Set. Primitives lend the tiles that travel between the steps of
// Cannon's product.
func (ch *Channel) Lend(ctx context.Context, site int, tag uint64, v []float64) *Future[struct{}] {
	c := ch.c
	if site < 0 || site >= c.Size() || site == c.here || !c.rt.shared.LendsTo(c.sites[site]) {
		return ch.Set(ctx, site, tag, v)
	}
	d, ok := c.rt.shared.Lend(v)
	if !ok {
		return ch.Set(ctx, site, tag, v)
	}
	r := &opRun{c: c, ctx: ctx, gen: tag, op: opLent, count: anyCount, expect: anyCount, lent: &d}
	return ch.post(ctx, site, tag, "Lend", r, nil, func(err error) { c.rt.shared.Sent(v, err) })
}

// Get returns the value site Set (or Lend) for this site under tag. A
// value lent from shared memory is read-only — writing it faults — and is
// handed back by releasing it (AdoptTile, Tile.Release).
func (ch *Channel) Get(ctx context.Context, site int, tag uint64) *Future[[]float64] {
	c := ch.c
	if site < 0 || site >= c.Size() {
		return MakeFailed[[]float64](fmt.Errorf("runtime: channel %q: Get from site %d of %d", c.name, site, c.Size()))
	}
	return Spawn(ctx, c.rt, func(wctx context.Context) ([]float64, error) {
		r := &opRun{c: c, ctx: wctx, gen: tag, op: opChannel, count: anyCount, expect: anyCount}
		v, err := r.Recv(0, site)
		if err != nil {
			return nil, fmt.Errorf("runtime: channel %q: Get from site %d, tag %d: %w", c.name, site, tag, err)
		}
		if v == nil {
			v = []float64{}
		}
		return v, nil
	})
}
