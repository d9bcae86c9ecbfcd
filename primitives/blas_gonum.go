//go:build !openblas

package primitives

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack/lapack64"

	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
)

// BLAS names the BLAS and LAPACK behind the primitives' local numerics
// (gonum's blas64 and lapack64): in this build gonum's own pure-Go
// implementations, which use every core for a large Dgemm, with a Dsyrk and
// a Dpotrf of the primitives' own for small upper triangles (pureBLAS,
// pureLAPACK). A build with
// -tags openblas uses OpenBLAS instead.
func BLAS() string { return "gonum (pure Go)" }

// useBLAS sets the BLAS of the build for gonum's blas64 and lapack64;
// Register calls it, once per program before the runtime starts. Here
// they are gonum's pure-Go BLAS and LAPACK with pureBLAS's Dsyrk and
// pureLAPACK's Dpotrf.
func useBLAS() {
	if _, ok := blas64.Implementation().(pureBLAS); !ok {
		blas64.Use(pureBLAS{})
		lapack64.Use(pureLAPACK{})
	}
}

// pureBLAS is gonum's pure-Go BLAS except for Dsyrk of an upper triangle
// of order up to maxSyrkUpper from AᵀA, which syrkUpper computes in AVX2
// and FMA instructions where the CPU has them: the rank-k update of the
// small Gram matrices that ALS forms for every row, about 4 times faster
// than gonum's there (BenchmarkSyrkUpper). Every other call, and every
// call with arguments gonum would refuse, goes to gonum, which panics with
// its own message for the latter.
type pureBLAS struct{ gonum.Implementation }

// Dsyrk sets C = alpha·AᵀA + beta·C (t Trans) or alpha·AAᵀ + beta·C (t
// NoTrans) on the triangle ul of the n x n matrix C, A being k x n (t
// Trans) or n x k, as gonum's Dsyrk does.
func (b pureBLAS) Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	if ul != blas.Upper || (t != blas.Trans && t != blas.ConjTrans) || n < 1 || n > maxSyrkUpper || k < 0 ||
		lda < n || ldc < n || (k > 0 && len(a) < lda*(k-1)+n) || len(c) < ldc*(n-1)+n {
		b.Implementation.Dsyrk(ul, t, n, k, alpha, a, lda, beta, c, ldc)
		return
	}
	if beta != 1 {
		for i := range n {
			ci := c[i*ldc+i : i*ldc+n]
			if beta == 0 {
				clear(ci)
				continue
			}
			for j := range ci {
				ci[j] *= beta
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	syrkUpper(n, k, alpha, a, lda, c, ldc, haveFMA())
}

// pureLAPACK is gonum's pure-Go LAPACK except for the Cholesky
// factorisation Dpotrf of an upper triangle of order up to maxSyrkUpper,
// which it computes right-looking in blocks of four rows: the block's rows
// of U, once factored, update the trailing triangle in one rank-4
// syrkUpper, along contiguous rows. gonum's unblocked Dpotf2 for these
// orders works down columns of the row-major matrix with strided dot
// products; ALS factorises one such matrix (order 40) per row. Every other
// call goes to gonum.
type pureLAPACK struct{ gonumlapack.Implementation }

// Dpotrf factorises the symmetric positive definite n x n matrix A, of
// which it reads the triangle ul, into UᵀU (ul Upper) or LLᵀ (Lower), in
// place, as gonum's Dpotrf does; it reports whether A is positive
// definite. When it is not, A holds a partial factorisation.
func (l pureLAPACK) Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool {
	if ul != blas.Upper || n < 1 || n > maxSyrkUpper || lda < n || len(a) < lda*(n-1)+n {
		return l.Implementation.Dpotrf(ul, n, a, lda)
	}
	return potrfUpper(n, a, lda, haveFMA())
}

// potrfUpper is Dpotrf of the upper triangle (see pureLAPACK), its
// trailing updates by syrkUpper with or without fma.
func potrfUpper(n int, a []float64, lda int, fma bool) bool {
	for i0 := 0; i0 < n; i0 += 4 {
		i1 := min(i0+4, n)
		// The block's rows: each, once scaled, updates the block's later
		// rows from their diagonal on.
		for i := i0; i < i1; i++ {
			d := a[i*lda+i]
			if d <= 0 || math.IsNaN(d) {
				return false
			}
			u := math.Sqrt(d)
			a[i*lda+i] = u
			row := a[i*lda+i+1 : i*lda+n]
			inv := 1 / u
			for j := range row {
				row[j] *= inv
			}
			for k := i + 1; k < i1; k++ {
				f := row[k-i-1]
				dst, src := a[k*lda+k:k*lda+n], row[k-i-1:]
				for j := range dst {
					dst[j] -= f * src[j]
				}
			}
		}
		if m := n - i1; m > 0 {
			syrkUpper(m, i1-i0, -1, a[i0*lda+i1:], lda, a[i1*lda+i1:], lda, fma)
		}
	}
	return true
}
