package primitives

import (
	"context"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// TransposeAxes returns a with its dimensions permuted by axes (numpy's
// transpose(a, axes)): dimension i of the result is dimension axes[i] of
// a; a negative axis counts from the end. Every locality permutes its own
// tile and the tiles' spans are permuted alike, so nothing is
// communicated; a row-tiled (pages, rows, columns) array with axes (1, 0,
// 2) becomes page-tiled. Transpose is TransposeAxes with the axes
// reversed. axes that are not a permutation of a's dimensions fail the
// future.
func TransposeAxes(ctx context.Context, e *Env, a *runtime.Future[*Array], axes []int) *runtime.Future[*Array] {
	const op = "TransposeAxes"
	axes = slices.Clone(axes)
	k := e.derive()
	return runtime.Then(ctx, a, func(_ context.Context, x *Array) (*Array, error) {
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		nd := x.NDim()
		perm, ok := permutation(axes, nd)
		if !ok {
			return nil, e.errorf(op, "array %s of shape %v: axes %v are not a permutation of its %d dimensions", x.Name(), x.ann.Tiling.Shape, axes, nd)
		}
		permute := func(b annotate.Block) annotate.Block {
			out := make(annotate.Block, nd)
			for i, d := range perm {
				out[i] = b[d]
			}
			return out
		}
		ann := derivedAnnotation(k, x)
		t := &ann.Tiling
		shape := make([]int, nd)
		for i, d := range perm {
			shape[i] = x.ann.Tiling.Shape[d]
		}
		t.Shape = shape
		for i, tl := range x.ann.Tiling.Tiles {
			t.Tiles[i] = annotate.Tile{Owned: permute(tl.Owned), Halo: permute(tl.Halo)}
		}
		h := x.ann.Local().Halo
		oh := permute(h)
		// Strides of the result's tile, by dimension of a.
		var ost [3]int
		s := 1
		for i := nd - 1; i >= 0; i-- {
			ost[3-nd+perm[i]] = s
			s *= oh[i].Len()
		}
		_, h3 := pad3(x.ann.Tiling.Shape, h)
		data := e.tileToSet(len(x.data))
		src := 0
		for p := range h3[0].Len() {
			for r := range h3[1].Len() {
				base := p*ost[0] + r*ost[1]
				for c := range h3[2].Len() {
					data[base+c*ost[2]] = x.data[src]
					src++
				}
			}
		}
		return e.newArray(op, ann, data)
	})
}

// permutation checks that axes permute nd dimensions and returns them
// with negative axes counted from the end.
func permutation(axes []int, nd int) ([]int, bool) {
	if len(axes) != nd {
		return nil, false
	}
	perm := make([]int, nd)
	seen := make([]bool, nd)
	for i, d := range axes {
		if d < 0 {
			d += nd
		}
		if d < 0 || d >= nd || seen[d] {
			return nil, false
		}
		seen[d] = true
		perm[i] = d
	}
	return perm, true
}
