package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
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
