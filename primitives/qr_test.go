package primitives

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

func TestQR(t *testing.T) {
	for loc := 1; loc <= 6; loc++ {
		for _, gr := range luGrids(loc) {
			for _, sh := range [][3]int{{23, 19, 3}, {40, 13, 2}} {
				m, n, nb := sh[0], sh[1], sh[2]
				t.Run(fmt.Sprintf("%d-localities/%dx%d/%dx%d,nb=%d", loc, gr[0], gr[1], m, n, nb), func(t *testing.T) {
					ag := globalData([]int{m, n}, uint64(m*n), -1, 1)
					runJob(t, loc, func(ctx context.Context, e *Env) error {
						a, err := toCyclic(ctx, e, []int{m, n}, ag, nb, gr[0], gr[1])
						if err != nil {
							return err
						}
						f, err := QR(ctx, e, a, true).Get(ctx)
						if err != nil {
							return err
						}
						if len(f.Tau) != n {
							return fmt.Errorf("%d taus, want %d", len(f.Tau), n)
						}
						qr, err := gatheredDense(ctx, e, runtime.MakeReady(f.QR))
						if err != nil {
							return err
						}
						q, err := gatheredDense(ctx, e, runtime.MakeReady(f.Q))
						if err != nil {
							return err
						}
						r := mat.NewDense(n, n, nil)
						for i := range n {
							for j := i; j < n; j++ {
								r.Set(i, j, qr.At(i, j))
							}
						}
						var prod, qtq mat.Dense
						prod.Mul(q, r)
						if res := relResidual(mat.NewDense(m, n, ag), &prod); !(res <= tolerance(m)) {
							return fmt.Errorf("‖A − QR‖/‖A‖ = %g, want at most %g", res, tolerance(m))
						}
						qtq.Mul(q.T(), q)
						qtq.Sub(&qtq, mat.NewDiagDense(n, ones(n)))
						if d := mat.Norm(&qtq, 2); !(d <= tolerance(m)) {
							return fmt.Errorf("‖QᵀQ − I‖ = %g, want at most %g", d, tolerance(m))
						}
						return nil
					})
				})
			}
		}
	}
}

func TestQRBadInput(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		wide, err := toCyclic(ctx, e, []int{6, 9}, globalData([]int{6, 9}, 1, 0, 1), 2, 1, 2)
		if err != nil {
			return err
		}
		if _, err := QR(ctx, e, wide, false).Get(ctx); err == nil || !strings.Contains(err.Error(), "want at least as many rows as columns") {
			return fmt.Errorf("6x9: got %v", err)
		}
		g := globalData([]int{9, 6}, 1, 0, 1)
		g[20] = math.NaN()
		nan, err := toCyclic(ctx, e, []int{9, 6}, g, 2, 1, 2)
		if err != nil {
			return err
		}
		if _, err := QR(ctx, e, nan, true).Get(ctx); err == nil || !strings.Contains(err.Error(), "holds NaN or Inf") {
			return fmt.Errorf("a NaN: got %v", err)
		}
		return nil
	})
}
