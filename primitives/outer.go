package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Outer returns the outer product of the vectors a (m) and b (n), the m x
// n matrix of a[i]*b[j] (numpy's outer). The longer vector keeps its
// tiling: with m >= n the result is row-tiled as a's owned spans and each
// locality fetches the parts of b it does not own (the fewer bytes), else
// column-tiled as b's. No collective is used; the result is a derived
// result of a.
func Outer(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	const op = "Outer"
	k := e.derive()
	return runtime.Dataflow2(ctx, func(ctx context.Context, x, y *Array) (*Array, error) {
		if err := pinBoth(e, op, x, y); err != nil {
			return nil, err
		}
		defer x.unpin()
		defer y.unpin()
		if x.NDim() != 1 || y.NDim() != 1 {
			return nil, e.errorf(op, "arrays %s of shape %v and %s of shape %v: want two vectors", x.Name(), x.ann.Tiling.Shape, y.Name(), y.ann.Tiling.Shape)
		}
		m, n := x.Size(), y.Size()
		byRows := m >= n
		split, whole := x, y
		if !byRows {
			split, whole = y, x
		}
		if err := e.adopt(op, whole); err != nil {
			return nil, err
		}
		shape := []int{m, n}
		t := annotate.Tiling{Shape: shape, Tiles: make([]annotate.Tile, len(split.ann.Tiling.Tiles))}
		for i, tl := range split.ann.Tiling.Tiles {
			blk := annotate.WholeBlock(shape)
			if byRows {
				blk[0] = tl.Owned[0]
			} else {
				blk[1] = tl.Owned[0]
			}
			t.Tiles[i] = annotate.Tile{Owned: blk, Halo: blk.Clone()}
		}
		all, mem, err := e.blockOf(ctx, op, whole, annotate.WholeBlock(whole.ann.Tiling.Shape))
		if err != nil {
			return nil, err
		}
		defer mem.Release()
		own := split.ann.Local()
		part := split.data[own.Owned[0].Start-own.Halo[0].Start : own.Owned[0].Stop-own.Halo[0].Start]
		h := t.Tiles[e.Locality()].Halo
		data := e.tileToSet(h.Size())
		rows, cols := part, all
		if !byRows {
			rows, cols = all, part
		}
		for i, u := range rows {
			for j, v := range cols {
				data[i*len(cols)+j] = u * v
			}
		}
		ann := derivedAnnotation(k, x, y)
		ann.Tiling = t
		return e.newArray(op, ann, data)
	}, a, b)
}
