package primitives

import (
	goruntime "runtime"
	"sync"

	"github.com/tessera-amt/tessera/internal/linalg"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// pureBLAS is the BLAS of the build without -tags openblas: gonum's
// pure-Go BLAS with the primitives' own Dsyrk and Dgemm from
// internal/linalg, in AVX2 and FMA (Dgemm: AVX-512) instructions where
// the CPU has them.
// Dsyrk of AᵀA into an upper triangle of order up to linalg.MaxOrder is
// linalg.SyrkUpper: the small Gram matrices that ALS forms for every row
// (order 40, k around 50), where gonum's Dsyrk takes about 4 times as long
// (BenchmarkSyrkUpper; the openblas build keeps OpenBLAS's, about 1.15
// times faster than this one). Dgemm is below. Every other call, and every
// call with arguments the BLAS would refuse, goes to gonum, which panics
// with its own message for the latter.
type pureBLAS struct {
	blas.Float64
	gemm *linalg.Gemmer // nil: the CPU runs no kernel of linalg's Gemm
	bt   *sync.Pool     // of *[]float64: the transposed B of Dgemm's A·Bᵀ between calls
}

// newPureBLAS returns pureBLAS over base.
func newPureBLAS(base blas.Float64) pureBLAS {
	return pureBLAS{Float64: base, gemm: linalg.NewGemmer(), bt: &sync.Pool{New: func() any { return new([]float64) }}}
}

// Dsyrk sets C = alpha·AᵀA + beta·C (t Trans) or alpha·AAᵀ + beta·C (t
// NoTrans) on the triangle ul of the n x n matrix C, A being k x n (t
// Trans) or n x k, as the BLAS's Dsyrk does.
func (b pureBLAS) Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	if ul != blas.Upper || (t != blas.Trans && t != blas.ConjTrans) || n < 1 || n > linalg.MaxOrder || k < 0 ||
		lda < n || ldc < n || (k > 0 && len(a) < lda*(k-1)+n) || len(c) < ldc*(n-1)+n {
		b.Float64.Dsyrk(ul, t, n, k, alpha, a, lda, beta, c, ldc)
		return
	}
	if beta != 1 {
		for i := range n {
			linalg.Scale(c[i*ldc+i:i*ldc+n], beta)
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	linalg.SyrkUpper(n, k, alpha, a, lda, c, ldc, linalg.HaveFMA())
}

// minGemm is the least m·n·k for which pureBLAS's Dgemm uses
// linalg's Gemm (below it, packing costs more than it saves), and
// parallelGemm the least for which it splits the rows over GOMAXPROCS
// goroutines, as gonum's Dgemm does.
const (
	minGemm      = 8 * 8 * 8
	parallelGemm = 64 * 64 * 64
)

// Dgemm sets C = alpha·op(A)·op(B) + beta·C as the BLAS's Dgemm does. For
// A not transposed (B transposed or not: a transposed B is copied
// untransposed first), or A transposed and B not when Aᵀ is no larger
// than B (or small: it is copied untransposed too), on a CPU with AVX-512 or AVX2 and FMA, it runs
// linalg's Gemm (a packed, blocked product around an 8 x 16 AVX-512 or a
// 4 x 8 AVX2 micro-kernel; on one core about 6 and 3.5 times gonum's rate
// on both, BenchmarkGemm); every other call goes to the BLAS.
func (b pureBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, bm []float64, ldb int, beta float64, c []float64, ldc int) {
	size := m * n * k
	if tA == blas.NoTrans && tB == blas.Trans && b.gemm != nil && size >= minGemm && m > 0 && n > 0 && k > 0 && ldb >= k && len(bm) >= ldb*(n-1)+k {
		// B is n x k: its transpose, copied (k·n elements against the
		// product's m·n·k operations), goes to linalg's Gemm too, as
		// Cholesky's trailing updates L(i)·L(j)ᵀ need.
		bt := b.bt.Get().(*[]float64)
		if cap(*bt) < k*n {
			*bt = make([]float64, k*n)
		}
		t := (*bt)[:k*n]
		transpose(t, bm, n, k, ldb)
		b.Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, alpha, a, lda, t, n, beta, c, ldc)
		b.bt.Put(bt)
		return
	}
	if tA == blas.Trans && tB == blas.NoTrans && b.gemm != nil && size >= minGemm && m > 0 && n > 0 && k > 0 && lda >= m && len(a) >= lda*(k-1)+m &&
		(m <= n || m*k <= maxTransCopy) {
		// A is k x m: its transpose, copied (m·k elements against the
		// product's m·n·k operations, and no larger than B or than
		// maxTransCopy), goes to linalg's Gemm, as the truncated SVD's
		// projections QᵀA (Q m x 30, A m x 2000) need: gonum's Dgemm
		// takes about 6 times as long on them.
		at := b.bt.Get().(*[]float64)
		if cap(*at) < m*k {
			*at = make([]float64, m*k)
		}
		t := (*at)[:m*k]
		transpose(t, a, k, m, lda)
		b.Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, alpha, t, k, bm, ldb, beta, c, ldc)
		b.bt.Put(at)
		return
	}
	if tA != blas.NoTrans || tB != blas.NoTrans || b.gemm == nil || m < 1 || n < 1 || k < 1 || size < minGemm ||
		lda < k || ldb < n || ldc < n || len(a) < lda*(m-1)+k || len(bm) < ldb*(k-1)+n || len(c) < ldc*(m-1)+n {
		b.Float64.Dgemm(tA, tB, m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc)
		return
	}
	threads := 1
	if size >= parallelGemm {
		threads = goruntime.GOMAXPROCS(0)
	}
	b.gemm.Gemm(m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc, threads)
}

// maxTransCopy is the most elements of a transposed A that pureBLAS's
// Dgemm copies for linalg's Gemm when A is larger than B.
const maxTransCopy = 1 << 18

// transpose sets t (cols x rows, row-major, stride rows) to the transpose
// of the rows x cols matrix s (stride lds), in blocks of 32 x 32 so that
// both sides stay in cache.
func transpose(t, s []float64, rows, cols, lds int) {
	const bs = 32
	for r0 := 0; r0 < rows; r0 += bs {
		r1 := min(r0+bs, rows)
		for c0 := 0; c0 < cols; c0 += bs {
			c1 := min(c0+bs, cols)
			for r := r0; r < r1; r++ {
				for x, v := range s[r*lds+c0 : r*lds+c1] {
					t[(c0+x)*rows+r] = v
				}
			}
		}
	}
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
