package main

import (
	"math/rand/v2"
	"testing"
)

// TestDotAxpyMatchesGo checks the kernel the CG solver runs on against the
// plain Go loops, at lengths around its 8-wide blocks.
func TestDotAxpyMatchesGo(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 3, 7, 8, 9, 13, 16, 40, 64, 67} {
		s, d := make([]float64, n), make([]float64, n+3) // d and acc may be longer
		fast, slow := make([]float64, n+3), make([]float64, n+3)
		for i := range s {
			s[i] = rnd.NormFloat64()
		}
		for i := range d {
			d[i], fast[i] = rnd.NormFloat64(), rnd.NormFloat64()
			slow[i] = fast[i]
		}
		dotAxpy(s, d, fast, 0.75, -1.25)
		dotAxpyGo(s, d, slow, 0.75, -1.25)
		for i := range fast {
			if relDiff(fast[i], slow[i]) > 1e-12 {
				t.Fatalf("length %d: acc[%d] = %.17g, the Go loops give %.17g", n, i, fast[i], slow[i])
			}
		}
	}
}

// TestCGConvergesToExact: with as many steps as factors, CG solves each
// row's system exactly (up to rounding), so one iteration from the same
// start gives the exact solver's factors.
func TestCGConvergesToExact(t *testing.T) {
	g := synthetic{users: 40, items: 30, density: 0.2, seed: 6}
	p := testParams
	p.iterations = 1
	exact, _, err := runLocal(t, 1, options{synthetic: g, params: p})
	if err != nil {
		t.Fatal(err)
	}
	p.solver, p.cgSteps = solverCG, 4*p.factors
	cg, _, err := runLocal(t, 2, options{synthetic: g, params: p})
	if err != nil {
		t.Fatal(err)
	}
	for j := range exact.x.Data {
		if d := relDiff(cg.x.Data[j], exact.x.Data[j]); d > 1e-6 {
			t.Fatalf("X[%d]: cg %.12g, exact %.12g", j, cg.x.Data[j], exact.x.Data[j])
		}
	}
}
