package primitives

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// Slicing follows numpy: Slice(a, block) is a[r0:r1, c0:c1] (the same
// number of dimensions, start included, stop excluded, no steps), and
// SliceRow(a, i) and SliceColumn(a, j) are a[i, :] and a[:, j] of a 2-D
// array, one dimension fewer; a negative i or j counts from the end as in
// numpy. Unlike numpy's, a distributed slice is a new array (arrays are
// never changed, so a copy is as good as a view) laid out by its own
// Layout: a few rows of a row-tiled matrix would leave most localities
// without an element of it. Each locality fetches the part of its new tile
// that other localities own and copies its own, as Retile does. View is the
// numpy view of a locality's own tile: a sub-block sharing its memory.

// Slice returns block b of a as a new array of b's extents laid out by l
// (slice_d). b needs a's number of dimensions and must lie inside its
// shape, with no empty span.
func Slice(ctx context.Context, e *Env, a *runtime.Future[*Array], b annotate.Block, l Layout) *runtime.Future[*Array] {
	b = b.Clone()
	return slice(ctx, e, "Slice", a, func(x *Array) (annotate.Block, []int, error) {
		if err := checkBlock(x.ann.Tiling.Shape, b); err != nil {
			return nil, nil, err
		}
		kept := make([]int, len(b))
		for d := range b {
			kept[d] = d
		}
		return b, kept, nil
	}, l)
}

// SliceRow returns row i of the 2-D array a as a vector laid out by l
// (slice_row_d, numpy's a[i, :]).
func SliceRow(ctx context.Context, e *Env, a *runtime.Future[*Array], i int, l Layout) *runtime.Future[*Array] {
	return slice(ctx, e, "SliceRow", a, func(x *Array) (annotate.Block, []int, error) {
		return line(x, i, 0)
	}, l)
}

// SliceColumn returns column j of the 2-D array a as a vector laid out by
// l (slice_column_d, numpy's a[:, j]).
func SliceColumn(ctx context.Context, e *Env, a *runtime.Future[*Array], j int, l Layout) *runtime.Future[*Array] {
	return slice(ctx, e, "SliceColumn", a, func(x *Array) (annotate.Block, []int, error) {
		return line(x, j, 1)
	}, l)
}

// line is the block of row (d = 0) or column (d = 1) i of the 2-D array x
// and the dimension of x the vector keeps.
func line(x *Array, i, d int) (annotate.Block, []int, error) {
	shape := x.ann.Tiling.Shape
	what := [2]string{"row", "column"}[d]
	if len(shape) != 2 {
		return nil, nil, fmt.Errorf("a %s of an array of shape %v: want a 2-D array", what, shape)
	}
	if i < 0 {
		i += shape[d]
	}
	if i < 0 || i >= shape[d] {
		return nil, nil, fmt.Errorf("%s %d of an array of shape %v: out of range", what, i, shape)
	}
	b := annotate.WholeBlock(shape)
	b[d] = annotate.Span{Start: i, Stop: i + 1}
	return b, []int{1 - d}, nil
}

// slice makes the array of block b of a (which pick chooses, with the
// dimensions of a the result keeps; the others' spans have length 1) laid
// out by l. In row-major order the elements of b are
// those of the result, so each target tile is filled over its block
// mapped back to a's indices (tile.Halo of the result -> a block of a).
func slice(ctx context.Context, e *Env, op string, a *runtime.Future[*Array], pick func(x *Array) (annotate.Block, []int, error), l Layout) *runtime.Future[*Array] {
	k := e.derive()
	return runtime.Then(ctx, a, func(ctx context.Context, x *Array) (*Array, error) {
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		if err := e.adopt(op, x); err != nil {
			return nil, err
		}
		b, kept, err := pick(x)
		if err != nil {
			return nil, e.errorf(op, "array %s: %v", x.Name(), err)
		}
		shape := make([]int, len(kept))
		for i, d := range kept {
			shape[i] = b[d].Len()
		}
		t, err := e.tiling(op, shape, l)
		if err != nil {
			return nil, fmt.Errorf("%w (slicing %v of array %s)", err, b, x.Name())
		}
		// The held block of this locality's new tile, in a's indices.
		h := t.Tiles[e.Locality()].Halo
		src := b.Clone()
		for i, d := range kept {
			src[d] = annotate.Span{Start: b[d].Start + h[i].Start, Stop: b[d].Start + h[i].Stop}
		}
		var pieces []annotate.Piece
		for i, st := range x.ann.Tiling.Tiles {
			if p, ok := st.Owned.Intersect(src); ok {
				pieces = append(pieces, annotate.Piece{From: i, To: e.Locality(), Block: p})
			}
		}
		data := e.tile(h.Size())
		if err := e.fillPieces(ctx, x, pieces, src, data); err != nil {
			return nil, e.wrap(op, err)
		}
		ann := derivedAnnotation(k, x)
		ann.Tiling = t
		if l.Name != "" {
			ann.Name = l.Name
		}
		return e.newArray(op, ann, data)
	})
}

// View is a sub-block of a locality's tile sharing the tile's memory (a
// numpy view): element (i, j, k) of the block, counted from its first
// element, is Data[i*Strides[0] + j*Strides[1] + k*Strides[2]] for a 3-D
// array (fewer indices for fewer dimensions). It must not be changed.
type View struct {
	Block   annotate.Block // in global indices
	Data    []float64
	Strides []int
}

// View returns block b (global indices) of this locality's tile, which
// must hold it (LocalBlock), without copying: valid until Release, as
// Local is.
func (a *Array) View(b annotate.Block) (View, error) {
	if a.released.Load() {
		return View{}, a.usedAfterRelease("View")
	}
	h := a.ann.Local().Halo
	if len(b) != len(h) || !h.Contains(b) || b.Empty() {
		return View{}, fmt.Errorf("primitives: View of array %s on locality %d: block %v is not a non-empty block of the tile %v held here", a.Name(), a.ann.Locality, b, h)
	}
	strides := make([]int, len(h))
	s := 1
	for d := len(h) - 1; d >= 0; d-- {
		strides[d] = s
		s *= h[d].Len()
	}
	off := 0
	for d := range h {
		off += (b[d].Start - h[d].Start) * strides[d]
	}
	end := off + 1
	for d := range b {
		end += (b[d].Len() - 1) * strides[d]
	}
	a.exposed.Store(true)
	return View{Block: b.Clone(), Data: a.data[off:end:end], Strides: strides}, nil
}

// At returns the element at idx, counted from the view's first element.
func (v View) At(idx ...int) float64 {
	o := 0
	for d, i := range idx {
		o += i * v.Strides[d]
	}
	return v.Data[o]
}

// Dense returns a 2-D view as a gonum matrix sharing its memory.
func (v View) Dense() (*mat.Dense, error) {
	if len(v.Block) != 2 {
		return nil, fmt.Errorf("primitives: Dense of a view of %v: want a 2-D view", v.Block)
	}
	var m mat.Dense
	m.SetRawMatrix(blas64.General{Rows: v.Block[0].Len(), Cols: v.Block[1].Len(), Stride: v.Strides[0], Data: v.Data})
	return &m, nil
}
