package primitives

import (
	"fmt"
	goruntime "runtime"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// TestSVDPasses checks the truncated SVD's passes over A against gonum's
// products, on one goroutine and on several (each summing its own part),
// with rows that split unevenly and blocks of the fused pass cut short.
func TestSVDPasses(t *testing.T) {
	for _, procs := range []int{1, 3} {
		for _, rows := range []int{1, 255, 700, 1301} {
			t.Run(fmt.Sprintf("procs-%d/rows-%d", procs, rows), func(t *testing.T) {
				defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
				const n, l, lp = 1500, 6, 8 // 1500 columns: blocks of 174 rows
				a := mat.NewDense(rows, n, globalData([]int{rows, n}, 1, -1, 1))
				w := mat.NewDense(n, lp, nil)
				w.Slice(0, n, 0, l).(*mat.Dense).Copy(mat.NewDense(n, l, globalData([]int{n, l}, 2, -1, 1)))
				y := mat.NewDense(rows, lp, nil)
				g := make([]float64, lp*n)
				fusedPass(a.RawMatrix(), w.RawMatrix(), y.RawMatrix(), g)
				var wantY, wantG mat.Dense
				wantY.Mul(a, w)
				wantG.Mul(wantY.T(), a)
				if d := maxDiff(y.RawMatrix().Data, wantY.RawMatrix().Data); d > 1e-12*float64(n) {
					t.Errorf("fusedPass: Y differs by %g", d)
				}
				if d := maxDiff(g, wantG.RawMatrix().Data); d > 1e-12*float64(n*rows) {
					t.Errorf("fusedPass: G differs by %g", d)
				}
				y2 := mat.NewDense(rows, lp, nil)
				timesRight(a.RawMatrix(), w.RawMatrix(), y2.RawMatrix())
				if d := maxDiff(y2.RawMatrix().Data, wantY.RawMatrix().Data); d > 1e-12*float64(n) {
					t.Errorf("timesRight differs by %g", d)
				}
				g2 := make([]float64, lp*n)
				transTimes(y.RawMatrix(), a.RawMatrix(), g2)
				if d := maxDiff(g2, wantG.RawMatrix().Data); d > 1e-12*float64(n*rows) {
					t.Errorf("transTimes differs by %g", d)
				}
				// rightSolve: (X·R)·R⁻¹ = X.
				r := mat.NewDense(l, l, nil)
				for i := range l {
					for j := i; j < l; j++ {
						r.Set(i, j, 0.1*float64(i+j+1))
					}
					r.Set(i, i, 2+float64(i))
				}
				x := mat.NewDense(rows, l, globalData([]int{rows, l}, 3, -1, 1))
				var xr mat.Dense
				xr.Mul(x, r)
				rightSolve(xr.RawMatrix(), blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: l, Stride: l, Data: r.RawMatrix().Data})
				if d := maxDiff(xr.RawMatrix().Data, x.RawMatrix().Data); d > 1e-13 {
					t.Errorf("rightSolve differs by %g", d)
				}
			})
		}
	}
}
