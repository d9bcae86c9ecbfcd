//go:build !openblas && !amd64

package primitives

// haveFMA reports whether this CPU runs upper4AVX2: there is no assembly
// kernel outside amd64.
func haveFMA() bool { return false }

// upper4AVX2 exists on amd64 only; syrkUpper does not call it here.
func upper4AVX2(c []float64, ldc int, s []float64, lda int, n int, alpha float64) {
	panic("primitives: upper4AVX2 called without amd64")
}

// upper1AVX2 exists on amd64 only; syrkUpper does not call it here.
func upper1AVX2(c []float64, ldc int, s []float64, n int, alpha float64) {
	panic("primitives: upper1AVX2 called without amd64")
}
