package linalg

import "math"

// PotrfUpper factorises the symmetric positive definite n x n row-major
// matrix a (stride lda, n at most MaxOrder), of which it reads the upper
// triangle, into UᵀU in place, and reports whether a is positive definite
// (if not, a holds a partial factorisation). It is right-looking in blocks
// of four rows: the block's rows of U, once factored, update the trailing
// triangle in one rank-4 SyrkUpper (with or without fma), along contiguous
// rows. The caller checks the shapes.
func PotrfUpper(n int, a []float64, lda int, fma bool) bool {
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
			SyrkUpper(m, i1-i0, -1, a[i0*lda+i1:], lda, a[i1*lda+i1:], lda, fma)
		}
	}
	return true
}
