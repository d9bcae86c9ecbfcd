package main

import "math"

// kernelWidth is how many centres the fused kernel compares a point with:
// fewer are padded (zero coordinates, +Inf norm), more take the product
// path (assigner.block).
const kernelWidth = 16

// nearestGo is the fused assignment kernel in Go, the reference of the
// AVX2 one (nearest_amd64.s), which computes the same values the same way
// so the two agree to the bit. For each point x_i (x is n x d, n =
// len(labels)) it takes g_c = x_i·c for the kw = len(norms) columns of ct
// (d x kw, centre c in column c), accumulated one fused multiply-add per
// coordinate in coordinate order, then the distances |c|² - 2 g_c
// (|x_i|², the same for every c, left out, as scikit-learn does). The
// label is the first c whose distance is the least of those that are not
// NaN, and 0 if that is none of the first k (every distance NaN). It sets
// labels[i], adds x_i to row label of sums (k x d) and 1 to
// counts[label], and returns how many labels changed.
func nearestGo(x, ct, norms, labels, sums, counts []float64, d, k int) (changed int) {
	kw := len(norms)
	dist := make([]float64, kw)
	for i := range labels {
		xi := x[i*d : i*d+d]
		clear(dist)
		for j, v := range xi {
			row := ct[j*kw : j*kw+kw]
			row = row[:len(dist)]
			for c := range dist {
				dist[c] = math.FMA(v, row[c], dist[c])
			}
		}
		m := math.Inf(1)
		for c, g := range dist {
			v := norms[c] - 2*g
			dist[c] = v
			if v < m {
				m = v
			}
		}
		best := 0
		for c, v := range dist {
			if v == m {
				best = c
				break
			}
		}
		if best >= k {
			best = 0
		}
		if float64(best) != labels[i] {
			changed++
			labels[i] = float64(best)
		}
		s := sums[best*d : best*d+d]
		xi = xi[:len(s)]
		for j := range s {
			s[j] += xi[j]
		}
		counts[best]++
	}
	return changed
}

// kernelCentres lays the k x d centres out for the kernels: ct (d x
// kernelWidth) with centre c in column c, zeros beyond k, and norms
// (kernelWidth) their squared norms, +Inf beyond k, so no padding column
// is ever nearer than a centre.
func kernelCentres(centres []float64, k, d int, ct, norms []float64) {
	clear(ct)
	for c := range kernelWidth {
		if c >= k {
			norms[c] = math.Inf(1)
			continue
		}
		norms[c] = 0
		for j, v := range centres[c*d : (c+1)*d] {
			norms[c] += v * v
			ct[j*kernelWidth+c] = v
		}
	}
}
