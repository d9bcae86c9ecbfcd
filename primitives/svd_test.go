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
				if err := checkTruncated(ctx, e, f, m, n, ag, want, 1e-8); err != nil {
					return err
				}
				if _, err := TruncatedSVD(ctx, e, runtime.MakeReady(a), n+1, TruncatedSVDOptions{}).Get(ctx); err == nil || !strings.Contains(err.Error(), "want one in [1, 24]") {
					return fmt.Errorf("rank 25: got %v", err)
				}
				return nil
			})
		})
	}
}

// termsMatrix returns Σ_t 2^-t·u_t·v_tᵀ over terms t (u_t, v_t uniform
// in [-1, 1)): examples/linalg's SVD matrix in small, singular values
// halving from one to the next.
func termsMatrix(m, n, terms int, seed uint64) []float64 {
	u := globalData([]int{m, terms}, seed, -1, 1)
	v := globalData([]int{n, terms}, seed+1, -1, 1)
	g := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for t := range terms {
				s += u[i*terms+t] * math.Ldexp(v[j*terms+t], -t)
			}
			g[i*n+j] = s
		}
	}
	return g
}

// checkTruncated checks f against A (m x n, gathered g) and its values
// want: the values within tol relative, U's columns orthonormal, and
// A·V = U·Σ.
func checkTruncated(ctx context.Context, e *Env, f SVDFactors, m, n int, g, want []float64, tol float64) error {
	for i, s := range f.Values {
		if !(math.Abs(s-want[i]) <= tol*want[i]) {
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
	var av, us mat.Dense
	av.Mul(mat.NewDense(m, n, g), f.V)
	us.Mul(u, mat.NewDiagDense(len(f.Values), f.Values))
	if res := relResidual(&av, &us); !(res <= tol) {
		return fmt.Errorf("‖AV − UΣ‖/‖AV‖ = %g", res)
	}
	return nil
}

// TestTruncatedSVDPaths runs each way a power iteration can go: one pass
// over A with one CholeskyQR (the well-conditioned Y' of these matrices),
// with two (condOnce below every condition number), and Q by TSQR with a
// pass of its own (condMax below every condition number). Each finds the
// same values, to 1e-8 of gonum's, with U orthonormal.
func TestTruncatedSVDPaths(t *testing.T) {
	const m, n, rank = 230, 37, 7
	mats := map[string][]float64{"decaying": decaying(m, n, 4), "terms": termsMatrix(m, n, 37, 6)}
	paths := []struct {
		name string
		o    TruncatedSVDOptions
		want func(s *svdStats) int // the iterations that went that way
	}{
		{"once", TruncatedSVDOptions{}, func(s *svdStats) int { return s.once }},
		{"twice", TruncatedSVDOptions{condOnce: 0.5}, func(s *svdStats) int { return s.twice }},
		{"explicit", TruncatedSVDOptions{condMax: 0.5}, func(s *svdStats) int { return s.explicit }},
	}
	for name, g := range mats {
		want := gonumValues(t, m, n, g)
		for _, p := range paths {
			for _, loc := range []int{1, 3, 4} {
				for _, power := range []int{-1, 1, 3} {
					t.Run(fmt.Sprintf("%s/%s/%d-localities/power-%d", name, p.name, loc, power), func(t *testing.T) {
						runJob(t, loc, func(ctx context.Context, e *Env) error {
							a, err := FromGlobal(e, []int{m, n}, Tiled(annotate.Row), g)
							if err != nil {
								return err
							}
							o := p.o
							o.Seed, o.PowerIters, o.stats = 5, power, &svdStats{}
							f, err := TruncatedSVD(ctx, e, runtime.MakeReady(a), rank, o).Get(ctx)
							if err != nil {
								return err
							}
							if got, iters := p.want(o.stats), max(power, 0); got != iters || len(o.stats.conds) != iters || o.stats.tsqr != 0 {
								return fmt.Errorf("%+v: %d power iterations went the %s way, want %d", *o.stats, got, p.name, iters)
							}
							for _, c := range o.stats.conds {
								if !(c >= 1 && c < 2) {
									return fmt.Errorf("κ(Y') = %g, want it in [1, 2) for these matrices", c)
								}
							}
							tol := 1e-8
							if power < 0 {
								tol = 1e-3 // the sketch alone
							}
							return checkTruncated(ctx, e, f, m, n, g, want, tol)
						})
					})
				}
			}
		}
	}
}

// TestTruncatedSVDRankDeficient: a matrix of rank 4 below the basis's 12
// columns: the sketch A·Ω is singular, and so is Aᵀ·Q, so the fused
// pass's Y' cannot be conditioned: every Q comes from TSQR; the 3 leading
// values are still right.
func TestTruncatedSVDRankDeficient(t *testing.T) {
	const m, n, r, rank = 90, 20, 4, 3
	var a mat.Dense
	a.Mul(mat.NewDense(m, r, globalData([]int{m, r}, 8, -1, 1)), mat.NewDense(r, n, globalData([]int{r, n}, 9, -1, 1)))
	g := a.RawMatrix().Data
	want := gonumValues(t, m, n, g)
	for _, loc := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d-localities", loc), func(t *testing.T) {
			runJob(t, loc, func(ctx context.Context, e *Env) error {
				x, err := FromGlobal(e, []int{m, n}, Tiled(annotate.Row), g)
				if err != nil {
					return err
				}
				o := TruncatedSVDOptions{Oversample: 9, Seed: 2, stats: &svdStats{}}
				f, err := TruncatedSVD(ctx, e, runtime.MakeReady(x), rank, o).Get(ctx)
				if err != nil {
					return err
				}
				if o.stats.explicit != 2 || o.stats.tsqr != 1 {
					return fmt.Errorf("%+v: want the sketch and both power iterations by TSQR", *o.stats)
				}
				return checkTruncated(ctx, e, f, m, n, g, want, 1e-8)
			})
		})
	}
}

// TestTruncatedSVDFewRows: one row on each locality, fewer than the
// basis's columns, and a basis as wide as the matrix.
func TestTruncatedSVDFewRows(t *testing.T) {
	const m, n, rank = 6, 5, 2
	g := decaying(m, n, 3)
	want := gonumValues(t, m, n, g)
	runJob(t, 6, func(ctx context.Context, e *Env) error {
		a, err := FromGlobal(e, []int{m, n}, Tiled(annotate.Row), g)
		if err != nil {
			return err
		}
		f, err := TruncatedSVD(ctx, e, runtime.MakeReady(a), rank, TruncatedSVDOptions{Seed: 1}).Get(ctx)
		if err != nil {
			return err
		}
		return checkTruncated(ctx, e, f, m, n, g, want, 1e-8)
	})
}

// TestTruncatedSVDBadInput: NaN or Inf in one locality's rows fails the
// result on every locality (found through Y = A·Ω), as do a column
// tiling and a rank out of range.
func TestTruncatedSVDBadInput(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		for i, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			g := globalData([]int{30, 6}, 1, -1, 1)
			g[25*6+2] = bad
			x, err := FromGlobal(e, []int{30, 6}, Layout{Name: fmt.Sprint("bad", i), Kind: annotate.Row}, g)
			if err != nil {
				return err
			}
			_, err = TruncatedSVD(ctx, e, runtime.MakeReady(x), 2, TruncatedSVDOptions{}).Get(ctx)
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("bad%d/0 holds NaN or Inf", i)) || !strings.Contains(err.Error(), fmt.Sprintf("locality %d", e.Locality())) {
				return fmt.Errorf("a %v: got %v", bad, err)
			}
		}
		col, err := FromGlobal(e, []int{12, 3}, Layout{Name: "cols", Kind: annotate.Column}, globalData([]int{12, 3}, 1, 0, 1))
		if err != nil {
			return err
		}
		if _, err := TruncatedSVD(ctx, e, runtime.MakeReady(col), 2, TruncatedSVDOptions{}).Get(ctx); err == nil || !strings.Contains(err.Error(), "want a row tiling") {
			return fmt.Errorf("column tiling: got %v", err)
		}
		return nil
	})
}
