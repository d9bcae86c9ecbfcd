//go:build !amd64

package linalg

// gemmKernels returns Gemm's micro-kernels that this CPU runs: none, the
// kernels being amd64 assembly.
func gemmKernels() []gemmKernel { return nil }
