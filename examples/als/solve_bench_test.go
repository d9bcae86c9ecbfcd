package main

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// benchRows is a half-step of the MovieLens-20M shape, scaled down: rows
// of 20 + [0, spread) ratings (uniform) over others other rows, 64
// factors, 4 CG steps (the als-large section's). Users: 4000 rows of mean
// 145 over 27000 items; items: 400 of mean 770 over 138000 users.
func benchRows(b *testing.B, rows, spread, others int) (*sparseRows, []float64, []float64, params) {
	b.Helper()
	const f = 64
	s := buildRows(0, rows, func(fn func(row, col int32, v float32)) {
		r := rand.New(rand.NewPCG(1, 2)) // the same ratings on both visits
		for u := range int32(rows) {
			for range 20 + r.IntN(spread) {
				fn(u, int32(r.IntN(others)), float32(1+r.IntN(10))/2)
			}
		}
	})
	if row, col, dup := s.duplicate(); dup {
		b.Logf("duplicate rating (%d, %d) left in", row, col)
	}
	r := rand.New(rand.NewPCG(3, 4))
	o := hugepage.Float64s(others * f) // as the gathered factors are
	o = o[:others*f]
	for i := range o {
		o[i] = r.Float64() - 0.5
	}
	p := params{factors: f, reg: 0.1, alpha: 40, cgSteps: 4}
	return &s, o, gram(o, f), p
}

func BenchmarkHalfStep(b *testing.B) {
	reg := runtime.NewRegistry()
	primitives.Register(reg, agas.New(reg)) // the build's BLAS, as the program has it
	b.Run("users", func(b *testing.B) { benchHalfStep(b, 4000, 250, 27000) })
	b.Run("items", func(b *testing.B) { benchHalfStep(b, 400, 1500, 138000) })
}

func benchHalfStep(b *testing.B, rows, spread, others int) {
	s, o, oto, p := benchRows(b, rows, spread, others)
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
