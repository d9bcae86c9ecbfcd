package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Diag returns the diagonal of a, as numpy's diag (Listing 4's
// diag(conf_u)); the result is named as a derived result of a (its base
// name with "~k", generation + 1).
//
// A vector of n elements gives the n x n matrix with the vector on its
// diagonal, row-tiled as the vector is: locality i holds the rows of the
// elements it owns (all columns), so nothing is communicated.
//
// A matrix of r x c gives the vector of its min(r, c) diagonal elements.
// When every tile owns part of the diagonal (row or column tiling of a
// square matrix, say), locality i holds the diagonal elements its tile
// owns and nothing is communicated. Otherwise (a sym grid, where some
// tiles miss the diagonal, or a wide matrix cut in more row tiles than it
// has columns) the result is row-tiled and each locality receives its
// elements from their owners in one AllToAllV of the Env's communicator.
// Like every collective of this package it is reserved when Diag is
// called; when the tiling needs none, every locality alike leaves it
// unused.
func Diag(ctx context.Context, e *Env, v *runtime.Future[*Array]) *runtime.Future[*Array] {
	const op = "Diag"
	k := e.derive()
	r, err := e.reserve(op)
	if err != nil {
		return runtime.MakeFailed[*Array](err)
	}
	return runtime.SpawnNamed(ctx, e.rt, "primitives.Diag", func(ctx context.Context) (out *Array, err error) {
		defer func() {
			if err != nil {
				r.Cancel(err) // no effect once issued
			}
		}()
		x, err := v.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		switch x.NDim() {
		case 1:
			return diagMatrix(e, k, x)
		case 2:
			return diagVector(ctx, e, r, k, x)
		}
		return nil, e.errorf(op, "array %s of shape %v: want a vector or a matrix", x.Name(), x.ann.Tiling.Shape)
	})
}

// diagMatrix puts vector x on the diagonal of a row-tiled matrix.
func diagMatrix(e *Env, k uint64, x *Array) (*Array, error) {
	n := x.ann.Tiling.Shape[0]
	owned := make([]annotate.Block, len(x.ann.Tiling.Tiles))
	for i, t := range x.ann.Tiling.Tiles {
		owned[i] = annotate.Block{t.Owned[0], {Start: 0, Stop: n}}
	}
	t, err := annotate.NewUser([]int{n, n}, owned)
	if err != nil {
		return nil, e.errorf("Diag", "array %s: %v", x.Name(), err)
	}
	ann := derivedAnnotation(k, x)
	ann.Tiling = t
	rows := ann.Local().Owned[0]
	data := e.tile(rows.Len() * n)
	h := x.ann.Local().Halo[0]
	for r := rows.Start; r < rows.Stop; r++ {
		data[(r-rows.Start)*n+r] = x.data[r-h.Start]
	}
	return e.newArray("Diag", ann, data)
}

// diagVector takes the diagonal of matrix x.
func diagVector(ctx context.Context, e *Env, r *runtime.Reservation, k uint64, x *Array) (*Array, error) {
	const op = "Diag"
	shape := x.ann.Tiling.Shape
	m := min(shape[0], shape[1])
	// onDiag is the part of the diagonal a block holds: the indices in both
	// its row and its column span.
	onDiag := func(b annotate.Block) (annotate.Span, bool) {
		s, ok := b[0].Intersect(b[1])
		return s, ok && !s.Empty()
	}
	natural := make([]annotate.Block, len(x.ann.Tiling.Tiles))
	isNatural := true
	for i, t := range x.ann.Tiling.Tiles {
		s, ok := onDiag(t.Owned)
		if !ok {
			isNatural = false
			break
		}
		natural[i] = annotate.Block{s}
	}
	h := x.ann.Local().Halo
	at := func(i int) float64 { // diagonal element i, in the held block
		return x.data[(i-h[0].Start)*h[1].Len()+(i-h[1].Start)]
	}
	if isNatural {
		t, err := annotate.NewUser([]int{m}, natural)
		if err != nil {
			return nil, e.errorf(op, "array %s: %v", x.Name(), err)
		}
		ann := derivedAnnotation(k, x)
		ann.Tiling = t
		s := ann.Local().Owned[0]
		data := e.tile(s.Len())
		for i := s.Start; i < s.Stop; i++ {
			data[i-s.Start] = at(i)
		}
		return e.newArray(op, ann, data)
	}
	t, err := annotate.New(annotate.Row, []int{m}, e.Size())
	if err != nil {
		return nil, e.errorf(op, "array %s of shape %v: the diagonal of %d elements: %v", x.Name(), shape, m, err)
	}
	mine, _ := onDiag(x.ann.Local().Owned)
	blocks := make([][]float64, e.Size())
	for j, tile := range t.Tiles {
		if s, ok := mine.Intersect(tile.Owned[0]); ok {
			b := make([]float64, 0, s.Len())
			for i := s.Start; i < s.Stop; i++ {
				b = append(b, at(i))
			}
			blocks[j] = b
		}
	}
	got, err := r.AllToAllV(ctx, blocks).Get(ctx)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	ann := derivedAnnotation(k, x)
	ann.Tiling = t
	want := ann.Local().Owned[0]
	data := e.tile(want.Len())
	for i, tile := range x.ann.Tiling.Tiles {
		d, ok := onDiag(tile.Owned)
		if !ok {
			continue
		}
		s, ok := d.Intersect(want)
		if !ok {
			continue
		}
		if len(got[i]) != s.Len() {
			return nil, e.errorf(op, "array %s: locality %d sent %d diagonal elements for %v, want %d", x.Name(), i, len(got[i]), s, s.Len())
		}
		copy(data[s.Start-want.Start:], got[i])
	}
	return e.newArray(op, ann, data)
}
