package runtime

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/internal/hugepage"
)

// Rooted operations: Broadcast, Reduce, Gather and Scatter, along binomial
// trees rooted at the communicator's root.

// rel and abs convert between site indices and ranks relative to the root.
func (c *Communicator) rel(site int) int { return (site - c.root + len(c.sites)) % len(c.sites) }
func (c *Communicator) abs(rel int) int  { return (rel + c.root) % len(c.sites) }

// Broadcast gives every site the root's data; the others may pass nil.
// The data goes down a binomial tree (ceil(log2 p) rounds). A
// bandwidth-optimal variant — the tree scatters one segment to each site
// and a ring all-gather completes them (van de Geijn) — is implemented but
// off: on one node it was slower than the tree. The non-roots learn the
// size, and so the algorithm, from the first message they get.
func (c *Communicator) Broadcast(ctx context.Context, data []float64) *Future[[]float64] {
	return c.broadcast(ctx, nil, data)
}

// broadcast is Broadcast in res's generation, or in the next one when res is nil.
func (c *Communicator) broadcast(ctx context.Context, res *Reservation, data []float64) *Future[[]float64] {
	count := anyCount
	if c.here == c.root {
		count = uint64(len(data))
	}
	ringFrom := c.bcastRingFrom
	return startOp(ctx, c, res, opBroadcast, count, anyCount, func(r *opRun) ([]float64, error) {
		p, rel := c.Size(), c.rel(c.here)
		n := len(data)
		mask := 1 // rel's subtree is [rel, rel+mask)
		if rel == 0 {
			for mask < p {
				mask <<= 1
			}
		} else {
			for rel&mask == 0 {
				mask <<= 1
			}
			v, cnt, err := r.recvCount(0, c.abs(rel-mask))
			if err != nil {
				return nil, err
			}
			if cnt == anyCount {
				return nil, fmt.Errorf("broadcast message from site %d without a count", c.abs(rel-mask))
			}
			data, n, r.count = v, int(cnt), cnt
		}
		if n*8 < ringFrom || p <= 2 {
			if rel == 0 {
				data = clone(data)
			} else if len(data) != n {
				return nil, fmt.Errorf("broadcast message of %d elements, want %d", len(data), n)
			}
			for mask >>= 1; mask > 0; mask >>= 1 {
				if rel+mask < p {
					if err := r.send(0, c.abs(rel+mask), data); err != nil {
						return nil, err
					}
				}
			}
			if data == nil {
				data = []float64{}
			}
			return data, nil
		}
		// Segment j of the result belongs to relative rank j.
		seg := func(j int) (int, int) { return segment(n, p, j) }
		span := func(from, to int) (int, int) { // the segments of ranks [from, to)
			lo, _ := seg(from)
			_, hi := seg(to - 1)
			return lo, hi
		}
		buf := data
		if rel == 0 {
			buf = clone(data)
		} else {
			lo, hi := span(rel, min(rel+mask, p))
			if len(data) != hi-lo {
				return nil, fmt.Errorf("broadcast message of %d elements, want %d", len(data), hi-lo)
			}
			buf = hugepage.Float64s(n)
			copy(buf[lo:hi], data)
		}
		for mask >>= 1; mask > 0; mask >>= 1 {
			if rel+mask < p {
				lo, hi := span(rel+mask, min(rel+2*mask, p))
				if err := r.send(0, c.abs(rel+mask), buf[lo:hi]); err != nil {
					return nil, err
				}
			}
		}
		return buf, r.ringShare(buf, 1, seg, p-c.root)
	})
}

// Reduce combines data element-wise over all sites with op, along a
// binomial tree towards the root. The root's future holds the result, the
// others' nil.
func (c *Communicator) Reduce(ctx context.Context, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	return c.reduce(ctx, nil, data, op)
}

// reduce is Reduce in res's generation, or in the next one when res is nil.
func (c *Communicator) reduce(ctx context.Context, res *Reservation, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	n := uint64(len(data))
	return startOp(ctx, c, res, opReduce, n, n, func(r *opRun) ([]float64, error) {
		p, rel := c.Size(), c.rel(c.here)
		acc := clone(data)
		for mask := 1; mask < p; mask <<= 1 {
			if rel&mask != 0 {
				return nil, r.send(0, c.abs(rel&^mask), acc)
			}
			if rel|mask < p {
				v, err := r.recvN(0, c.abs(rel|mask), len(acc))
				if err != nil {
					return nil, err
				}
				combineInto(acc, acc, v, op)
				r.recycle(v)
			}
		}
		return acc, nil
	})
}

// Gather gives the root the data of all sites, concatenated in site order,
// along a binomial tree. Every site passes the same number of elements; the
// others' futures hold nil.
func (c *Communicator) Gather(ctx context.Context, data []float64) *Future[[]float64] {
	return c.gather(ctx, nil, data)
}

// gather is Gather in res's generation, or in the next one when res is nil.
func (c *Communicator) gather(ctx context.Context, res *Reservation, data []float64) *Future[[]float64] {
	m := len(data)
	return startOp(ctx, c, res, opGather, uint64(m), uint64(m), func(r *opRun) ([]float64, error) {
		p, rel := c.Size(), c.rel(c.here)
		subtree := p - rel // sites whose blocks pass through this one
		if low := rel & -rel; low > 0 {
			subtree = min(low, subtree)
		}
		buf := hugepage.Float64s(subtree * m)[:m] // blocks of relative ranks rel, rel+1, ...
		copy(buf, data)
		for mask := 1; mask < p; mask <<= 1 {
			if rel&mask != 0 {
				return nil, r.send(0, c.abs(rel&^mask), buf)
			}
			if src := rel | mask; src < p {
				v, err := r.recvN(0, c.abs(src), min(mask, p-src)*m)
				if err != nil {
					return nil, err
				}
				buf = append(buf, v...)
				r.recycle(v)
			}
		}
		out := hugepage.Float64s(p * m)
		for i := range p {
			s := c.abs(i)
			copy(out[s*m:(s+1)*m], buf[i*m:(i+1)*m])
		}
		return out, nil
	})
}

// Scatter gives site i block i of the root's data, which holds Size()
// blocks of equal length; the others may pass nil. It runs along a binomial
// tree.
func (c *Communicator) Scatter(ctx context.Context, data []float64) *Future[[]float64] {
	return c.scatter(ctx, nil, data)
}

// scatter is Scatter in res's generation, or in the next one when res is nil.
func (c *Communicator) scatter(ctx context.Context, res *Reservation, data []float64) *Future[[]float64] {
	count := anyCount
	if c.here == c.root {
		count = uint64(len(data))
	}
	return startOp(ctx, c, res, opScatter, count, anyCount, func(r *opRun) ([]float64, error) {
		p, rel := c.Size(), c.rel(c.here)
		var buf []float64 // blocks of relative ranks rel, rel+1, ...
		var m int
		mask := 1
		if rel == 0 {
			if len(data)%p != 0 {
				return nil, fmt.Errorf("the root's %d elements do not split into %d equal blocks", len(data), p)
			}
			m = len(data) / p
			buf = hugepage.Float64s(len(data))
			for i := range p {
				s := c.abs(i)
				copy(buf[i*m:(i+1)*m], data[s*m:(s+1)*m])
			}
			for mask < p {
				mask <<= 1
			}
		} else {
			for ; mask < p; mask <<= 1 {
				if rel&mask != 0 {
					v, cnt, err := r.recvCount(0, c.abs(rel-mask))
					if err != nil {
						return nil, err
					}
					blocks := min(mask, p-rel)
					if cnt == anyCount || cnt%uint64(p) != 0 || len(v) != blocks*int(cnt/uint64(p)) {
						return nil, fmt.Errorf("scatter message of %d elements for %d of %d sites, from a root with %d", len(v), blocks, p, countOf(cnt))
					}
					buf, m, r.count = v, int(cnt/uint64(p)), cnt
					break
				}
			}
		}
		for mask >>= 1; mask > 0; mask >>= 1 {
			if rel+mask < p {
				hi := min(2*mask, p-rel) * m
				if err := r.send(0, c.abs(rel+mask), buf[mask*m:hi]); err != nil {
					return nil, err
				}
			}
		}
		out := append([]float64{}, buf[:m]...)
		r.recycle(buf)
		return out, nil
	})
}
