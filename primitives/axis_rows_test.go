package primitives

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// exactColumnMoments returns the columns' mean and variance (ddof 0) of a
// rows x cols matrix computed in 256-bit floating point: the reference
// numpy's two passes approximate.
func exactColumnMoments(x []float64, rows, cols int) (mean, variance []float64) {
	mean, variance = make([]float64, cols), make([]float64, cols)
	for c := range cols {
		s := new(big.Float).SetPrec(256)
		for r := range rows {
			s.Add(s, new(big.Float).SetPrec(256).SetFloat64(x[r*cols+c]))
		}
		m := new(big.Float).SetPrec(256).Quo(s, new(big.Float).SetPrec(256).SetInt64(int64(rows)))
		q := new(big.Float).SetPrec(256)
		for r := range rows {
			d := new(big.Float).SetPrec(256).SetFloat64(x[r*cols+c])
			d.Sub(d, m)
			q.Add(q, d.Mul(d, d))
		}
		q.Quo(q, new(big.Float).SetPrec(256).SetInt64(int64(rows)))
		mean[c], _ = m.Float64()
		variance[c], _ = q.Float64()
	}
	return mean, variance
}

// TestColumnMomentsByRows checks the reductions over whole rows (many
// segments and var pieces) against the exact moments, on data far from
// zero that a one-pass sum of squares would ruin, within 1e-12
// relatively, and that every locality's replica is the same.
func TestColumnMomentsByRows(t *testing.T) {
	const rows, cols = 40000, 5
	shape := []int{rows, cols}
	global := globalData(shape, 11, -1, 1)
	for i := range global {
		global[i] = 1e3 + 3*global[i] + float64(i%cols)
	}
	mean, variance := exactColumnMoments(global, rows, cols)
	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				for _, l := range []Layout{Tiled(annotate.Row), {Kind: annotate.Row, Halo: 1}, Tiled(annotate.Column)} {
					if _, err := annotate.New(l.Kind, shape, n); err != nil {
						continue
					}
					x, err := FromGlobal(e, shape, l, global)
					if err != nil {
						return err
					}
					xf := runtime.MakeReady(x)
					for _, c := range []struct {
						red  Reduction
						want func(j int) float64
					}{
						{SumOf, func(j int) float64 { return mean[j] * rows }},
						{MeanOf, func(j int) float64 { return mean[j] }},
						{VarOf, func(j int) float64 { return variance[j] }},
						{StdOf, func(j int) float64 { return math.Sqrt(variance[j]) }},
					} {
						w, err := ReduceAxisWhole(ctx, e, xf, c.red, 0, false).Get(ctx)
						if err != nil {
							return err
						}
						for j, got := range w.Data {
							want := c.want(j)
							if math.Abs(got-want) > 1e-12*math.Abs(want) {
								return fmt.Errorf("%v of %s column %d: %.17g, want %.17g", c.red, describe(shape, l), j, got, want)
							}
						}
						part := make([]float64, n*cols) // each its own place: the sum is exact
						copy(part[e.Locality()*cols:], w.Data)
						all, err := AllSum(ctx, e, part).Get(ctx)
						if err != nil {
							return err
						}
						for i := 1; i < n; i++ {
							for j := range cols {
								if all[i*cols+j] != all[j] {
									return fmt.Errorf("%v of %s column %d: locality %d has %v, locality 0 %v", c.red, describe(shape, l), j, i, all[i*cols+j], all[j])
								}
							}
						}
					}
				}
				return nil
			})
		})
	}
}

// TestZScore checks ZScore against the exact moments along axis 0 (within
// 1e-11) and against Sub and Div of MeanAxis and StdAxis along every axis,
// on every layout (within 1e-10: the data's offset of 1e3 leaves both
// their last bits apart).
func TestZScore(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, shape := range [][]int{{3000, 4}, {9, 6}, {4, 5, 6}} {
				global := globalData(shape, 5, -1, 1)
				for i := range global {
					global[i] = 1e3 + 3*global[i]
				}
				for _, l := range layouts(shape, n) {
					x, err := FromGlobal(e, shape, l, global)
					if err != nil {
						return err
					}
					xf := runtime.MakeReady(x)
					for _, axis := range append([]int{AllAxes}, allDims(len(shape))...) {
						what := fmt.Sprintf("ZScore axis %d of %s", axis, describe(shape, l))
						z, err := ZScore(ctx, e, xf, axis).Get(ctx)
						if err != nil {
							return fmt.Errorf("%s: %v", what, err)
						}
						if !z.ann.Tiling.Equal(x.ann.Tiling) {
							return fmt.Errorf("%s: tiled %v, want %v", what, z.ann.Tiling, x.ann.Tiling)
						}
						mf, sf := MeanAxis(ctx, e, xf, axis, true), StdAxis(ctx, e, xf, axis, true)
						if axis == AllAxes { // one element: no tiling of it on n localities
							m, err := ReduceAxisWhole(ctx, e, xf, MeanOf, axis, false).Get(ctx)
							if err != nil {
								return err
							}
							s, err := ReduceAxisWhole(ctx, e, xf, StdOf, axis, false).Get(ctx)
							if err != nil {
								return err
							}
							mf, sf = Scalar(ctx, e, m.Data[0]), Scalar(ctx, e, s.Data[0])
						}
						ref, err := Div(ctx, e, Sub(ctx, e, xf, mf), sf).Get(ctx)
						if err != nil {
							return err
						}
						got, want := z.Local(), ref.Local()
						for i := range want {
							if math.Abs(got[i]-want[i]) > 1e-10*math.Max(1, math.Abs(want[i])) {
								return fmt.Errorf("%s: element %d of the tile is %.17g, want %.17g", what, i, got[i], want[i])
							}
						}
						if axis == 0 && len(shape) == 2 && n == 2 && l.Kind == annotate.Row && l.Halo == 0 {
							mean, variance := exactColumnMoments(global, shape[0], shape[1])
							first := x.ann.Local().Owned[0].Start
							for i, v := range got {
								r, c := first+i/shape[1], i%shape[1]
								w := (global[r*shape[1]+c] - mean[c]) / math.Sqrt(variance[c])
								if math.Abs(v-w) > 1e-11*math.Max(1, math.Abs(w)) {
									return fmt.Errorf("%s: element (%d, %d) is %.17g, want %.17g", what, r, c, v, w)
								}
							}
						}
						z.Release()
						ref.Release()
					}
				}
			}
			return nil
		})
	})
}
