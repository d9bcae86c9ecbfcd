package runtime

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"github.com/tessera-amt/tessera/internal/hugepage"
)

// ringThresholdBytes is the payload size from which AllReduce and AllGather
// use the bandwidth-optimal ring (reduce-scatter + all-gather) instead of
// the latency-optimal recursive doubling (AllReduce) or Bruck (AllGather)
// exchange.
const ringThresholdBytes = 64 << 10

// ReduceSum, ReduceProd, ReduceMin and ReduceMax are the usual reductions.
// Any func(a, b float64) float64 that is associative and commutative can
// reduce as well. The order in which a reduction combines the sites' values
// is fixed by the algorithm, so every site gets the same bits.
func ReduceSum(a, b float64) float64 { return a + b }

// ReduceProd multiplies; see ReduceSum.
func ReduceProd(a, b float64) float64 { return a * b }

// ReduceMin takes the smaller; see ReduceSum.
func ReduceMin(a, b float64) float64 { return math.Min(a, b) }

// ReduceMax takes the larger; see ReduceSum.
func ReduceMax(a, b float64) float64 { return math.Max(a, b) }

// combineInto sets dst[i] = op(lo[i], hi[i]): lo holds the values of the
// lower sites. dst may be lo or hi. The four reductions of this package run
// as plain loops, not a call per element: the same operation on the same
// operands, so the same bits, in a fraction of the time.
func combineInto(dst, lo, hi []float64, op func(a, b float64) float64) {
	lo, hi = lo[:len(dst)], hi[:len(dst)]
	switch reflect.ValueOf(op).Pointer() {
	case reflect.ValueOf(ReduceSum).Pointer():
		for i := range dst {
			dst[i] = lo[i] + hi[i]
		}
	case reflect.ValueOf(ReduceProd).Pointer():
		for i := range dst {
			dst[i] = lo[i] * hi[i]
		}
	case reflect.ValueOf(ReduceMin).Pointer():
		// The built-in min and max are math.Min and math.Max unless an
		// operand is a NaN: then they give a NaN where math.Min gives -Inf
		// if the other is -Inf (math.Max: +Inf), and a NaN of the
		// operand's bits where the math functions give theirs. A NaN
		// result is taken again by the math function.
		for i := range dst {
			v := min(lo[i], hi[i])
			if v != v {
				v = math.Min(lo[i], hi[i])
			}
			dst[i] = v
		}
	case reflect.ValueOf(ReduceMax).Pointer():
		for i := range dst {
			v := max(lo[i], hi[i])
			if v != v {
				v = math.Max(lo[i], hi[i])
			}
			dst[i] = v
		}
	default:
		for i := range dst {
			dst[i] = op(lo[i], hi[i])
		}
	}
}

func clone(v []float64) []float64 { return append([]float64(nil), v...) }

// recycle hands a received payload that has been used up back to the
// runtime, so the next message of its size is read into it.
func (r *opRun) recycle(v []float64) { r.c.rt.giveBack(v) }

// AllReduce combines data element-wise over all sites with op and gives
// every site the result. Every site passes the same number of elements.
// Small payloads take ceil(log2 p) rounds of recursive doubling; from
// ringThresholdBytes on, a ring reduce-scatter and all-gather moves
// 2(p-1)/p of the data per site.
func (c *Communicator) AllReduce(ctx context.Context, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	return c.allReduce(ctx, nil, data, op)
}

// allReduce is AllReduce in res's generation, or in the next one when res is nil.
func (c *Communicator) allReduce(ctx context.Context, res *Reservation, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	n := uint64(len(data))
	ring := len(data)*8 >= c.ringFrom && c.Size() > 2
	return startOp(ctx, c, res, opAllReduce, n, n, func(r *opRun) ([]float64, error) {
		acc := c.rt.uncleared(len(data))
		copy(acc, data)
		if ring {
			return r.ringAllReduce(acc, op)
		}
		return r.doublingAllReduce(acc, op)
	})
}

// doublingAllReduce is recursive doubling. With p not a power of two, the
// first 2r sites (r = p - 2^k) pair up first: the even one hands its value
// to the odd one and waits for the result. Each step combines two
// contiguous blocks of sites, lower block first, so every site computes the
// same expression tree.
func (r *opRun) doublingAllReduce(acc []float64, op func(a, b float64) float64) ([]float64, error) {
	p, me := r.c.Size(), r.c.here
	p2 := 1
	for p2*2 <= p {
		p2 *= 2
	}
	rem := p - p2
	const stepFold, stepUnfold = 0, 1
	var vr int // rank among the p2 sites that take part in the doubling
	switch {
	case me < 2*rem && me%2 == 0:
		if err := r.send(stepFold, me+1, acc); err != nil {
			return nil, err
		}
		return r.recvN(stepUnfold, me+1, len(acc))
	case me < 2*rem:
		v, err := r.recvN(stepFold, me-1, len(acc))
		if err != nil {
			return nil, err
		}
		combineInto(acc, v, acc, op)
		r.recycle(v)
		vr = me / 2
	default:
		vr = me - rem
	}
	site := func(v int) int {
		if v < rem {
			return 2*v + 1
		}
		return v + rem
	}
	for mask, step := 1, uint32(2); mask < p2; mask, step = mask<<1, step+1 {
		pv := vr ^ mask
		partner := site(pv)
		if err := r.send(step, partner, acc); err != nil {
			return nil, err
		}
		v, err := r.recvN(step, partner, len(acc))
		if err != nil {
			return nil, err
		}
		if pv < vr {
			combineInto(acc, v, acc, op)
		} else {
			combineInto(acc, acc, v, op)
		}
		r.recycle(v)
	}
	if me < 2*rem {
		if err := r.send(stepUnfold, me-1, acc); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// segment returns the bounds of segment j of n elements in p parts.
func segment(n, p, j int) (int, int) { return j * n / p, (j + 1) * n / p }

// ringAllReduce is reduce-scatter then all-gather around the ring of
// sites. Segment j is reduced starting at site j, in ring order, exactly
// once; the all-gather only copies, so all sites get the same bits.
func (r *opRun) ringAllReduce(acc []float64, op func(a, b float64) float64) ([]float64, error) {
	p, me, n := r.c.Size(), r.c.here, len(acc)
	right, left := (me+1)%p, (me-1+p)%p
	for s := 0; s < p-1; s++ {
		lo, hi := segment(n, p, (me-s+p)%p)
		if err := r.send(uint32(s), right, acc[lo:hi]); err != nil {
			return nil, err
		}
		lo, hi = segment(n, p, (me-s-1+2*p)%p)
		v, err := r.recvN(uint32(s), left, hi-lo)
		if err != nil {
			return nil, err
		}
		combineInto(acc[lo:hi], v, acc[lo:hi], op)
		r.recycle(v)
	}
	// Site me now holds the whole of segment me+1.
	return acc, r.ringShare(acc, uint32(p), func(j int) (int, int) { return segment(n, p, j) }, 1)
}

// ringShare is the ring all-gather: site me holds block (me+shift) mod p of
// buf, with bounds from block, and after p-1 steps holds them all. The
// receives are posted first, so the blocks are read straight into buf.
func (r *opRun) ringShare(buf []float64, step0 uint32, block func(j int) (int, int), shift int) error {
	p, me := r.c.Size(), r.c.here
	right, left := (me+1)%p, (me-1+p)%p
	in := func(s int) []float64 {
		lo, hi := block((me + shift - s - 1 + 2*p) % p)
		return buf[lo:hi]
	}
	for s := 0; s < p-1; s++ {
		r.post(step0+uint32(s), left, in(s))
	}
	defer r.c.rt.coll.unpost(r.c.box, r.gen)
	for s := 0; s < p-1; s++ {
		lo, hi := block((me + shift - s + 2*p) % p)
		if err := r.send(step0+uint32(s), right, buf[lo:hi]); err != nil {
			return err
		}
		if err := r.recvInto(step0+uint32(s), left, in(s)); err != nil {
			return err
		}
	}
	return nil
}

// AllGather gives every site the data of all sites, concatenated in site
// order. Every site passes the same number of elements. Small payloads take
// ceil(log2 p) rounds (Bruck); from ringThresholdBytes on, p-1 ring steps.
func (c *Communicator) AllGather(ctx context.Context, data []float64) *Future[[]float64] {
	return c.allGather(ctx, nil, data)
}

// allGather is AllGather in res's generation, or in the next one when res is nil.
func (c *Communicator) allGather(ctx context.Context, res *Reservation, data []float64) *Future[[]float64] {
	m := len(data)
	ring := m*8 >= c.ringFrom && c.Size() > 2
	return startOp(ctx, c, res, opAllGather, uint64(m), uint64(m), func(r *opRun) ([]float64, error) {
		p, me := c.Size(), c.here
		if ring {
			out := c.rt.uncleared(p * m) // every block is written
			copy(out[me*m:], data)
			err := r.ringShare(out, 0, func(j int) (int, int) { return j * m, (j + 1) * m }, 0)
			return out, err
		}
		// Bruck: buf holds the blocks of sites me, me+1, ... (mod p).
		buf := hugepage.Float64s(p * m)[:m]
		copy(buf, data)
		for dist, step := 1, uint32(0); dist < p; dist, step = dist<<1, step+1 {
			k := min(dist, p-dist)
			if err := r.send(step, (me-dist+p)%p, buf[:k*m]); err != nil {
				return nil, err
			}
			v, err := r.recvN(step, (me+dist)%p, k*m)
			if err != nil {
				return nil, err
			}
			buf = append(buf, v...)
			r.recycle(v)
		}
		out := c.rt.uncleared(p * m) // every block is written
		for i := range p {
			s := (me + i) % p
			copy(out[s*m:(s+1)*m], buf[i*m:(i+1)*m])
		}
		return out, nil
	})
}

// Barrier is ready on every site once all sites have called it: ceil(log2
// p) rounds of the dissemination algorithm.
func (c *Communicator) Barrier(ctx context.Context) *Future[struct{}] {
	return c.barrier(ctx, nil)
}

// barrier is Barrier in res's generation, or in the next one when res is nil.
func (c *Communicator) barrier(ctx context.Context, res *Reservation) *Future[struct{}] {
	return startOp(ctx, c, res, opBarrier, 0, 0, func(r *opRun) (struct{}, error) {
		p, me := c.Size(), c.here
		for dist, step := 1, uint32(0); dist < p; dist, step = dist<<1, step+1 {
			if err := r.send(step, (me+dist)%p, nil); err != nil {
				return struct{}{}, err
			}
			if _, err := r.recv(step, (me-dist+p)%p); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
}

// InclusiveScan gives site i the element-wise reduction with op of the data
// of sites 0..i, in site order (op need only be associative). It takes
// ceil(log2 p) rounds.
func (c *Communicator) InclusiveScan(ctx context.Context, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	return c.inclusiveScan(ctx, nil, data, op)
}

// inclusiveScan is InclusiveScan in res's generation, or in the next one when res is nil.
func (c *Communicator) inclusiveScan(ctx context.Context, res *Reservation, data []float64, op func(a, b float64) float64) *Future[[]float64] {
	n := uint64(len(data))
	return startOp(ctx, c, res, opInclusiveScan, n, n, func(r *opRun) ([]float64, error) {
		incl, _, err := r.scan(data, op, false)
		return incl, err
	})
}

// ExclusiveScan gives site i the element-wise reduction with op of init
// and the data of sites 0..i-1, in site order; site 0 gets init in every
// element. It takes ceil(log2 p) rounds.
func (c *Communicator) ExclusiveScan(ctx context.Context, data []float64, init float64, op func(a, b float64) float64) *Future[[]float64] {
	return c.exclusiveScan(ctx, nil, data, init, op)
}

// exclusiveScan is ExclusiveScan in res's generation, or in the next one when res is nil.
func (c *Communicator) exclusiveScan(ctx context.Context, res *Reservation, data []float64, init float64, op func(a, b float64) float64) *Future[[]float64] {
	n := uint64(len(data))
	return startOp(ctx, c, res, opExclusiveScan, n, n, func(r *opRun) ([]float64, error) {
		_, excl, err := r.scan(data, op, true)
		if err != nil {
			return nil, err
		}
		out := hugepage.Float64s(len(data))
		for i := range out {
			out[i] = init
			if excl != nil {
				out[i] = op(init, excl[i])
			}
		}
		return out, nil
	})
}

// scan is Hillis-Steele: after the round with distance d, incl holds the
// reduction of sites me-2d+1..me and excl that of sites below me (nil while
// there are none).
func (r *opRun) scan(data []float64, op func(a, b float64) float64, wantExcl bool) (incl, excl []float64, err error) {
	p, me := r.c.Size(), r.c.here
	incl = clone(data)
	for dist, step := 1, uint32(0); dist < p; dist, step = dist<<1, step+1 {
		if me+dist < p {
			if err := r.send(step, me+dist, incl); err != nil {
				return nil, nil, err
			}
		}
		if me-dist >= 0 {
			v, err := r.recvN(step, me-dist, len(incl))
			if err != nil {
				return nil, nil, err
			}
			if wantExcl {
				if excl == nil {
					excl = clone(v)
				} else {
					combineInto(excl, v, excl, op)
				}
			}
			combineInto(incl, v, incl, op)
			r.recycle(v)
		}
	}
	return incl, excl, nil
}

// AllToAll sends block j of data to site j and gives every site the blocks
// addressed to it, in site order. data holds Size() blocks of equal length,
// and every site passes the same length. Each site sends p-1 messages at
// once.
func (c *Communicator) AllToAll(ctx context.Context, data []float64) *Future[[]float64] {
	return c.allToAll(ctx, nil, data)
}

// allToAll is AllToAll in res's generation, or in the next one when res is nil.
func (c *Communicator) allToAll(ctx context.Context, res *Reservation, data []float64) *Future[[]float64] {
	n := uint64(len(data))
	return startOp(ctx, c, res, opAllToAll, n, n, func(r *opRun) ([]float64, error) {
		p, me := c.Size(), c.here
		if len(data)%p != 0 {
			return nil, fmt.Errorf("%d elements do not split into %d equal blocks", len(data), p)
		}
		m := len(data) / p
		out := hugepage.Float64s(len(data))
		copy(out[me*m:(me+1)*m], data[me*m:(me+1)*m])
		for i := 1; i < p; i++ {
			to := (me + i) % p
			if err := r.send(0, to, data[to*m:(to+1)*m]); err != nil {
				return nil, err
			}
		}
		for i := 1; i < p; i++ {
			from := (me - i + p) % p
			v, err := r.recvN(0, from, m)
			if err != nil {
				return nil, err
			}
			copy(out[from*m:(from+1)*m], v)
			r.recycle(v)
		}
		return out, nil
	})
}

// AllToAllV is AllToAll with blocks of any length: blocks[j] (len(blocks)
// must be Size()) goes to site j, and the result's element j is the block
// site j addressed to this one.
func (c *Communicator) AllToAllV(ctx context.Context, blocks [][]float64) *Future[[][]float64] {
	return c.allToAllV(ctx, nil, blocks)
}

// allToAllV is AllToAllV in res's generation, or in the next one when res is nil.
func (c *Communicator) allToAllV(ctx context.Context, res *Reservation, blocks [][]float64) *Future[[][]float64] {
	return startOp(ctx, c, res, opAllToAllV, anyCount, anyCount, func(r *opRun) ([][]float64, error) {
		p, me := c.Size(), c.here
		if len(blocks) != p {
			return nil, fmt.Errorf("%d blocks for %d sites", len(blocks), p)
		}
		out := make([][]float64, p)
		out[me] = append([]float64{}, blocks[me]...)
		for i := 1; i < p; i++ {
			to := (me + i) % p
			if err := r.send(0, to, blocks[to]); err != nil {
				return nil, err
			}
		}
		for i := 1; i < p; i++ {
			from := (me - i + p) % p
			v, err := r.recv(0, from)
			if err != nil {
				return nil, err
			}
			if v == nil {
				v = []float64{}
			}
			out[from] = v
		}
		return out, nil
	})
}
