package linalg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// TestGemmMatchesGonum: Gemm adds alpha·A·B to C as gonum's Dgemm does,
// on every element of C with its padding, for shapes around the blocking
// (edges of the 4 x 8 tile, of 128 rows and of 256 columns of A) and on 1
// and 3 goroutines.
func TestGemmMatchesGonum(t *testing.T) {
	if !HaveFMA() {
		t.Skip("this CPU has no AVX2 and FMA: Gemm is not used here")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := [][3]int{{1, 1, 1}, {4, 8, 1}, {3, 5, 7}, {5, 9, 3}, {8, 16, 30}, {17, 23, 257}, {130, 71, 40}, {256, 100, 30}, {129, 8, 513}}
	for _, sh := range shapes {
		for _, threads := range []int{1, 3} {
			m, n, k := sh[0], sh[1], sh[2]
			lda, ldb, ldc := k+1, n+2, n+3
			a, b, c := random(rng, m*lda), random(rng, k*ldb), random(rng, m*ldc)
			want := append([]float64(nil), c...)
			gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1.5, a, lda, b, ldb, 1, want, ldc)
			Gemm(m, n, k, 1.5, a, lda, b, ldb, c, ldc, threads)
			for i := range c {
				if math.Abs(c[i]-want[i]) > 1e-12*(1+math.Abs(want[i]))*float64(k) {
					t.Fatalf("%dx%dx%d on %d goroutines: C[%d, %d] = %v, gonum's Dgemm gives %v", m, n, k, threads, i/ldc, i%ldc, c[i], want[i])
				}
			}
		}
	}
}

// BenchmarkGemm: square products, Gemm on one goroutine against gonum's
// Dgemm (which uses every core).
func BenchmarkGemm(b *testing.B) {
	if !HaveFMA() {
		b.Skip("no AVX2 and FMA")
	}
	for _, n := range []int{256, 1024} {
		rng := rand.New(rand.NewPCG(9, 10))
		x, y, z := random(rng, n*n), random(rng, n*n), make([]float64, n*n)
		b.Run(fmt.Sprintf("n=%d/linalg", n), func(b *testing.B) {
			for b.Loop() {
				Gemm(n, n, n, 1, x, n, y, n, z, n, 1)
			}
			b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		b.Run(fmt.Sprintf("n=%d/gonum", n), func(b *testing.B) {
			for b.Loop() {
				gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, x, n, y, n, 1, z, n)
			}
			b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
