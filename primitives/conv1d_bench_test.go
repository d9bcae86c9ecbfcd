package primitives

import (
	"testing"
)

// BenchmarkConv1DLocal times one locality's convolution of the (2000, 80,
// 3) array of Listing 2 with a (10, 3, 100) kernel, valid padding: the
// im2col blocks and their Gemms, on the calling goroutine, with the BLAS of
// the build (as Register sets it).
func BenchmarkConv1DLocal(b *testing.B) {
	useBLAS()
	const pages, steps, in, k, out = 2000, 80, 3, 10, 100
	x := globalData([]int{pages, steps, in}, 1, 0, 1)
	w := globalData([]int{k, in, out}, 2, 0, 1)
	g := conv1dGeom{steps: steps, in: in, out: out, k: k, stride: 1, dil: 1, outLen: steps - k + 1}
	dst := make([]float64, pages*g.outLen*out)
	b.ReportAllocs()
	for b.Loop() {
		conv1dRows(x, 0, steps, 0, g.outLen, w, g, dst, 0, pages*g.outLen)
	}
}
