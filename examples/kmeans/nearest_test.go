package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

// nearestCase runs both kernels on the same points and returns their
// labels, sums, counts and changed counts.
type nearestRun struct {
	labels, sums, counts []float64
	changed              int
}

func runNearest(f func(x, ct, norms, labels, sums, counts []float64, d, k int) int, x, centres, old []float64, d, k int) nearestRun {
	ct, norms := make([]float64, d*kernelWidth), make([]float64, kernelWidth)
	kernelCentres(centres, k, d, ct, norms)
	r := nearestRun{labels: append([]float64(nil), old...), sums: make([]float64, k*d), counts: make([]float64, k)}
	r.changed = f(x, ct, norms, r.labels, r.sums, r.counts, d, k)
	return r
}

func sameBits(a, b []float64) int {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// TestNearestKernels: the AVX2 kernel and the Go one agree to the bit on
// odd and even point counts, dimensions that are and are not multiples of
// 4, padded and full centre sets, tied centres (the first wins) and NaN
// points (label 0); and their labels are the nearest centres by direct
// distance.
func TestNearestKernels(t *testing.T) {
	if !haveAVX2() {
		t.Log("no AVX2 and FMA here: only the Go kernel is checked")
	}
	r := rand.New(rand.NewPCG(3, 9))
	for _, c := range []struct{ n, d, k int }{
		{0, 4, 3}, {1, 1, 1}, {2, 3, 2}, {7, 5, 4}, {64, 32, 16}, {513, 33, 16}, {300, 8, 11}, {101, 2, 16},
	} {
		x := make([]float64, c.n*c.d)
		for i := range x {
			x[i] = r.NormFloat64() * 3
		}
		centres := make([]float64, c.k*c.d)
		for i := range centres {
			centres[i] = r.NormFloat64() * 3
		}
		if c.k > 2 { // centre 2 repeats centre 1: ties go to 1
			copy(centres[2*c.d:3*c.d], centres[c.d:2*c.d])
		}
		if c.n > 5 {
			x[5*c.d] = math.NaN()
		}
		old := make([]float64, c.n)
		for i := range old {
			old[i] = float64(r.IntN(c.k+1) - 1)
		}
		g := runNearest(nearestGo, x, centres, old, c.d, c.k)
		if haveAVX2() {
			a := runNearest(nearestAVX2, x, centres, old, c.d, c.k)
			for name, p := range map[string][2][]float64{"labels": {a.labels, g.labels}, "sums": {a.sums, g.sums}, "counts": {a.counts, g.counts}} {
				if i := sameBits(p[0], p[1]); i >= 0 {
					t.Errorf("n %d, d %d, k %d: %s[%d]: AVX2 %v, Go %v", c.n, c.d, c.k, name, i, p[0][i], p[1][i])
				}
			}
			if a.changed != g.changed {
				t.Errorf("n %d, d %d, k %d: changed: AVX2 %d, Go %d", c.n, c.d, c.k, a.changed, g.changed)
			}
		}
		// Against the direct distances, and the sums and counts rebuilt.
		sums, counts, changed := make([]float64, c.k*c.d), make([]float64, c.k), 0
		for i := range c.n {
			xi := x[i*c.d : (i+1)*c.d]
			best, bd := 0, math.Inf(1)
			for k := range c.k {
				dist := 0.0
				for j, v := range xi {
					dist += (v - centres[k*c.d+j]) * (v - centres[k*c.d+j])
				}
				if k == 0 || dist < bd-1e-9*math.Abs(bd) {
					best, bd = k, dist
				}
			}
			if float64(best) != g.labels[i] {
				t.Errorf("n %d, d %d, k %d: point %d labelled %v, nearest is %d", c.n, c.d, c.k, i, g.labels[i], best)
			}
			if float64(best) != old[i] {
				changed++
			}
			counts[best]++
			for j, v := range xi {
				sums[best*c.d+j] += v
			}
		}
		if changed != g.changed || sameBits(counts, g.counts) >= 0 {
			t.Errorf("n %d, d %d, k %d: changed %d, counts %v; want %d, %v", c.n, c.d, c.k, g.changed, g.counts, changed, counts)
		}
		for i := range sums {
			if sums[i] != g.sums[i] && !(math.IsNaN(sums[i]) && math.IsNaN(g.sums[i])) {
				t.Errorf("n %d, d %d, k %d: sums[%d] %v, want %v", c.n, c.d, c.k, i, g.sums[i], sums[i])
				break
			}
		}
	}
}

// TestBlockPaths: a block assigned by the fused kernel and by products
// then scans gets the same labels, counts and changed labels, sums within
// rounding and the same inertia within rounding, on points around
// separate centres (no near ties).
func TestBlockPaths(t *testing.T) {
	if !haveAVX2() {
		t.Skip("no AVX2 and FMA here: the product path is the only one")
	}
	if a := newAssigner(nil, nil, nil, kernelWidth+1, 3, true); a.fused || len(a.norms) != kernelWidth+1 {
		t.Errorf("k = %d: fused %v with %d norms, want the product path with %d", kernelWidth+1, a.fused, len(a.norms), kernelWidth+1)
	}
	r := rand.New(rand.NewPCG(5, 2))
	for _, c := range []struct{ n, d, k int }{{1, 3, 1}, {511, 32, 16}, {1200, 7, 5}} {
		centres := make([]float64, c.k*c.d)
		for i := range centres {
			centres[i] = r.Float64() * 100
		}
		x := make([]float64, c.n*c.d)
		for i := range c.n {
			for j := range c.d {
				x[i*c.d+j] = centres[(i%c.k)*c.d+j] + r.NormFloat64()
			}
		}
		var got [2][]float64
		var labels [2][]float64
		for f, fused := range []bool{true, false} {
			a := newAssigner(nil, x, make([]float64, c.n), c.k, c.d, fused)
			if a.fused != fused {
				t.Fatalf("newAssigner(fused %v) for k %d: fused %v", fused, c.k, a.fused)
			}
			a.setCentres(centres)
			prod := make([]float64, blockRows*c.k)
			got[f] = make([]float64, c.k*c.d+c.k+2)
			for r0 := 0; r0 < c.n; r0 += blockRows {
				r1 := min(r0+blockRows, c.n)
				a.block(x[r0*c.d:r1*c.d], a.labels[r0:r1], prod, got[f], centres, true)
			}
			labels[f] = a.labels
		}
		if i := sameBits(labels[0], labels[1]); i >= 0 {
			t.Errorf("n %d, d %d, k %d: point %d labelled %v fused, %v by products", c.n, c.d, c.k, i, labels[0][i], labels[1][i])
		}
		for i := range got[0] {
			if math.Abs(got[0][i]-got[1][i]) > 1e-12*math.Abs(got[1][i]) {
				t.Errorf("n %d, d %d, k %d: part[%d] %v fused, %v by products", c.n, c.d, c.k, i, got[0][i], got[1][i])
			}
		}
		for i, l := range labels[0] {
			if int(l) != i%c.k {
				t.Errorf("n %d, d %d, k %d: point %d labelled %v, drawn around centre %d", c.n, c.d, c.k, i, l, i%c.k)
				break
			}
		}
	}
}
