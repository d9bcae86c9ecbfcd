package main

import (
	"math/rand/v2"
	"testing"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// BenchmarkAssignBlock is one Lloyd step's assignment of 100,000 points of
// 32 dimensions to 16 centres, block by block, on one goroutine: by the
// fused kernel (AVX2 where the CPU has it), by its Go version, and by a
// product of each block with the centres then a scan of the products.
func BenchmarkAssignBlock(b *testing.B) {
	reg := runtime.NewRegistry()
	primitives.Register(reg, agas.New(reg)) // the build's BLAS, as the program has it
	const n, d, k = 100000, 32, 16
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float64, n*d)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	centres := x[:k*d]
	for _, path := range []string{"fused", "go", "product"} {
		b.Run(path, func(b *testing.B) {
			a := newAssigner(nil, x, make([]float64, n), k, d, path != "product")
			a.setCentres(centres)
			p := make([]float64, k*d+k+2)
			for b.Loop() {
				for r0 := 0; r0 < n; r0 += blockRows {
					r1 := min(r0+blockRows, n)
					if path == "go" {
						p[k*d+k] += float64(nearestGo(x[r0*d:r1*d], a.ct, a.norms, a.labels[r0:r1], p[:k*d], p[k*d:k*d+k], d, k))
						continue
					}
					a.block(x[r0*d:r1*d], a.labels[r0:r1], a.prods[0], p, centres, false)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/point")
		})
	}
}
