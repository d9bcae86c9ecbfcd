package primitives

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

func TestDiag(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				// Vector to matrix.
				vshape := []int{13}
				g := globalData(vshape, 31, -1, 1)
				want := make([]float64, 13*13)
				for i, v := range g {
					want[i*13+i] = v
				}
				for _, l := range layouts(vshape, n) {
					what := "vector, " + describe(vshape, l)
					x, err := FromGlobal(e, vshape, l, g)
					if err != nil {
						return err
					}
					y, err := Diag(ctx, e, runtime.MakeReady(x)).Get(ctx)
					if err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
					if fmt.Sprint(y.Shape()) != "[13 13]" || !strings.HasPrefix(y.Name(), x.Annotation().Name+"~") || y.Annotation().Generation != 1 {
						return fmt.Errorf("%s: result %s of shape %v", what, y.Name(), y.Shape())
					}
					if !y.OwnedBlock()[0].Contains(x.OwnedBlock()[0]) || !x.OwnedBlock()[0].Contains(y.OwnedBlock()[0]) {
						return fmt.Errorf("%s: rows %v for the vector's %v", what, y.OwnedBlock()[0], x.OwnedBlock()[0])
					}
					if err := checkTile(y, want, what); err != nil {
						return err
					}
				}
				// Matrix to vector, square, tall and wide.
				for _, shape := range [][]int{{7, 7}, {9, 5}, {5, 9}} {
					g := globalData(shape, 32, -1, 1)
					m := min(shape[0], shape[1])
					d := make([]float64, m)
					for i := range d {
						d[i] = g[i*shape[1]+i]
					}
					for _, l := range layouts(shape, n) {
						what := "matrix, " + describe(shape, l)
						x, err := FromGlobal(e, shape, l, g)
						if err != nil {
							return err
						}
						// Chained on a future that is not ready yet.
						xf := runtime.Then(ctx, runtime.MakeReady(x), func(context.Context, *Array) (*Array, error) { return x, nil })
						y, err := Diag(ctx, e, xf).Get(ctx)
						if m < n && err != nil && strings.Contains(err.Error(), "more tiles than") {
							continue // a diagonal too short for a row tiling
						}
						if err != nil {
							return fmt.Errorf("%s: %w", what, err)
						}
						if fmt.Sprint(y.Shape()) != fmt.Sprint([]int{m}) {
							return fmt.Errorf("%s: shape %v, want [%d]", what, y.Shape(), m)
						}
						if err := checkTile(y, d, what); err != nil {
							return err
						}
						// Round trip: diag(diag(x)) of a square x is its
						// diagonal part.
						if shape[0] == shape[1] {
							z, err := Diag(ctx, e, runtime.MakeReady(y)).Get(ctx)
							if err != nil {
								return fmt.Errorf("%s: diag(diag): %w", what, err)
							}
							dd := make([]float64, m*m)
							for i := range m {
								dd[i*m+i] = d[i]
							}
							if err := checkTile(z, dd, what+", diag(diag)"); err != nil {
								return err
							}
						}
					}
				}
				return nil
			})
		})
	}
}

func TestDiagErrors(t *testing.T) {
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				_, err := Diag(ctx, e, Random(ctx, e, []int{3, 4, 5}, Tiled(annotate.Page), 1)).Get(ctx)
				if err == nil || !strings.Contains(err.Error(), "array random_1/0 of shape [3 4 5]: want a vector or a matrix") {
					return fmt.Errorf("3-D: error %v", err)
				}
				_, err = Diag(ctx, e, runtime.MakeFailed[*Array](errors.New("no input"))).Get(ctx)
				if err == nil || !strings.Contains(err.Error(), "no input") {
					return fmt.Errorf("failed input: error %v", err)
				}
				// A diagonal that needs communication pairs up after them.
				x := Random(ctx, e, []int{8, 8}, Tiled(annotate.Sym), 2)
				y, err := Diag(ctx, e, x).Get(ctx)
				if err == nil && y.Shape()[0] != 8 {
					err = fmt.Errorf("shape %v, want [8]", y.Shape())
				}
				return err
			})
		})
	}
}
