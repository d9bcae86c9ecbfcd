package primitives

import (
	"github.com/tessera-amt/tessera/internal/linalg"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// smallBLAS is gonum's pure-Go BLAS (the build without -tags openblas)
// with a Dsyrk of the primitives' own for AᵀA into an upper triangle of
// order up to linalg.MaxOrder: linalg.SyrkUpper, in AVX2 and FMA
// instructions where the CPU has them. These are the small Gram matrices
// that ALS forms for every row (order 40, k around 50), where gonum's
// Dsyrk takes about 4 times as long (BenchmarkSyrkUpper). The openblas build keeps
// OpenBLAS's Dsyrk, about 1.15 times faster than this one there. Every
// other call, and every call with arguments the BLAS would refuse, goes to
// the BLAS, which panics with its own message for the latter.
type smallBLAS struct{ blas.Float64 }

// Dsyrk sets C = alpha·AᵀA + beta·C (t Trans) or alpha·AAᵀ + beta·C (t
// NoTrans) on the triangle ul of the n x n matrix C, A being k x n (t
// Trans) or n x k, as the BLAS's Dsyrk does.
func (b smallBLAS) Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	if ul != blas.Upper || (t != blas.Trans && t != blas.ConjTrans) || n < 1 || n > linalg.MaxOrder || k < 0 ||
		lda < n || ldc < n || (k > 0 && len(a) < lda*(k-1)+n) || len(c) < ldc*(n-1)+n {
		b.Float64.Dsyrk(ul, t, n, k, alpha, a, lda, beta, c, ldc)
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
	linalg.SyrkUpper(n, k, alpha, a, lda, c, ldc, linalg.HaveFMA())
}

// smallLAPACK is the LAPACK of a build (gonum's, or LAPACKE's) with the
// primitives' own Cholesky factorisation Dpotrf of an upper triangle of
// order up to linalg.MaxOrder (linalg.PotrfUpper: right-looking in blocks
// of four rows, along contiguous rows). gonum's unblocked Dpotf2 for these
// orders works down the columns of the row-major matrix with strided dot
// products, and LAPACKE's row-major Dpotrf transposes the matrix for
// LAPACK and back: at order 40, the one ALS factorises per row, they take
// 1.25 and 2.3 times as long (BenchmarkSmallDpotrf). Every other call goes
// to the LAPACK.
type smallLAPACK struct{ lapack.Float64 }

// Dpotrf factorises the symmetric positive definite n x n matrix A, of
// which it reads the triangle ul, into UᵀU (ul Upper) or LLᵀ (Lower), in
// place, as the LAPACK's Dpotrf does; it reports whether A is positive
// definite. When it is not, A holds a partial factorisation.
func (l smallLAPACK) Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool {
	if ul != blas.Upper || n < 1 || n > linalg.MaxOrder || lda < n || len(a) < lda*(n-1)+n {
		return l.Float64.Dpotrf(ul, n, a, lda)
	}
	return linalg.PotrfUpper(n, a, lda, linalg.HaveFMA())
}
