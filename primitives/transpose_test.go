package primitives

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// refTranspose reverses the dimensions of g, a row-major array of shape.
func refTranspose(shape []int, g []float64) []float64 {
	s := make([]int, 3)
	copy(s[3-len(shape):], shape)
	for i := range 3 - len(shape) {
		s[i] = 1
	}
	out := make([]float64, len(g))
	for p := range s[0] {
		for r := range s[1] {
			for c := range s[2] {
				out[(c*s[1]+r)*s[0]+p] = g[(p*s[1]+r)*s[2]+c]
			}
		}
	}
	return out
}

func TestTranspose(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, shape := range testShapes {
				for _, l := range layouts(shape, n) {
					what := describe(shape, l)
					g := globalData(shape, 4, -1, 1)
					x, err := FromGlobal(e, shape, l, g)
					if err != nil {
						return err
					}
					y, err := Transpose(ctx, e, runtime.MakeReady(x)).Get(ctx)
					if err != nil {
						return fmt.Errorf("%s: %v", what, err)
					}
					ts := slices.Clone(shape)
					slices.Reverse(ts)
					if !slices.Equal(y.Shape(), ts) {
						return fmt.Errorf("%s: transposed shape %v, want %v", what, y.Shape(), ts)
					}
					if err := checkTile(y, refTranspose(shape, g), "Transpose "+what); err != nil {
						return err
					}
					if y.Annotation().Generation != 1 {
						return fmt.Errorf("%s: generation %d, want 1", what, y.Annotation().Generation)
					}
					// A row-tiled matrix becomes column-tiled.
					if len(shape) == 2 && l.Kind == annotate.Row && l.Halo == 0 {
						col, _ := annotate.New(annotate.Column, ts, n)
						if !y.Annotation().Tiling.Equal(col) {
							return fmt.Errorf("%s: transposed tiling %v, want the column tiling", what, y.Annotation())
						}
					}
				}
			}
			return nil
		})
	})
}
