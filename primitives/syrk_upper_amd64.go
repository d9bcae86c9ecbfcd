//go:build !openblas

package primitives

import "golang.org/x/sys/cpu"

// haveFMA reports whether this CPU runs upper4AVX2 (AVX2 and FMA).
func haveFMA() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// upper4AVX2 adds alpha·s[r][i]·s[r][j] over the four rows r of s (stride
// lda) to c[i*ldc+j] for 0 <= i <= j < n (syrk_upper_amd64.s). The caller
// checks the lengths and haveFMA.
//
//go:noescape
func upper4AVX2(c []float64, ldc int, s []float64, lda int, n int, alpha float64)

// upper1AVX2 is upper4AVX2 for one row s (syrk_upper_amd64.s).
//
//go:noescape
func upper1AVX2(c []float64, ldc int, s []float64, n int, alpha float64)
