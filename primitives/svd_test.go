package primitives

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// gonumValues returns the singular values of the m x n row-major g by
// gonum's SVD.
func gonumValues(t *testing.T, m, n int, g []float64) []float64 {
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(m, n, g), mat.SVDNone) {
		t.Fatal("gonum's SVD did not converge")
	}
	return svd.Values(nil)
}

// checkOrthonormal checks ‖UᵀU − I‖ ≤ tol for the gathered u.
func checkOrthonormal(u *mat.Dense, tol float64) error {
	_, k := u.Dims()
	var utu mat.Dense
	utu.Mul(u.T(), u)
	utu.Sub(&utu, mat.NewDiagDense(k, ones(k)))
	if d := mat.Norm(&utu, 2); !(d <= tol) {
		return fmt.Errorf("‖UᵀU − I‖ = %g, want at most %g", d, tol)
	}
	return nil
}

func TestSVDTall(t *testing.T) {
	for loc := 1; loc <= 6; loc++ {
		for _, sh := range tsqrShapes {
			m, n := sh[0], sh[1]
			t.Run(fmt.Sprintf("%d-localities/%dx%d", loc, m, n), func(t *testing.T) {
				ag := globalData([]int{m, n}, uint64(m+1), -1, 1)
				want := gonumValues(t, m, n, ag)
				runJob(t, loc, func(ctx context.Context, e *Env) error {
					a, err := FromGlobal(e, []int{m, n}, Tiled(annotate.Row), ag)
					if err != nil {
						return err
					}
					f, err := SVDTall(ctx, e, runtime.MakeReady(a), true).Get(ctx)
					if err != nil {
						return err
					}
					for i, s := range f.Values {
						if math.Abs(s-want[i]) > tolerance(m)*want[0] {
							return fmt.Errorf("σ_%d = %v, gonum %v", i, s, want[i])
						}
					}
					w, err := AllGather(ctx, e, runtime.MakeReady(f.U)).Get(ctx)
					if err != nil {
						return err
					}
					u, _ := w.Dense()
					if err := checkOrthonormal(u, tolerance(m)); err != nil {
						return err
					}
					var usv mat.Dense
					usv.Mul(u, mat.NewDiagDense(n, f.Values))
					usv.Mul(&usv, f.V.T())
					if res := relResidual(mat.NewDense(m, n, ag), &usv); !(res <= tolerance(m)) {
						return fmt.Errorf("‖A − UΣVᵀ‖/‖A‖ = %g", res)
					}
					return nil
				})
			})
		}
	}
}

// decaying returns an m x n matrix with singular values 2^-i and random
// singular vectors.
func decaying(m, n int, seed uint64) []float64 {
	var qu, qv mat.QR
	qu.Factorize(mat.NewDense(m, n, globalData([]int{m, n}, seed, -1, 1)))
	qv.Factorize(mat.NewDense(n, n, globalData([]int{n, n}, seed+1, -1, 1)))
	var u, v mat.Dense
	qu.QTo(&u)
	qv.QTo(&v)
	s := make([]float64, n)
	for i := range s {
		s[i] = math.Pow(2, -float64(i))
	}
	var a mat.Dense
	a.Mul(u.Slice(0, m, 0, n), mat.NewDiagDense(n, s))
	a.Mul(&a, v.T())
	return a.RawMatrix().Data
}

func TestTruncatedSVD(t *testing.T) {
	const m, n, rank = 61, 24, 4
	ag := decaying(m, n, 9)
	for loc := 1; loc <= 6; loc++ {
		t.Run(fmt.Sprintf("%d-localities", loc), func(t *testing.T) {
			want := gonumValues(t, m, n, ag)
			runJob(t, loc, func(ctx context.Context, e *Env) error {
				a, err := FromGlobal(e, []int{m, n}, Tiled(annotate.Row), ag)
				if err != nil {
					return err
				}
				f, err := TruncatedSVD(ctx, e, runtime.MakeReady(a), rank, TruncatedSVDOptions{Seed: 3}).Get(ctx)
				if err != nil {
					return err
				}
				if len(f.Values) != rank {
					return fmt.Errorf("%d values, want %d", len(f.Values), rank)
				}
				for i, s := range f.Values {
					if math.Abs(s-want[i]) > 1e-8*want[i] {
						return fmt.Errorf("σ_%d = %v, gonum %v", i, s, want[i])
					}
				}
				w, err := AllGather(ctx, e, runtime.MakeReady(f.U)).Get(ctx)
				if err != nil {
					return err
				}
				u, _ := w.Dense()
				if err := checkOrthonormal(u, tolerance(m)); err != nil {
					return err
				}
				// A·V = U·Σ for the leading vectors.
				var av, us mat.Dense
				av.Mul(mat.NewDense(m, n, ag), f.V)
				us.Mul(u, mat.NewDiagDense(rank, f.Values))
				if res := relResidual(&av, &us); !(res <= 1e-8) {
					return fmt.Errorf("‖AV − UΣ‖/‖AV‖ = %g", res)
				}
				if _, err := TruncatedSVD(ctx, e, runtime.MakeReady(a), n+1, TruncatedSVDOptions{}).Get(ctx); err == nil || !strings.Contains(err.Error(), "want one in [1, 24]") {
					return fmt.Errorf("rank 25: got %v", err)
				}
				return nil
			})
		})
	}
}
