package linalg

import "golang.org/x/sys/cpu"

// HaveFMA reports whether this CPU runs upper4AVX2 (AVX2 and FMA).
func HaveFMA() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// upper4AVX2 adds alpha·s[r][i]·s[r][j] over the four rows r of s (stride
// lda) to c[i*ldc+j] for 0 <= i <= j < n (syrk_amd64.s). The caller
// checks the lengths and HaveFMA.
//
//go:noescape
func upper4AVX2(c []float64, ldc int, s []float64, lda int, n int, alpha float64)

// kernel4x8 adds alpha times the packed 4 x kc panel a times the packed
// kc x 8 panel b to the 4 x 8 tile of C at c, stride ldc (gemm_amd64.s).
//
//go:noescape
func kernel4x8(kc int, a, b, c *float64, ldc int, alpha float64)
