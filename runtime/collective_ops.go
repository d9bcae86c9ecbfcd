package runtime

import (
	"context"
	"math"
	"reflect"

	"github.com/tessera-amt/tessera/runtime/internal/collective"
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

// combiner returns op on slices for the algorithms: dst[i] = op(lo[i],
// hi[i]), lo holding the values of the lower sites. The four reductions of
// this package run as plain loops, not a call per element: the same
// operation on the same operands, so the same bits, in a fraction of the
// time.
func combiner(op func(a, b float64) float64) collective.Combine {
	return func(dst, lo, hi []float64) { combineInto(dst, lo, hi, op) }
}

// combineInto is combiner's function.
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
		if v, ok, err := r.nodeAllReduce(data, op); ok {
			return v, err
		}
		if v, ok, err := r.nodeLargeAllReduce(data, op); ok {
			return v, err
		}
		return collective.AllReduce(r, data, combiner(op), ring)
	})
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
		if v, ok, err := r.nodeLargeAllGather(data); ok {
			return v, err
		}
		return collective.AllGather(r, data, ring)
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
		if ok, err := r.nodeBarrier(); ok {
			return struct{}{}, err
		}
		return struct{}{}, collective.Barrier(r)
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
		return collective.InclusiveScan(r, data, combiner(op))
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
		return collective.ExclusiveScan(r, data, init, combiner(op), op)
	})
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
		return collective.AllToAll(r, data)
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
		return collective.AllToAllV(r, blocks)
	})
}
