package primitives

import (
	"context"
	"math"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// The reductions along an axis follow numpy's sum(a, axis, keepdims) and
// its kin: axis is one axis (negative counts from the end) or AllAxes
// (numpy's axis=None); keepdims keeps the reduced axes with length 1.
//
// Along an axis no tile splits (a row-tiled matrix summed along its
// columns, axis 1) nothing is communicated: each locality reduces the rows
// its tile holds, and the result is tiled like the remaining axes (tile i
// holds the projection of a's tile i, overlap included).
//
// Along an axis a tiling splits (a row-tiled matrix summed along axis 0,
// or any axis of a sym grid), each locality reduces the elements it owns
// into partial results for the whole result (an empty partial where it
// owns nothing of a position) and one AllGather of the Env's communicator
// brings every locality all partials, which it combines in locality order.
// The result is replicated: its owned blocks are cut as by Row tiling (or
// Column, Sym, Page, the first that fits), and every tile holds the whole
// result as its overlap. Why: the reduced array is smaller than its input
// by the reduced axes' length; the next step usually broadcasts it against
// the input (x - x.mean(0)), which then moves nothing; and combining in
// one order everywhere makes every copy bit-identical. A result with fewer
// elements than localities along every dimension has no tiling on the
// localities (tiles are never empty); ReduceAxisWhole returns it as a
// Whole on every locality instead.
//
// Partial results: a sum, a product, a minimum or maximum (NaN wins, as
// numpy's), (index, value) for argmin and argmax, and (count, mean, sum of
// squared deviations) for var and std, combined by Chan's formula so the
// result is as accurate as numpy's two passes. ArgMinAxis and ArgMaxAxis
// hold their indices as float64 elements, exact integers (up to 2^53):
// the index along the reduced axis, or the row-major linear index of the
// whole array for AllAxes; the first on a tie, the first NaN if any.
// Var and Std divide by the count (numpy's ddof=0).
//
// The collective is reserved when the reduction is called, like every
// collective of this package; a reduction that needs none leaves it
// unused on every locality alike.

// AllAxes as the axis of a reduction reduces every axis (numpy's
// axis=None).
const AllAxes = math.MinInt

// Reduction names a reduction along an axis.
type Reduction int

// The reductions of ReduceAxis.
const (
	SumOf Reduction = iota + 1
	ProdOf
	MeanOf
	VarOf
	StdOf
	MinOf
	MaxOf
	ArgMinOf
	ArgMaxOf
	AnyOf
	AllOf
)

var reductionNames = [...]string{"", "SumAxis", "ProdAxis", "MeanAxis", "VarAxis", "StdAxis", "MinAxis", "MaxAxis", "ArgMinAxis", "ArgMaxAxis", "AnyAxis", "AllAxis"}

// String returns the primitive's name (SumAxis, ...).
func (r Reduction) String() string {
	if r < SumOf || r > AllOf {
		return "Reduction(?)"
	}
	return reductionNames[r]
}

// numpyName is numpy's name of the reduction, for its errors.
func (r Reduction) numpyName() string {
	switch r {
	case MinOf:
		return "minimum"
	case MaxOf:
		return "maximum"
	case ArgMinOf:
		return "argmin"
	case ArgMaxOf:
		return "argmax"
	}
	return r.String()
}

// axisPlan is what a reduction of an array along axes does: the result's
// shape, the keepdims shape of the input with the reduced axes of length
// 1 (padded to 3-D), which padded axes are reduced, and whether a tile
// splits a reduced axis.
type axisPlan struct {
	red   Reduction
	shape []int // the result's
	keep  []int // the input's shape with 1 along the reduced axes
	red3  [3]bool
	all   bool // every axis: indices are linear
	n     int  // elements reduced into each result element
	split bool
}

// planAxis checks axis against x and plans the reduction.
func planAxis(e *Env, red Reduction, x *Array, axis int, keepdims bool) (axisPlan, error) {
	op := red.String()
	xs := x.ann.Tiling.Shape
	nd := len(xs)
	p := axisPlan{red: red, keep: slices.Clone(xs), all: axis == AllAxes, n: 1}
	if red < SumOf || red > AllOf {
		return p, e.errorf("ReduceAxis", "array %s: unknown reduction %d", x.Name(), int(red))
	}
	if nd == 0 {
		return p, e.errorf(op, "array %s is 0-d: nothing to reduce", x.Name())
	}
	if !p.all && (axis < -nd || axis >= nd) {
		return p, e.errorf(op, "array %s of shape %v: axis %d is out of bounds for array of dimension %d", x.Name(), xs, axis, nd)
	}
	if !p.all && axis < 0 {
		axis += nd
	}
	for d := range nd {
		if !p.all && d != axis {
			continue
		}
		p.red3[3-nd+d] = true
		p.keep[d] = 1
		p.n *= xs[d]
		for _, t := range x.ann.Tiling.Tiles {
			if t.Owned[d].Start != 0 || t.Owned[d].Stop != xs[d] {
				p.split = true
			}
		}
	}
	switch {
	case keepdims:
		p.shape = slices.Clone(p.keep)
	case p.all:
		p.shape = []int{}
	default:
		p.shape = slices.Delete(slices.Clone(xs), axis, axis+1)
	}
	if p.n == 0 && red >= MinOf && red <= ArgMaxOf {
		return p, e.errorf(op, "array %s of shape %v: zero-size array to reduction operation %s which has no identity", x.Name(), xs, red.numpyName())
	}
	return p, nil
}

// partials reduces the elements of x's tile in block b (held by it) into
// the partial results over block o of the keepdims shape, width k.width()
// per element.
func partials[K kernel](k K, x *Array, p axisPlan, b, o annotate.Block) []float64 {
	w := k.width()
	st := make([]float64, o.Size()*w)
	for i := 0; i < len(st); i += w {
		k.init(st[i : i+w])
	}
	s3, h3 := pad3(x.ann.Tiling.Shape, x.ann.Local().Halo)
	_, b3 := pad3(x.ann.Tiling.Shape, b)
	_, o3 := pad3(p.keep, o)
	// Strides of the held data and of the partials, per padded axis; a
	// reduced axis does not move through the partials.
	hst := [3]int{h3[1].Len() * h3[2].Len(), h3[2].Len(), 1}
	ost := [3]int{o3[1].Len() * o3[2].Len(), o3[2].Len(), 1}
	var idx [3]int // position of a coordinate along the reduced axis
	for d := range 3 {
		if p.red3[d] {
			ost[d] = 0
			idx[d] = 1
		}
	}
	if p.all {
		idx = [3]int{s3[1] * s3[2], s3[2], 1}
	}
	start := func(d, c int) int { // offset of coordinate c of padded axis d in o
		if p.red3[d] {
			return 0
		}
		return (c - o3[d].Start) * ost[d]
	}
	cs := ost[2] * w // the partials' step along the innermost axis
	for i := b3[0].Start; i < b3[0].Stop; i++ {
		for j := b3[1].Start; j < b3[1].Stop; j++ {
			row := x.data[(i-h3[0].Start)*hst[0]+(j-h3[1].Start)*hst[1]-h3[2].Start+b3[2].Start:]
			so := (start(0, i) + start(1, j) + start(2, b3[2].Start)) * w
			ix := i*idx[0] + j*idx[1] + b3[2].Start*idx[2]
			for _, v := range row[:b3[2].Len()] {
				k.add(st[so:so+w], v, ix)
				so += cs
				ix += idx[2]
			}
		}
	}
	return st
}

// partialsOf is partials with k's concrete type, so that the kernel's
// methods are called directly in the loop, or rowsPartials where it
// applies.
func partialsOf(k kernel, x *Array, p axisPlan, b, o annotate.Block) []float64 {
	if st, ok := rowsPartials(k, x, p, b, o); ok {
		return st // whole rows at a time (axis_rows.go)
	}
	switch k := k.(type) {
	case sumK:
		return partials(k, x, p, b, o)
	case prodK:
		return partials(k, x, p, b, o)
	case varK:
		return partials(k, x, p, b, o)
	case extK:
		return partials(k, x, p, b, o)
	case argK:
		return partials(k, x, p, b, o)
	}
	return partials(k, x, p, b, o)
}

// finals turns partials of width w into result elements.
func finals(k kernel, st []float64, n int, out []float64) {
	w := k.width()
	for i := range out {
		out[i] = k.final(st[i*w:(i+1)*w], n)
	}
}

// project maps a block of the input to the keepdims shape: the reduced
// axes become [0, 1).
func (p axisPlan) project(b annotate.Block) annotate.Block {
	out := b.Clone()
	off := 3 - len(b)
	for d := range out {
		if p.red3[off+d] {
			out[d] = annotate.Span{Start: 0, Stop: 1}
		}
	}
	return out
}

// squeeze drops the reduced axes of a block of the keepdims shape when the
// result does not keep them.
func (p axisPlan) squeeze(b annotate.Block) annotate.Block {
	if len(p.shape) == len(p.keep) {
		return b
	}
	var out annotate.Block
	off := 3 - len(b)
	for d := range b {
		if !p.red3[off+d] {
			out = append(out, b[d])
		}
	}
	if out == nil {
		out = annotate.Block{}
	}
	return out
}

// reduceWhole reduces x's owned elements into partials over the whole
// result and combines every locality's through r: the whole result, on
// every locality.
func reduceWhole(ctx context.Context, e *Env, r *runtime.Reservation, x *Array, p axisPlan) ([]float64, error) {
	k := kernelOf(p.red)
	acc, err := mergedPartials(ctx, e, r, x, p, k)
	if err != nil {
		return nil, err
	}
	out := make([]float64, annotate.WholeBlock(p.keep).Size())
	finals(k, acc, p.n, out)
	return out, nil
}

// mergedPartials is every locality's partials of kernel k over the whole
// result, merged in locality order (reduceWhole before the finals).
func mergedPartials(ctx context.Context, e *Env, r *runtime.Reservation, x *Array, p axisPlan, k kernel) ([]float64, error) {
	whole := annotate.WholeBlock(p.keep)
	mine := partialsOf(k, x, p, x.ann.Local().Owned, whole)
	all, err := r.AllGather(ctx, mine).Get(ctx)
	if err != nil {
		return nil, e.wrap(p.red.String(), err)
	}
	n := len(mine)
	if len(all) != n*e.Size() {
		return nil, e.errorf(p.red.String(), "array %s: gathered %d partial values, want %d", x.Name(), len(all), n*e.Size())
	}
	acc := all[:n:n]
	w := k.width()
	for i := 1; i < e.Size(); i++ {
		o := all[i*n : (i+1)*n]
		for j := 0; j < n; j += w {
			k.merge(acc[j:j+w], o[j:j+w])
		}
	}
	return acc, nil
}

// replicatedTiling is the tiling of a replicated result of shape: owned
// blocks as the first tiling kind that fits, every tile holding the whole.
func replicatedTiling(shape []int, n int) (annotate.Tiling, bool) {
	if len(shape) == 0 {
		return scalarTiling(n), true
	}
	for _, kind := range []annotate.Kind{annotate.Row, annotate.Column, annotate.Sym, annotate.Page} {
		t, err := annotate.New(kind, shape, n)
		if err != nil {
			continue
		}
		for i := range t.Tiles {
			t.Tiles[i].Halo = annotate.WholeBlock(shape)
		}
		return t, true
	}
	return annotate.Tiling{}, false
}

// ReduceAxis returns the reduction red of a along axis (or AllAxes),
// keeping the reduced axes with length 1 when keepdims is true (see the
// top of this file for the tiling and the communication).
func ReduceAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], red Reduction, axis int, keepdims bool) *runtime.Future[*Array] {
	op := red.String()
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
		p, err := planAxis(e, red, x, axis, keepdims)
		if err != nil {
			return nil, err
		}
		ann := derivedAnnotation(k, x)
		if p.split {
			t, ok := replicatedTiling(p.shape, e.Size())
			if !ok {
				return nil, e.errorf(op, "array %s of shape %v: the result of shape %v has too few elements to be tiled over %d localities (ReduceAxisWhole returns it whole)", x.Name(), x.ann.Tiling.Shape, p.shape, e.Size())
			}
			whole, err := reduceWhole(ctx, e, r, x, p)
			if err != nil {
				return nil, err
			}
			data := e.tileToSet(len(whole))
			copy(data, whole)
			ann.Tiling = t
			return e.newArray(op, ann, data)
		}
		// No tile splits a reduced axis: each reduces its held block.
		t := annotate.Tiling{Shape: p.shape, Tiles: make([]annotate.Tile, len(x.ann.Tiling.Tiles))}
		for i, tl := range x.ann.Tiling.Tiles {
			t.Tiles[i] = annotate.Tile{Owned: p.squeeze(p.project(tl.Owned)), Halo: p.squeeze(p.project(tl.Halo))}
		}
		h := x.ann.Local().Halo
		kern := kernelOf(red)
		st := partialsOf(kern, x, p, h, p.project(h))
		data := e.tileToSet(len(st) / kern.width())
		finals(kern, st, p.n, data)
		ann.Tiling = t
		return e.newArray(op, ann, data)
	})
}

// ReduceAxisWhole is ReduceAxis returning the result as a Whole on every
// locality, whatever its size: always one AllGather of the partials.
func ReduceAxisWhole(ctx context.Context, e *Env, a *runtime.Future[*Array], red Reduction, axis int, keepdims bool) *runtime.Future[Whole] {
	op := red.String()
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (Whole, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return Whole{}, err
		}
		if err := x.pin(e, op); err != nil {
			return Whole{}, err
		}
		defer x.unpin()
		p, err := planAxis(e, red, x, axis, keepdims)
		if err != nil {
			return Whole{}, err
		}
		data, err := reduceWhole(ctx, e, r, x, p)
		if err != nil {
			return Whole{}, err
		}
		return Whole{Shape: p.shape, Data: data}, nil
	})
}

// SumAxis returns the sum of a along axis (numpy's sum(a, axis, keepdims)).
func SumAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, SumOf, axis, keepdims)
}

// ProdAxis returns the product of a along axis (numpy's prod).
func ProdAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, ProdOf, axis, keepdims)
}

// MeanAxis returns the mean of a along axis (numpy's mean).
func MeanAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, MeanOf, axis, keepdims)
}

// VarAxis returns the variance of a along axis (numpy's var, ddof=0).
func VarAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, VarOf, axis, keepdims)
}

// StdAxis returns the standard deviation of a along axis (numpy's std,
// ddof=0).
func StdAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, StdOf, axis, keepdims)
}

// MinAxis returns the minimum of a along axis (numpy's amin; NaN wins).
func MinAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, MinOf, axis, keepdims)
}

// MaxAxis returns the maximum of a along axis (numpy's amax, Phylanx's
// amax_d(a, axis, keepdims); NaN wins).
func MaxAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, MaxOf, axis, keepdims)
}

// ArgMinAxis returns the indices of the minima of a along axis (numpy's
// argmin), as float64 exact integers.
func ArgMinAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, ArgMinOf, axis, keepdims)
}

// ArgMaxAxis returns the indices of the maxima of a along axis (numpy's
// argmax, Phylanx's argmax_d(a, axis)), as float64 exact integers.
func ArgMaxAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, ArgMaxOf, axis, keepdims)
}

// AnyAxis returns 1 where some element of a along axis is not 0, else 0
// (numpy's any; NaN counts as true).
func AnyAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, AnyOf, axis, keepdims)
}

// AllAxis returns 1 where every element of a along axis is not 0, else 0
// (numpy's all).
func AllAxis(ctx context.Context, e *Env, a *runtime.Future[*Array], axis int, keepdims bool) *runtime.Future[*Array] {
	return ReduceAxis(ctx, e, a, AllOf, axis, keepdims)
}
