package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// VDot returns the inner product of the vectors a and b (dot_d of two 1-D
// arrays): each locality multiplies the elements it owns of a with the
// same elements of b — its own when b's tile holds them, fetched from b's
// owners otherwise, so a and b may be tiled differently — and one
// AllReduce sums the partial products. a and b must be 1-D of one length.
func VDot(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[float64] {
	const op = "VDot"
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (float64, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return 0, err
		}
		y, err := b.Get(ctx)
		if err != nil {
			return 0, err
		}
		if err := pinBoth(e, op, x, y); err != nil {
			return 0, err
		}
		defer x.unpin()
		defer y.unpin()
		if err := e.adopt(op, y); err != nil {
			return 0, err
		}
		if x.NDim() != 1 || y.NDim() != 1 || x.Size() != y.Size() {
			return 0, e.errorf(op, "arrays %s of shape %v and %s of shape %v: want two vectors of one length (Dot multiplies matrices)",
				x.Name(), x.ann.Tiling.Shape, y.Name(), y.ann.Tiling.Shape)
		}
		owned := x.OwnedBlock()
		xs := x.ownedData()
		ys, mem, err := e.blockOf(ctx, op, y, owned)
		if err != nil {
			return 0, err
		}
		defer mem.Release()
		s := 0.0
		if len(xs) > 0 {
			s = blas64.Dot(blas64.Vector{N: len(xs), Data: xs, Inc: 1}, blas64.Vector{N: len(ys), Data: ys, Inc: 1})
		}
		v, err := r.AllReduce(ctx, []float64{s}, runtime.ReduceSum).Get(ctx)
		if err != nil {
			return 0, e.wrap(op, err)
		}
		return v[0], nil
	})
}

// Dot returns the matrix product of a and b (dot_d): a 2-D matrix of m×k
// times a vector of k (gemv) or a matrix of k×n (gemm). a must be tiled by
// rows (every tile holds whole rows: annotate.Row, or explicit row blocks,
// with or without an overlap) and b may be tiled in any way: each locality
// fetches the blocks of b it does not hold (all of b: every row of a meets
// every element of b) and multiplies its held rows with gonum's BLAS. The
// result is tiled by rows like a — the same owned and held rows — and named
// like an element-wise result. Two vectors are VDot's; other shapes, a
// mismatched inner dimension or a not row-tiled a fail the future.
func Dot(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	const op = "Dot"
	k := e.derive()
	return runtime.Dataflow2(ctx, func(ctx context.Context, x, y *Array) (*Array, error) {
		if err := pinBoth(e, op, x, y); err != nil {
			return nil, err
		}
		defer x.unpin()
		defer y.unpin()
		if err := e.adopt(op, y); err != nil {
			return nil, err
		}
		xs, ys := x.ann.Tiling.Shape, y.ann.Tiling.Shape
		switch {
		case len(xs) == 1 && len(ys) == 1:
			return nil, e.errorf(op, "arrays %s and %s are vectors: their inner product is VDot's", x.Name(), y.Name())
		case len(xs) != 2 || len(ys) > 2:
			return nil, e.errorf(op, "arrays %s of shape %v and %s of shape %v: want a matrix times a vector or a matrix", x.Name(), xs, y.Name(), ys)
		case xs[1] != ys[0]:
			return nil, e.errorf(op, "arrays %s of shape %v and %s of shape %v are not conformable: %d columns against %d rows",
				x.Name(), xs, y.Name(), ys, xs[1], ys[0])
		}
		for i, t := range x.ann.Tiling.Tiles {
			if t.Halo[1].Start != 0 || t.Halo[1].Stop != xs[1] {
				return nil, e.errorf(op, "array %s of shape %v: locality %d holds %v, not whole rows; want a row-tiled matrix (Retile it to annotate.Row)",
					x.Name(), xs, i, t.Halo)
			}
		}
		// The result: a's rows, b's columns (none for a vector).
		shape := []int{xs[0]}
		if len(ys) == 2 {
			shape = append(shape, ys[1])
		}
		t := annotate.Tiling{Shape: shape, Tiles: make([]annotate.Tile, len(x.ann.Tiling.Tiles))}
		for i, xt := range x.ann.Tiling.Tiles {
			t.Tiles[i] = annotate.Tile{Owned: rowsOf(shape, xt.Owned[0]), Halo: rowsOf(shape, xt.Halo[0])}
		}
		if err := t.Validate(); err != nil {
			return nil, e.errorf(op, "array %s: the result's tiling: %v", x.Name(), err)
		}
		whole, mem, err := e.blockOf(ctx, op, y, annotate.WholeBlock(ys))
		if err != nil {
			return nil, err
		}
		defer mem.Release()
		h := t.Tiles[e.Locality()].Halo
		data := e.tile(h.Size())
		rows := h[0].Len()
		if rows > 0 && xs[1] > 0 {
			A := blas64.General{Rows: rows, Cols: xs[1], Data: x.data, Stride: xs[1]}
			if len(ys) == 1 {
				blas64.Gemv(blas.NoTrans, 1, A, blas64.Vector{N: ys[0], Data: whole, Inc: 1}, 0, blas64.Vector{N: rows, Data: data, Inc: 1})
			} else if ys[1] > 0 {
				B := blas64.General{Rows: ys[0], Cols: ys[1], Data: whole, Stride: ys[1]}
				blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, A, B, 0, blas64.General{Rows: rows, Cols: ys[1], Data: data, Stride: ys[1]})
			}
		}
		ann := derivedAnnotation(k, x, y)
		ann.Tiling = t
		return e.newArray(op, ann, data)
	}, a, b)
}

// rowsOf is the block of rows r of an array of shape (1-D or 2-D): all
// its columns.
func rowsOf(shape []int, r annotate.Span) annotate.Block {
	b := annotate.WholeBlock(shape)
	b[0] = r
	return b
}

// blockOf returns the elements of block b of y, row-major: y's own memory
// when its tile is exactly b (mem nil), a copy of it when the tile holds
// b, fetched from the owners otherwise, in mem, which the caller releases
// when done with it.
func (e *Env) blockOf(ctx context.Context, op string, y *Array, b annotate.Block) (data []float64, mem *runtime.Tile, err error) {
	h := y.ann.Local().Halo
	if h.Equal(b) {
		return y.data, nil, nil
	}
	mem = runtime.NewTile(e.rt, b.Size(), runtime.TileOptions{})
	out := mem.Float64s()
	if len(out) == 0 {
		return out, mem, nil
	}
	if h.Contains(b) {
		copyBlock(out, b, y.data, h, b)
		return out, mem, nil
	}
	if err := e.gatherBlock(ctx, op, y, b, mem); err != nil {
		mem.Release()
		return nil, nil, err
	}
	return out, mem, nil
}
