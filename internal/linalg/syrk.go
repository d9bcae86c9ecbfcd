package linalg

// MaxOrder is the largest order of C that SyrkUpper and PotrfUpper take:
// beyond it C's rows no longer stay in cache across a pass of four rows of
// A, and gonum's blocked Dsyrk does better.
const MaxOrder = 256

// SyrkUpper adds alpha·AᵀA to the upper triangle of the n x n row-major
// matrix c (stride ldc), A being the k x n row-major matrix a (stride
// lda): the rank-k update of small Gram matrices, such as each row's
// normal equations in ALS (k around 50, n 40). It takes A four rows at a
// time, so each pass over a row of C's triangle does four multiply-adds per
// element it loads and stores; with fma (HaveFMA), in AVX2 and FMA
// instructions (syrk_amd64.s), the last k mod 4 rows padded with zero rows
// to four, otherwise in Go. The caller checks the shapes.
func SyrkUpper(n, k int, alpha float64, a []float64, lda int, c []float64, ldc int, fma bool) {
	r := 0
	for ; r+4 <= k; r += 4 {
		if fma {
			upper4AVX2(c, ldc, a[r*lda:], lda, n, alpha)
			continue
		}
		s1, s2, s3, s4 := a[r*lda:][:n], a[(r+1)*lda:][:n], a[(r+2)*lda:][:n], a[(r+3)*lda:][:n]
		for i := range n {
			a1, a2, a3, a4 := alpha*s1[i], alpha*s2[i], alpha*s3[i], alpha*s4[i]
			ci := c[i*ldc+i : i*ldc+n]
			x1, x2, x3, x4 := s1[i:][:len(ci)], s2[i:][:len(ci)], s3[i:][:len(ci)], s4[i:][:len(ci)]
			for j := range ci {
				ci[j] += a1*x1[j] + a2*x2[j] + a3*x3[j] + a4*x4[j]
			}
		}
	}
	if fma {
		if r < k {
			var pad [4 * MaxOrder]float64
			for i := range k - r {
				copy(pad[i*n:(i+1)*n], a[(r+i)*lda:][:n])
			}
			upper4AVX2(c, ldc, pad[:4*n], n, n, alpha)
		}
		return
	}
	for ; r < k; r++ {
		s1 := a[r*lda:][:n]
		for i := range n {
			a1 := alpha * s1[i]
			ci := c[i*ldc+i : i*ldc+n]
			x1 := s1[i:][:len(ci)]
			for j := range ci {
				ci[j] += a1 * x1[j]
			}
		}
	}
}
