//go:build !amd64

package linalg

// HaveFMA reports whether this CPU runs upper4AVX2: there is no assembly
// kernel outside amd64.
func HaveFMA() bool { return false }

// upper4AVX2 exists on amd64 only; SyrkUpper does not call it here.
func upper4AVX2(c []float64, ldc int, s []float64, lda int, n int, alpha float64) {
	panic("linalg: upper4AVX2 called without amd64")
}
