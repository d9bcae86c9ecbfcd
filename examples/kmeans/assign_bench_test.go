package main

import (
	"math/rand/v2"
	"testing"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// BenchmarkAssignBlock is one Lloyd step's assignment of 100,000 points of
// 32 dimensions to 16 centres, block by block, on one goroutine.
func BenchmarkAssignBlock(b *testing.B) {
	reg := runtime.NewRegistry()
	primitives.Register(reg, agas.New(reg)) // the build's BLAS, as the program has it
	const n, d, k = 100000, 32, 16
	r := rand.New(rand.NewPCG(1, 1))
	x := make([]float64, n*d)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	a := newAssigner(nil, x, make([]float64, n), k, d)
	centres := x[:k*d]
	a.setCentres(centres)
	p := make([]float64, k*d+k+2)
	for b.Loop() {
		for r0 := 0; r0 < n; r0 += blockRows {
			r1 := min(r0+blockRows, n)
			a.block(x[r0*d:r1*d], a.labels[r0:r1], a.prods[0], p, centres, false)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/point")
}
