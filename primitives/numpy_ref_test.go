package primitives

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// NumPy's semantics computed in Go on whole arrays: the references the
// tests of the axis reductions, broadcasting and the array forms compare
// gathered results with.

// forLocalities5 runs test once for each job size 1 to 5.
func forLocalities5(t *testing.T, test func(t *testing.T, n int)) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) { test(t, n) })
	}
}

// unravel returns the index of linear position g in shape.
func unravel(shape []int, g int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = g % shape[d]
			g /= shape[d]
		}
	}
	return idx
}

// ravel is the linear position of idx in shape.
func ravel(shape, idx []int) int {
	g := 0
	for d := range shape {
		g = g*shape[d] + idx[d]
	}
	return g
}

// npReduce is numpy's reduction of the whole array x along axis (or
// AllAxes) with keepdims.
func npReduce(x []float64, shape []int, red Reduction, axis int, keepdims bool) ([]int, []float64) {
	nd := len(shape)
	reduced := make([]bool, nd)
	keep := slices.Clone(shape)
	for d := range nd {
		if axis == AllAxes || d == axis || d == axis+nd {
			reduced[d] = true
			keep[d] = 1
		}
	}
	groups := make([][]float64, size(keep))
	idxs := make([][]int, size(keep))
	for g, v := range x {
		idx := unravel(shape, g)
		o := slices.Clone(idx)
		pos := 0
		for d := range nd {
			if reduced[d] {
				o[d] = 0
				pos = idx[d]
			}
		}
		if axis == AllAxes {
			pos = g
		}
		k := ravel(keep, o)
		groups[k] = append(groups[k], v)
		idxs[k] = append(idxs[k], pos)
	}
	out := make([]float64, len(groups))
	for k, vs := range groups {
		out[k] = refOne(red, vs, idxs[k])
	}
	var oshape []int
	for d := range nd {
		if keepdims || !reduced[d] {
			oshape = append(oshape, keep[d])
		}
	}
	if oshape == nil {
		oshape = []int{}
	}
	return oshape, out
}

// refOne reduces one group of values (at indices idx) as numpy does.
func refOne(red Reduction, vs []float64, idx []int) float64 {
	switch red {
	case SumOf, MeanOf:
		s := 0.0
		for _, v := range vs {
			s += v
		}
		if red == MeanOf {
			return s / float64(len(vs))
		}
		return s
	case ProdOf:
		p := 1.0
		for _, v := range vs {
			p *= v
		}
		return p
	case VarOf, StdOf:
		m := refOne(MeanOf, vs, idx)
		s := 0.0
		for _, v := range vs {
			s += (v - m) * (v - m)
		}
		s /= float64(len(vs))
		if red == StdOf {
			return math.Sqrt(s)
		}
		return s
	case MinOf, MaxOf:
		m := vs[0]
		for _, v := range vs {
			if math.IsNaN(v) || math.IsNaN(m) {
				m = math.NaN()
			} else if (red == MinOf) == (v < m) && v != m {
				m = v
			}
		}
		return m
	case ArgMinOf, ArgMaxOf:
		b := 0
		for i, v := range vs {
			if math.IsNaN(vs[b]) {
				break
			}
			if math.IsNaN(v) || (red == ArgMinOf && v < vs[b]) || (red == ArgMaxOf && v > vs[b]) {
				b = i
			}
		}
		return float64(idx[b])
	case AnyOf:
		for _, v := range vs {
			if v != 0 {
				return 1
			}
		}
		return 0
	}
	for _, v := range vs {
		if v == 0 {
			return 0
		}
	}
	return 1
}

// refBroadcast is numpy's element-wise fn of the whole arrays xs (with
// their shapes) broadcast together.
func refBroadcast(fn func(vs []float64) float64, shapes [][]int, xs ...[]float64) ([]int, []float64) {
	out, ok := broadcastShapes(shapes...)
	if !ok {
		return nil, nil
	}
	res := make([]float64, size(out))
	vs := make([]float64, len(xs))
	for g := range res {
		idx := unravel(out, g)
		for i, s := range shapes {
			off := len(out) - len(s)
			xi := make([]int, len(s))
			for d := range s {
				if s[d] != 1 {
					xi[d] = idx[off+d]
				}
			}
			vs[i] = xs[i][ravel(s, xi)]
		}
		res[g] = fn(vs)
	}
	return out, res
}

// gathered returns the whole of a (AllGather) and checks it against
// shape and want within 1e-12 relative.
func gathered(ctx context.Context, e *Env, a *runtime.Future[*Array], shape []int, want []float64, what string) error {
	w, err := AllGather(ctx, e, a).Get(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return sameWhole(w, shape, want, what)
}

// sameWhole compares w with shape and want within 1e-12 relative.
func sameWhole(w Whole, shape []int, want []float64, what string) error {
	if !slices.Equal(w.Shape, shape) {
		return fmt.Errorf("%s: shape %v, want %v", what, w.Shape, shape)
	}
	if len(w.Data) != len(want) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(w.Data), len(want))
	}
	for i := range want {
		if !closeTo(w.Data[i], want[i], 1e-12) {
			return fmt.Errorf("%s: element %d (%v): got %v, want %v", what, i, unravel(shape, i), w.Data[i], want[i])
		}
	}
	return nil
}

// unevenTiling is an explicit row tiling of shape on n localities whose
// tiles differ in size by more than one row (the last tile takes the
// rest), or false when the rows are too few.
func unevenTiling(shape []int, n int) (Layout, bool) {
	d := max(0, len(shape)-2)
	if shape[d] < 2*n {
		return Layout{}, false
	}
	blocks := make([]annotate.Block, n)
	start := 0
	for i := range n {
		stop := start + 1
		if i == n-1 {
			stop = shape[d]
		}
		b := annotate.WholeBlock(shape)
		b[d] = annotate.Span{Start: start, Stop: stop}
		blocks[i] = b
		start = stop
	}
	t, err := annotate.NewUser(shape, blocks)
	if err != nil {
		return Layout{}, false
	}
	return Layout{Tiling: &t}, true
}

// testLayouts are layouts (every kind that fits, an overlap, an uneven
// explicit tiling) of shape on n localities.
func testLayouts(shape []int, n int) []Layout {
	ls := layouts(shape, n)
	if l, ok := unevenTiling(shape, n); ok {
		ls = append(ls, l)
	}
	return ls
}

// layoutName names a layout in test messages.
func layoutName(shape []int, l Layout) string {
	if l.Tiling != nil {
		return fmt.Sprintf("shape %v, explicit tiling %v", shape, l.Tiling.Tiles)
	}
	return describe(shape, l)
}
