// Package linalg holds the dense kernels behind the primitives' own BLAS
// and LAPACK routines (primitives.Register installs them over gonum's or
// OpenBLAS's): the rank-k update of a small upper triangle and the
// Cholesky factorisation built on it, and a blocked matrix product, in
// AVX2 and FMA instructions where the CPU has them (the product in
// AVX-512 where it has that). It is its own package because a package
// that uses cgo (the primitives with -tags openblas) may not hold Go
// assembly.
package linalg
