package linalg

import "golang.org/x/sys/cpu"

// HaveFMA reports whether this CPU runs upper4AVX2 and Gemm's kernel4x8
// (AVX2 and FMA).
func HaveFMA() bool { return cpu.X86.HasAVX2 && cpu.X86.HasFMA }

// upper4AVX2 adds alpha·s[r][i]·s[r][j] over the four rows r of s (stride
// lda) to c[i*ldc+j] for 0 <= i <= j < n (syrk_amd64.s). The caller
// checks the lengths and HaveFMA.
//
//go:noescape
func upper4AVX2(c []float64, ldc int, s []float64, lda int, n int, alpha float64)
