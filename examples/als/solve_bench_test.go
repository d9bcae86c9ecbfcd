package main

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// benchRows is a user half-step of the MovieLens-20M shape, scaled down:
// 4000 users of the long tail's mean 145 ratings over 27000 items, 64
// factors.
func benchRows(b *testing.B) (*sparseRows, []float64, []float64, params) {
	b.Helper()
	const users, items, f = 4000, 27000, 64
	r := rand.New(rand.NewPCG(1, 2))
	s := buildRows(0, users, func(fn func(row, col int32, v float32)) {
		for u := range int32(users) {
			for range 20 + r.IntN(250) {
				fn(u, int32(r.IntN(items)), float32(1+r.IntN(10))/2)
			}
		}
	})
	if row, col, dup := s.duplicate(); dup {
		b.Logf("duplicate rating (%d, %d) left in", row, col)
	}
	o := make([]float64, items*f)
	for i := range o {
		o[i] = r.Float64() - 0.5
	}
	p := params{factors: f, reg: 0.1, alpha: 40, cgSteps: 3}
	return &s, o, gram(o, f), p
}

func BenchmarkHalfStep(b *testing.B) {
	reg := runtime.NewRegistry()
	primitives.Register(reg, agas.New(reg)) // the build's BLAS, as the program has it
	s, o, oto, p := benchRows(b)
	f := p.factors
	prev := make([]float64, s.rows()*f)
	for i := range prev {
		prev[i] = 0.01
	}
	out := make([]float64, s.rows()*f)
	// perRating reports the wall and the CPU time per rating: the CPU time
	// is what other programs on a shared machine do not inflate.
	perRating := func(b *testing.B, cpu0 time.Duration) {
		n := float64(b.N) * float64(s.nnz())
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/rating")
		b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/n, "cpu-ns/rating")
	}
	b.Run("exact", func(b *testing.B) {
		cpu0 := processCPU()
		for b.Loop() {
			clear(out)
			if err := solveBlock(s, o, oto, p, 0, s.rows(), out); err != nil {
				b.Fatal(err)
			}
		}
		perRating(b, cpu0)
	})
	b.Run("cg", func(b *testing.B) {
		a32 := make([]float32, f*f)
		toFloat32(a32, fullGram(oto, f, p.reg))
		var buf []float32
		cpu0 := processCPU()
		for b.Loop() {
			cgBlock(s, mirror32(&buf, o), a32, prev, p, 0, s.rows(), out)
		}
		perRating(b, cpu0)
	})
}
