package primitives

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// tsqrShapes are tall-skinny shapes; 13x4 on 5 or 6 localities gives tiles
// with fewer rows than columns.
var tsqrShapes = [][2]int{{40, 5}, {13, 4}}

func TestTSQR(t *testing.T) {
	for loc := 1; loc <= 6; loc++ {
		for _, sh := range tsqrShapes {
			m, n := sh[0], sh[1]
			t.Run(fmt.Sprintf("%d-localities/%dx%d", loc, m, n), func(t *testing.T) {
				ag := globalData([]int{m, n}, uint64(m), -1, 1)
				runJob(t, loc, func(ctx context.Context, e *Env) error {
					a, err := FromGlobal(e, []int{m, n}, Tiled(annotate.Row), ag)
					if err != nil {
						return err
					}
					f, err := TSQR(ctx, e, runtime.MakeReady(a), true).Get(ctx)
					if err != nil {
						return err
					}
					for i := range n {
						for j := range i {
							if f.R.At(i, j) != 0 {
								return fmt.Errorf("R(%d, %d) = %v below the diagonal", i, j, f.R.At(i, j))
							}
						}
					}
					// R is the same everywhere.
					all, err := runtime.AllGatherOf(ctx, e.comm, f.R.RawMatrix().Data).Get(ctx)
					if err != nil {
						return err
					}
					for l, r := range all {
						if !mat.Equal(mat.NewDense(n, n, r), f.R) {
							return fmt.Errorf("locality %d has another R", l)
						}
					}
					w, err := AllGather(ctx, e, runtime.MakeReady(f.Q)).Get(ctx)
					if err != nil {
						return err
					}
					q, _ := w.Dense()
					var qr, qtq mat.Dense
					qr.Mul(q, f.R)
					if res := relResidual(mat.NewDense(m, n, ag), &qr); !(res <= tolerance(m)) {
						return fmt.Errorf("‖A − QR‖/‖A‖ = %g, want at most %g", res, tolerance(m))
					}
					qtq.Mul(q.T(), q)
					var id mat.Dense
					id.Sub(&qtq, mat.NewDiagDense(n, ones(n)))
					if d := mat.Norm(&id, 2); !(d <= tolerance(m)) {
						return fmt.Errorf("‖QᵀQ − I‖ = %g, want at most %g", d, tolerance(m))
					}
					return nil
				})
			})
		}
	}
}

func ones(n int) []float64 {
	o := make([]float64, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

func TestLeastSquares(t *testing.T) {
	const m, n, r = 31, 4, 3
	for loc := 1; loc <= 6; loc++ {
		t.Run(fmt.Sprintf("%d-localities", loc), func(t *testing.T) {
			ag := globalData([]int{m, n}, 51, -1, 1)
			bg := globalData([]int{m, r}, 52, -1, 1)
			var want mat.Dense
			if err := want.Solve(mat.NewDense(m, n, ag), mat.NewDense(m, r, bg)); err != nil {
				t.Fatal(err)
			}
			runJob(t, loc, func(ctx context.Context, e *Env) error {
				a, err := FromGlobal(e, []int{m, n}, Tiled(annotate.Row), ag)
				if err != nil {
					return err
				}
				b, err := FromGlobal(e, []int{m, r}, Tiled(annotate.Row), bg)
				if err != nil {
					return err
				}
				x, err := LeastSquares(ctx, e, runtime.MakeReady(a), runtime.MakeReady(b)).Get(ctx)
				if err != nil {
					return err
				}
				if d := relResidual(&want, x); !(d <= 1e-12) {
					return fmt.Errorf("‖X − X_gonum‖/‖X_gonum‖ = %g", d)
				}
				return nil
			})
		})
	}
}

func TestTSQRBadInput(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		wide, err := FromGlobal(e, []int{4, 9}, Layout{Name: "wide", Kind: annotate.Row}, globalData([]int{4, 9}, 1, 0, 1))
		if err != nil {
			return err
		}
		if _, err := TSQR(ctx, e, runtime.MakeReady(wide), false).Get(ctx); err == nil || !strings.Contains(err.Error(), "wide/0") || !strings.Contains(err.Error(), "tall-skinny") {
			return fmt.Errorf("a 4x9 matrix: got %v", err)
		}
		g := globalData([]int{12, 3}, 1, 0, 1)
		g[7] = math.NaN()
		nan, err := FromGlobal(e, []int{12, 3}, Layout{Name: "nan", Kind: annotate.Row}, g)
		if err != nil {
			return err
		}
		if _, err := TSQR(ctx, e, runtime.MakeReady(nan), false).Get(ctx); err == nil || !strings.Contains(err.Error(), "nan/0 holds NaN") {
			return fmt.Errorf("a NaN: got %v", err)
		}
		col, err := FromGlobal(e, []int{12, 3}, Layout{Name: "cols", Kind: annotate.Column}, globalData([]int{12, 3}, 1, 0, 1))
		if err != nil {
			return err
		}
		if _, err := TSQR(ctx, e, runtime.MakeReady(col), false).Get(ctx); err == nil || !strings.Contains(err.Error(), "want a row tiling") {
			return fmt.Errorf("column tiling: got %v", err)
		}
		// A right-hand side of other rows than the matrix.
		a, err := FromGlobal(e, []int{12, 3}, Layout{Name: "A", Kind: annotate.Row}, globalData([]int{12, 3}, 2, 0, 1))
		if err != nil {
			return err
		}
		b, err := FromGlobal(e, []int{10, 2}, Layout{Name: "B", Kind: annotate.Row}, globalData([]int{10, 2}, 2, 0, 1))
		if err != nil {
			return err
		}
		if _, err := LeastSquares(ctx, e, runtime.MakeReady(a), runtime.MakeReady(b)).Get(ctx); err == nil || !strings.Contains(err.Error(), "B/0 of shape [10 2]") || !strings.Contains(err.Error(), "want the same rows") {
			return fmt.Errorf("10 rows for 12: got %v", err)
		}
		// Rank-deficient: a zero column.
		z := globalData([]int{12, 3}, 1, 0, 1)
		for i := range 12 {
			z[i*3+1] = 0
		}
		za, err := FromGlobal(e, []int{12, 3}, Tiled(annotate.Row), z)
		if err != nil {
			return err
		}
		if _, err := LeastSquares(ctx, e, runtime.MakeReady(za), runtime.MakeReady(za)).Get(ctx); err == nil || !strings.Contains(err.Error(), "column 1") {
			return fmt.Errorf("a zero column 1: got %v", err)
		}
		return nil
	})
}

// TestNonFinite: nonFinite flags a NaN or an infinity wherever it is, the
// largest finite values included, and lets finite ones pass.
func TestNonFinite(t *testing.T) {
	for n := range 11 {
		v := make([]float64, n)
		for i := range v {
			v[i] = math.MaxFloat64 * float64(1-2*(i%2))
		}
		if got := nonFinite(v); got != 0 {
			t.Fatalf("%d finite elements: got %v, want 0", n, got)
		}
		for i := range v {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				w := append([]float64(nil), v...)
				w[i] = bad
				if got := nonFinite(w); !math.IsNaN(got) {
					t.Fatalf("%v at %d of %d: got %v, want NaN", bad, i, n, got)
				}
			}
		}
	}
}

// BenchmarkLeafQR times one locality's part of the truncated SVD's
// orthonormalisation: the QR of its rows of a rows x 30 sketch and the
// explicit Q, whole (geqrf, then ormqr on [I; 0]) and in blocks of rows
// (factorLeaf, applyQ).
func BenchmarkLeafQR(b *testing.B) {
	const l = 30
	for _, rows := range []int{12500, 50000} {
		src := make([]float64, rows*l)
		for i := range src {
			src[i] = float64((i*7919)%1000)/500 - 1
		}
		b.Run(fmt.Sprintf("whole/%d", rows), func(b *testing.B) {
			for b.Loop() {
				a := blas64.General{Rows: rows, Cols: l, Stride: l, Data: append([]float64(nil), src...)}
				tau := geqrf(a)
				q := blas64.General{Rows: rows, Cols: l, Stride: l, Data: make([]float64, rows*l)}
				copy(q.Data, eye(l))
				ormqr(blas.NoTrans, a, tau, q)
			}
		})
		b.Run(fmt.Sprintf("blocks/%d", rows), func(b *testing.B) {
			for b.Loop() {
				a := blas64.General{Rows: rows, Cols: l, Stride: l, Data: append([]float64(nil), src...)}
				f, _ := factorLeaf(a)
				f.applyQ(eye(l), blas64.General{Rows: rows, Cols: l, Stride: l, Data: make([]float64, rows*l)})
			}
		})
	}
}

// TestLeafQRBlocks: the leaf's QR in blocks of rows (more than one at
// these sizes) gives Q with orthonormal columns and Q·R = A, and its Qᵀ·B
// is the explicit Q's.
func TestLeafQRBlocks(t *testing.T) {
	for _, sh := range [][2]int{{5000, 20}, {13001, 7}, {40000, 3}} {
		m, n := sh[0], sh[1]
		src := make([]float64, m*n)
		for i := range src {
			src[i] = float64((i*7919+13)%1009)/504.5 - 1
		}
		a := blas64.General{Rows: m, Cols: n, Stride: n, Data: append([]float64(nil), src...)}
		f, r := factorLeaf(a)
		if len(f.blocks) < 2 {
			t.Fatalf("%dx%d: %d blocks, want several", m, n, len(f.blocks))
		}
		q := blas64.General{Rows: m, Cols: n, Stride: n, Data: make([]float64, m*n)}
		f.applyQ(eye(n), q)
		qm := mat.NewDense(m, n, q.Data)
		var qr, qtq mat.Dense
		qr.Mul(qm, mat.NewDense(n, n, r))
		if d := maxDiff(qr.RawMatrix().Data, src); d > 1e-12*float64(m) {
			t.Errorf("%dx%d: |QR - A| = %g", m, n, d)
		}
		qtq.Mul(qm.T(), qm)
		if d := maxDiff(qtq.RawMatrix().Data, eye(n)); d > 1e-13*float64(m) {
			t.Errorf("%dx%d: |QᵀQ - I| = %g", m, n, d)
		}
		b := blas64.General{Rows: m, Cols: 2, Stride: 2, Data: src[:2*m]}
		var want mat.Dense
		want.Mul(qm.T(), mat.NewDense(m, 2, b.Data))
		if d := maxDiff(f.applyQT(b), want.RawMatrix().Data); d > 1e-12*float64(m) {
			t.Errorf("%dx%d: |applyQT - QᵀB| = %g", m, n, d)
		}
	}
}

func maxDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}
