package runtime

import (
	"fmt"

	"github.com/tessera-amt/tessera/runtime/internal/collective"
	"github.com/tessera-amt/tessera/runtime/internal/nodecoll"
)

// The operations on a communicator's board (collective_node.go). Each
// reports with ok false that the run is to go point to point.

// nodeAllReduce reduces the sites' data through the board (nodeCombine).
func (r *opRun) nodeAllReduce(data []float64, op func(a, b float64) float64) (v []float64, ok bool, err error) {
	if 8*len(data) > nodeMaxBytes {
		return nil, false, nil
	}
	b, err := r.nodeBoard()
	if b == nil {
		return nil, err != nil, err
	}
	v, err = r.nodeCombine(b, data, op)
	if err == nil && v == nil {
		v = r.Uncleared(0) // no data: what the parcels' AllReduce gives
	}
	return v, true, err
}

// nodeBarrier is nodeCombine without data.
func (r *opRun) nodeBarrier() (ok bool, err error) {
	b, err := r.nodeBoard()
	if b == nil {
		return err != nil, err
	}
	_, err = r.nodeCombine(b, nil, nil)
	return true, err
}

// nodeCombine publishes data in this site's slot for the one site that
// reads them all: the last to arrive (nodecoll.Board.Arrive), which checks
// every site's call, reduces the slots in site order and publishes the
// result in the generation's result slot, which the others wait for. So a
// waiter waits on one word, and one wake-up, if any, ends its wait.
func (r *opRun) nodeCombine(b *nodeRegion, data []float64, op func(a, b float64) float64) ([]float64, error) {
	if err := r.publishFor(b, b.Slot(r.c.here, r.gen), r.header(), data, 0); err != nil {
		return nil, err
	}
	last, ok := b.Arrive(r.gen)
	if !ok {
		if err := r.nodeFailed(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("the board of communicator %q moved past generation %d before site %d arrived", r.c.name, r.gen, r.c.here)
	}
	res := b.Result(r.gen)
	if last {
		return r.nodeReduce(b, res, data, op)
	}
	var mismatch bool
	if err := r.awaitSlot(res, func(h nodecoll.Header) error {
		mismatch = h.Flag == nodeMismatch
		return nil
	}); err != nil {
		return nil, err
	}
	if mismatch {
		err := r.nodeFindMismatch(b)
		b.Consume(res)
		return nil, err
	}
	var out []float64
	if len(data) > 0 {
		out = r.Uncleared(len(data))
		copy(out, res.Data(len(data)))
	}
	b.Consume(res)
	return out, nil
}

// nodeReduce is nodeCombine on the last site to arrive: every slot holds
// the generation. It publishes the result, or that the calls disagree.
func (r *opRun) nodeReduce(b *nodeRegion, res nodecoll.Slot, data []float64, op func(a, b float64) float64) ([]float64, error) {
	h := r.header()
	for s := range b.Sites() {
		if s == r.c.here {
			continue
		}
		sl := b.Slot(s, r.gen)
		if !sl.Holds(r.gen) {
			return nil, fmt.Errorf("site %d's slot of communicator %q holds generation %d, not %d, after every site arrived", s, r.c.name, sl.Gen(), r.gen)
		}
		if err := r.nodeCheck(s, sl.Header()); err != nil {
			h.Flag = nodeMismatch
			if perr := r.publishFor(b, res, h, nil, b.Sites()-1); perr != nil {
				return nil, perr
			}
			return nil, err
		}
	}
	var acc []float64
	if len(data) > 0 {
		acc = r.Uncleared(len(data))
	}
	for s := range b.Sites() {
		if len(data) == 0 {
			break
		}
		src := data
		if s != r.c.here {
			src = b.Slot(s, r.gen).Data(len(data))
		}
		if s == 0 {
			copy(acc, src)
		} else {
			combineInto(acc, acc, src, op)
		}
	}
	if err := r.publishFor(b, res, h, acc, b.Sites()-1); err != nil {
		if acc != nil {
			r.Recycle(acc)
		}
		return nil, err
	}
	return acc, nil
}

// nodeFindMismatch returns the MismatchError of this site's call with
// another's, once the last site to arrive found that the calls disagree:
// every site's slot still holds the generation, since none of them can
// complete the next Entries-1 generations without this one.
func (r *opRun) nodeFindMismatch(b *nodeRegion) error {
	for s := range b.Sites() {
		if s == r.c.here {
			continue
		}
		if sl := b.Slot(s, r.gen); sl.Holds(r.gen) {
			if err := r.nodeCheck(s, sl.Header()); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("the calls of generation %d of communicator %q disagree, said site %d, whose call matches every other site's", r.gen, r.c.name, r.c.here)
}

// nodeBroadcast publishes the root's data, or that it goes by parcels
// (then the tree of collective.Broadcast carries it).
func (r *opRun) nodeBroadcast(data []float64, ringFrom int) (v []float64, ok bool, err error) {
	b, err := r.nodeBoard()
	if b == nil {
		return nil, err != nil, err
	}
	tree := func() ([]float64, bool, error) {
		v, err := collective.Broadcast(rootedRun{r}, data, ringFrom)
		return v, true, err
	}
	if r.c.here == r.c.root {
		h := r.header()
		if 8*len(data) > b.Room() {
			h.Flag = nodeViaParcels
			if err := r.publish(b, h, nil); err != nil {
				return nil, true, err
			}
			return tree()
		}
		if err := r.publish(b, h, data); err != nil {
			return nil, true, err
		}
		out := r.Uncleared(len(data))
		copy(out, data)
		return out, true, nil
	}
	sl, err := r.arrived(b, r.c.root)
	if err != nil {
		return nil, true, err
	}
	h := sl.Header()
	if h.Flag == nodeViaParcels {
		b.Consume(sl)
		return tree()
	}
	if h.Count == anyCount || 8*h.Count > uint64(b.Room()) {
		return nil, true, fmt.Errorf("the root's slot holds %d elements, more than its %d bytes", h.Count, b.Room())
	}
	r.SetCount(h.Count)
	out := r.Uncleared(int(h.Count))
	copy(out, sl.Data(int(h.Count)))
	b.Consume(sl)
	return out, true, nil
}
