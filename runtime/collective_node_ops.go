package runtime

import (
	"fmt"

	"github.com/tessera-amt/tessera/runtime/internal/collective"
)

// The operations on a communicator's board (collective_node.go). Each
// reports with ok false that the run is to go point to point.

// nodeAllReduce publishes data, then reduces the sites' slots in site
// order.
func (r *opRun) nodeAllReduce(data []float64, op func(a, b float64) float64) (v []float64, ok bool, err error) {
	if 8*len(data) > nodeMaxBytes {
		return nil, false, nil
	}
	b, err := r.nodeBoard()
	if b == nil {
		return nil, err != nil, err
	}
	if err := r.publish(b, r.header(), data); err != nil {
		return nil, true, err
	}
	acc := r.Uncleared(len(data))
	// The slots read are consumed once the reduction is done with them
	// (on a failure too), in a loop of its own rather than by a defer per
	// slot, which would cost an allocation each.
	read := 0
	consume := func() {
		for s := range read {
			if s != r.c.here {
				b.Consume(b.Slot(s, r.gen))
			}
		}
	}
	for s := range b.Sites() {
		src := data
		if s != r.c.here {
			sl, err := r.arrived(b, s)
			if err != nil {
				consume()
				r.Recycle(acc)
				return nil, true, err
			}
			src = sl.Data(len(data))
		}
		read = s + 1
		if s == 0 {
			copy(acc, src)
		} else {
			combineInto(acc, acc, src, op)
		}
	}
	consume()
	return acc, true, nil
}

// nodeBarrier publishes an empty slot and waits for every other site's.
func (r *opRun) nodeBarrier() (ok bool, err error) {
	b, err := r.nodeBoard()
	if b == nil {
		return err != nil, err
	}
	if err := r.publish(b, r.header(), nil); err != nil {
		return true, err
	}
	for s := range b.Sites() {
		if s == r.c.here {
			continue
		}
		sl, err := r.arrived(b, s)
		if err != nil {
			return true, err
		}
		b.Consume(sl)
	}
	return true, nil
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
