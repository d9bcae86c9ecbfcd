package linalg

import "golang.org/x/sys/cpu"

// gemmKernels returns the micro-kernels of Gemm that this CPU runs,
// fastest first: the AVX-512 one on 8 x 16 tiles where the CPU has
// AVX-512F (which x/sys/cpu reports only if the OS saves the ZMM
// registers), and the AVX2 and FMA one on 4 x 8 tiles where HaveFMA.
func gemmKernels() []gemmKernel {
	ks := make([]gemmKernel, 0, 2)
	// The blocks of both keep a panel of B (32 KiB, 16 KiB) in L1 while
	// the panels of A's block (384 KiB, 256 KiB) come from L2.
	if cpu.X86.HasAVX512F {
		ks = append(ks, gemmKernel{name: "AVX-512", mr: 8, nr: 16, kc: 256, mc: 192, nc: 4096,
			tile: func(kc int, a, b, c []float64, ldc int, alpha float64) {
				kernel8x16(kc, a, b, c, ldc, alpha, 1<<16-1)
			},
			masked: func(kc int, a, b, c []float64, ldc int, alpha float64, cols int, set bool) {
				m := uint64(1)<<cols - 1
				if set {
					m |= 1 << 16
				}
				kernel8x16(kc, a, b, c, ldc, alpha, m)
			}})
	}
	if HaveFMA() {
		ks = append(ks, gemmKernel{name: "AVX2", mr: 4, nr: 8, kc: 256, mc: 128, nc: 4096, tile: kernel4x8})
	}
	return ks
}

// kernel8x16 adds alpha times the packed 8 x kc panel a times the packed
// kc x 16 panel b to the 8 x 16 tile of C at c[0] (c[i*ldc+j]), in the
// columns j whose bit is set in cols's low 16 bits, in AVX-512F
// instructions (gemm_amd64.s); the other columns of C are not touched, so
// c need reach only the last of them in the last row. With bit 16 of cols
// set it stores the product instead, without reading C. kc >= 1; the
// caller checks the lengths and AVX-512F.
//
//go:noescape
func kernel8x16(kc int, a, b, c []float64, ldc int, alpha float64, cols uint64)

// kernel4x8 adds alpha times the packed 4 x kc panel a times the packed
// kc x 8 panel b to the 4 x 8 tile of C at c[0] (c[i*ldc+j]), in AVX2 and
// FMA instructions (gemm_amd64.s). kc >= 1; the caller checks the lengths
// and HaveFMA.
//
//go:noescape
func kernel4x8(kc int, a, b, c []float64, ldc int, alpha float64)
