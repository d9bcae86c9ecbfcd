package primitives

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Updates are numpy's assignments to part of an array — a[r0:r1, c0:c1] =
// v, a[i, :] = v, a[:, j] = v, Listing 4's X_local[u] = … — as new
// arrays: arrays never change, so the result is a new generation of a
// (named as a derived result, tiled like a). The value is an array (or a
// Scalar) that broadcasts to the part's shape, as numpy's assignment
// broadcasts; FillBlock sets a number.
//
// Each locality whose tile (with its overlap) meets the part copies its
// tile and writes the part's elements it holds, fetching the value's
// blocks it lacks (like an element-wise operation); a tile the part does
// not meet is shared with a, not copied: the result's tile is a's memory,
// which stays in use until both arrays are dropped (both count it in
// Env.Counters' array memory). No collective is used.

// SetBlock returns a with block b (a's number of dimensions, inside its
// shape) set to v broadcast to b's extents.
func SetBlock(ctx context.Context, e *Env, a *runtime.Future[*Array], b annotate.Block, v *runtime.Future[*Array]) *runtime.Future[*Array] {
	b = b.Clone()
	return update(ctx, e, "SetBlock", a, v, func(x *Array) (annotate.Block, []int, error) {
		return b, allDims(len(b)), checkBlock(x.ann.Tiling.Shape, b)
	})
}

// FillBlock returns a with every element of block b set to value.
func FillBlock(ctx context.Context, e *Env, a *runtime.Future[*Array], b annotate.Block, value float64) *runtime.Future[*Array] {
	return SetBlock(ctx, e, a, b, Scalar(ctx, e, value))
}

// SetRow returns the 2-D array a with row i (negative counts from the
// end) set to v, which broadcasts to a row (numpy's a[i, :] = v).
func SetRow(ctx context.Context, e *Env, a *runtime.Future[*Array], i int, v *runtime.Future[*Array]) *runtime.Future[*Array] {
	return update(ctx, e, "SetRow", a, v, func(x *Array) (annotate.Block, []int, error) { return line(x, i, 0) })
}

// SetColumn returns the 2-D array a with column j set to v, which
// broadcasts to a column (numpy's a[:, j] = v).
func SetColumn(ctx context.Context, e *Env, a *runtime.Future[*Array], j int, v *runtime.Future[*Array]) *runtime.Future[*Array] {
	return update(ctx, e, "SetColumn", a, v, func(x *Array) (annotate.Block, []int, error) { return line(x, j, 1) })
}

func allDims(n int) []int {
	d := make([]int, n)
	for i := range d {
		d[i] = i
	}
	return d
}

// update sets the part of a that pick chooses (a block of a, and the
// dimensions of a the part's shape keeps; the others have length 1) to v.
func update(ctx context.Context, e *Env, op string, a, v *runtime.Future[*Array], pick func(x *Array) (annotate.Block, []int, error)) *runtime.Future[*Array] {
	k := e.derive()
	return runtime.Dataflow2(ctx, func(ctx context.Context, x, y *Array) (*Array, error) {
		if err := pinBoth(e, op, x, y); err != nil {
			return nil, err
		}
		defer x.unpin()
		defer y.unpin()
		b, kept, err := pick(x)
		if err != nil {
			return nil, e.errorf(op, "array %s: %v", x.Name(), err)
		}
		part := make([]int, len(kept))
		for i, d := range kept {
			part[i] = b[d].Len()
		}
		if out, ok := broadcastShapes(part, y.ann.Tiling.Shape); !ok || !slices.Equal(out, part) {
			return nil, e.errorf(op, "array %s of shape %v, part %v: value %s of shape %v: could not broadcast input array from shape %s into shape %s",
				x.Name(), x.ann.Tiling.Shape, b, y.Name(), y.ann.Tiling.Shape, numpyShape(y.ann.Tiling.Shape), numpyShape(part))
		}
		if err := e.adopt(op, y); err != nil {
			return nil, err
		}
		ann := derivedAnnotation(k, x, y)
		ann.Tiling = x.ann.Tiling.Clone()
		h := x.ann.Local().Halo
		in, ok := h.Intersect(b)
		if !ok {
			return e.shareTile(op, ann, x)
		}
		// The part's block this tile holds, in the part's coordinates.
		ph := make(annotate.Block, len(kept))
		for i, d := range kept {
			ph[i] = annotate.Span{Start: in[d].Start - b[d].Start, Stop: in[d].Stop - b[d].Start}
		}
		al, err := e.align(ctx, op, y, part, ph)
		if err != nil {
			return nil, err
		}
		defer al.mem.Release()
		vals := make([]float64, in.Size())
		_, p3 := pad3(part, ph)
		zip2(vals, [3]int{p3[0].Len(), p3[1].Len(), p3[2].Len()}, al, al, func(v, _ float64) float64 { return v })
		data := e.tileToSet(len(x.data))
		copy(data, x.data)
		copyBlock(data, h, vals, in, in)
		return e.newArray(op, ann, data)
	}, a, v)
}

// shareTile makes the array of ann over x's tile, without a copy: x's
// memory stays in use (a hold on x) until the new array is dropped and
// unreachable.
func (e *Env) shareTile(op string, ann annotate.Annotation, x *Array) (*Array, error) {
	if !x.hold() {
		return nil, e.errorf(op, "array %s was dropped", x.Name())
	}
	s := &arrayState{ann: ann, data: x.data}
	if err := e.publish(op, s); err != nil {
		x.unhold()
		return nil, fmt.Errorf("%w (sharing the tile of %s)", err, x.Name())
	}
	// The program may have seen the memory through the new array: it goes
	// back for reuse only if x itself is released by Release.
	goruntime.AddCleanup(s, func(old *arrayState) {
		old.exposed.Store(true)
		old.unhold()
	}, x.arrayState)
	return e.handle(s), nil
}
