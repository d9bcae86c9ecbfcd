package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// ZScore returns (a - a.mean(axis)) / a.std(axis), scipy.stats.zscore(a,
// axis, ddof=0): every element's distance from the mean along axis (or
// AllAxes) in standard deviations; a constant line gives NaN, as scipy's.
// It is (x - MeanAxis(x, axis, true)) / StdAxis(x, axis, true) to the
// last bits of the mean, without their cost: one pass
// over a's tile for the mean and the variance together (the var
// reduction's partials hold both; Chan's formula merges them), one
// AllGather of those partials, and one pass writing the result — no
// intermediate array, no broadcast operand fetched. The result is tiled
// like a. The gathered partials cover the whole reduced shape, so it
// suits reducing along a long axis (the columns of a row-tiled matrix).
func ZScore(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int) *runtime.Future[*Array] {
	const op = "ZScore"
	k := e.derive()
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (*Array, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		p, err := planAxis(e, VarOf, x, axis, true)
		if err != nil {
			return nil, err
		}
		acc, err := mergedPartials(ctx, e, r, x, p, varK{})
		if err != nil {
			return nil, err
		}
		mean, std := make([]float64, len(acc)/3), make([]float64, len(acc)/3)
		for i := range mean {
			mean[i] = acc[3*i+1]
			std[i] = varK{std: true}.final(acc[3*i:3*i+3], p.n)
		}
		h := x.ann.Local().Halo
		_, h3 := pad3(x.ann.Tiling.Shape, h)
		n := [3]int{h3[0].Len(), h3[1].Len(), h3[2].Len()}
		data := e.tileToSet(h.Size()) // every element is set below
		prefault(data)
		xa := aligned{data: x.data, st: [3]int{n[1] * n[2], n[2], 1}}
		ma, sa := keepAligned(mean, p.keep, h), keepAligned(std, p.keep, h)
		split(n[0]*n[1], max(1, parallelGrain/max(1, n[2])), func(lo, hi int) {
			zscoreRows(data, n, xa, ma, sa, lo, hi)
		})
		return e.newArray(op, derivedAnnotation(k, x), data)
	})
}

// keepAligned is the whole array data of the keepdims shape keep as an
// operand of the block h of the full shape: stride 0 along the reduced
// axes.
func keepAligned(data []float64, keep []int, h annotate.Block) aligned {
	nd := len(keep)
	var st [3]int
	off, s := 0, 1
	for d := nd - 1; d >= 0; d-- {
		if keep[d] != 1 {
			st[3-nd+d] = s
			off += h[d].Start * s
		}
		s *= keep[d]
	}
	return aligned{data: data[off:], st: st}
}

// zscoreRows sets out = (x - m) / s over the rows [lo, hi) of a block of
// extents n (x contiguous; m and s with the same strides).
func zscoreRows(out []float64, n [3]int, x, m, s aligned, lo, hi int) {
	nc := n[2]
	for q := lo; q < hi; q++ {
		p, r := q/n[1], q%n[1]
		xo := p*x.st[0] + r*x.st[1]
		mo := p*m.st[0] + r*m.st[1]
		dst, xs := out[q*nc:q*nc+nc], x.data[xo:xo+nc]
		if m.st[2] == 0 {
			mv, sv := m.data[mo], s.data[mo]
			for c := range dst {
				dst[c] = (xs[c] - mv) / sv
			}
			continue
		}
		ms, ss := m.data[mo:mo+nc], s.data[mo:mo+nc]
		for c := range dst {
			dst[c] = (xs[c] - ms[c]) / ss[c]
		}
	}
}
