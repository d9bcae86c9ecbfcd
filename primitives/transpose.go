package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/runtime"
)

// Transpose returns a with its dimensions reversed (transpose_d): rows and
// columns swap for a 2-D array, so a row-tiled array becomes column-tiled;
// a 1-D array is unchanged and a 3-D array (pages, rows, columns) becomes
// (columns, rows, pages), as numpy's transpose without axes (TransposeAxes
// takes them). Every locality transposes its own tile and the spans swap
// in the annotation (annotate.Tiling.Transpose); nothing is communicated.
// The generation is incremented.
func Transpose(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	k := e.derive()
	return runtime.Then(ctx, a, func(_ context.Context, x *Array) (*Array, error) {
		if err := x.pin(e, "Transpose"); err != nil {
			return nil, err
		}
		defer x.unpin()
		ann := derivedAnnotation(k, x)
		ann.Tiling = ann.Tiling.Transpose()
		data := e.tile(len(x.data))
		// The tile's extents, padded to 3-D: (p, r, c) -> (c, r, p).
		_, hs := pad3(x.ann.Tiling.Shape, x.ann.Local().Halo)
		np, nr, nc := hs[0].Len(), hs[1].Len(), hs[2].Len()
		if x.NDim() == 2 { // (1, r, c) -> (1, c, r)
			for i := range nr {
				for j := range nc {
					data[j*nr+i] = x.data[i*nc+j]
				}
			}
			return e.newArray("Transpose", ann, data)
		}
		for p := range np {
			for r := range nr {
				for c := range nc {
					data[(c*nr+r)*np+p] = x.data[(p*nr+r)*nc+c]
				}
			}
		}
		return e.newArray("Transpose", ann, data)
	})
}
