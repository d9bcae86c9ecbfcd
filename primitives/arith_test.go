package primitives

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// TestArithSplitOverCores checks the written-out loops of Add, Sub, Mul
// and Div and Map's split over the cores, on arrays large enough to be
// split: conformable operands, a row vector and a column broadcast against
// a matrix, and a Scalar, element for element against the operator.
func TestArithSplitOverCores(t *testing.T) {
	const rows, cols = 100000, 3
	shape := []int{rows, cols}
	xs := globalData(shape, 1, -2, 2)
	ys := globalData(shape, 2, 0.5, 3)
	row := globalData([]int{cols}, 3, 0.5, 3)
	col := globalData([]int{rows, 1}, 4, 0.5, 3)
	ops := []struct {
		name string
		f    func(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array]
		op   func(x, y float64) float64
	}{
		{"Add", Add, func(x, y float64) float64 { return x + y }},
		{"Sub", Sub, func(x, y float64) float64 { return x - y }},
		{"Mul", Mul, func(x, y float64) float64 { return x * y }},
		{"Div", Div, func(x, y float64) float64 { return x / y }},
		{"Map2", func(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
			return Map2(ctx, e, a, b, func(x, y float64) float64 { return x*y - x })
		}, func(x, y float64) float64 { return x*y - x }},
	}
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			// Generous: the race detector and a loaded machine slow it.
			runJobWith(t, n, 3*time.Minute, runtime.Config{PoisonReleased: true}, func(ctx context.Context, e *Env) error {
				x, err := FromGlobal(e, shape, Tiled(annotate.Row), xs)
				if err != nil {
					return err
				}
				y, err := FromGlobal(e, shape, Tiled(annotate.Row), ys)
				if err != nil {
					return err
				}
				r, err := FromGlobal(e, []int{cols}, Tiled(annotate.Row), row)
				if err != nil {
					return err
				}
				c, err := FromGlobal(e, []int{rows, 1}, Tiled(annotate.Row), col)
				if err != nil {
					return err
				}
				xf := runtime.MakeReady(x)
				operands := []struct {
					what string
					b    *runtime.Future[*Array]
					at   func(i, j int) float64
				}{
					{"a matrix", runtime.MakeReady(y), func(i, j int) float64 { return ys[i*cols+j] }},
					{"a row", runtime.MakeReady(r), func(_, j int) float64 { return row[j] }},
					{"a column", runtime.MakeReady(c), func(i, _ int) float64 { return col[i] }},
					{"a scalar", Scalar(ctx, e, 1.5), func(_, _ int) float64 { return 1.5 }},
				}
				for _, o := range ops {
					for _, b := range operands {
						z, err := o.f(ctx, e, xf, b.b).Get(ctx)
						if err != nil {
							return err
						}
						want := make([]float64, rows*cols)
						for i := range rows {
							for j := range cols {
								want[i*cols+j] = o.op(xs[i*cols+j], b.at(i, j))
							}
						}
						if err := checkTile(z, want, fmt.Sprintf("%s of a matrix and %s", o.name, b.what)); err != nil {
							return err
						}
						z.Release()
					}
				}
				m, err := Map(ctx, e, xf, func(v float64) float64 { return 2*v + 1 }).Get(ctx)
				if err != nil {
					return err
				}
				want := make([]float64, len(xs))
				for i, v := range xs {
					want[i] = 2*v + 1
				}
				return checkTile(m, want, "Map")
			})
		})
	}
}
