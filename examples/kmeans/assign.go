package main

import (
	"context"
	"math"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// blockRows is how many points one product with the centres covers.
const blockRows = 512

// segments is how many consecutive runs of blocks one assignment is cut
// into: each a task on the locality's lanes with sums of its own, added in
// segment order, so that the result does not depend on the lanes.
const segments = 16

// assigner is a locality's assignment step, its buffers kept from one
// Lloyd iteration to the next.
type assigner struct {
	rt      *runtime.Runtime
	local   []float64 // rows x d points
	labels  []float64 // rows
	k, d    int
	ct      []float64   // the centres as columns (d x k, or d x kernelWidth for the fused kernel)
	norms   []float64   // |c|² of every centre (kernelWidth of them for the fused kernel)
	fused   bool        // nearestAVX2, not a product then a scan
	parts   [][]float64 // per segment: k x d sums, k counts, changed labels, inertia
	prods   [][]float64 // per segment: a block's products with the centres
	inertia float64     // of the last assign with inertia
}

// newAssigner is the assignment of the points local (rows x d) and their
// labels to k centres: by the fused kernel (nearestAVX2) when fused and
// it can (an AVX2 CPU, k <= kernelWidth), else by products then scans.
// The Go version of the kernel (nearestGo) is its reference, not a
// fallback: scalar, it is slower than the products.
func newAssigner(rt *runtime.Runtime, local, labels []float64, k, d int, fused bool) *assigner {
	a := &assigner{rt: rt, local: local, labels: labels, k: k, d: d, fused: fused && haveAVX2() && k <= kernelWidth}
	if a.fused {
		a.ct, a.norms = make([]float64, d*kernelWidth), make([]float64, kernelWidth)
	} else {
		a.ct, a.norms = make([]float64, d*k), make([]float64, k)
	}
	for range segments {
		a.parts = append(a.parts, make([]float64, k*d+k+2))
		if !a.fused {
			a.prods = append(a.prods, make([]float64, blockRows*k))
		} else {
			a.prods = append(a.prods, nil)
		}
	}
	return a
}

// assign labels every point with its nearest centre and adds one Lloyd
// step's partial sums into part (k*d + k + 1: k x d sums of the points of
// each cluster, k counts, the number of labels that changed). As
// scikit-learn does, a block of points meets the centres in one matrix
// product: the nearest centre of x minimises |c|² - 2 x·c (|x|² is the
// same for every c), and the block's labels, sums and counts are taken
// right after its product, while it is in the cache. With inertia, it
// also sums every point's squared distance to its centre, exactly
// ((x - c)², not from the product), into a.inertia.
func (a *assigner) assign(ctx context.Context, centres, part []float64, inertia bool) error {
	d := a.d
	a.setCentres(centres)
	rows := len(a.local) / d
	nb := (rows + blockRows - 1) / blockRows
	tasks := make([]*runtime.Future[struct{}], 0, segments)
	for s := range segments {
		b0, b1 := nb*s/segments, nb*(s+1)/segments
		tasks = append(tasks, runtime.SpawnNamed(ctx, a.rt, "kmeans.assign", func(ctx context.Context) (struct{}, error) {
			p := a.parts[s]
			clear(p)
			for b := b0; b < b1; b++ {
				r0, r1 := b*blockRows, min((b+1)*blockRows, rows)
				a.block(a.local[r0*d:r1*d], a.labels[r0:r1], a.prods[s], p, centres, inertia)
			}
			return struct{}{}, nil
		}))
	}
	if _, err := runtime.WhenAll(tasks...).Get(ctx); err != nil {
		return err
	}
	a.inertia = 0
	for _, p := range a.parts {
		for i, v := range p[:len(part)] {
			part[i] += v
		}
		a.inertia += p[len(part)]
	}
	return nil
}

// setCentres lays the centres (k x d) out for the products: as columns,
// so the kernels want no transpose, with their squared norms.
func (a *assigner) setCentres(centres []float64) {
	k, d := a.k, a.d
	if a.fused {
		kernelCentres(centres, k, d, a.ct, a.norms)
		return
	}
	for c := range k {
		a.norms[c] = 0
		for j, v := range centres[c*d : (c+1)*d] {
			a.norms[c] += v * v
			a.ct[j*k+c] = v
		}
	}
}

// block assigns the points x (n x d) with their labels, adding to p (the
// layout of assign's part, then the inertia); prod has room for n x k.
func (a *assigner) block(x, labels, prod, p, centres []float64, inertia bool) {
	k, d := a.k, a.d
	if a.fused {
		// The fused kernel: products, labels, sums and counts in one go
		// over each point while it is in the L1 cache.
		p[k*d+k] += float64(nearestAVX2(x, a.ct, a.norms, labels, p[:k*d], p[k*d:k*d+k], d, k))
		if inertia {
			p[k*d+k+1] += sqDistances(x, labels, centres, d)
		}
		return
	}
	n := len(x) / d
	prod = prod[:n*k] // x · centresᵀ
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: n, Cols: d, Stride: d, Data: x},
		blas64.General{Rows: d, Cols: k, Stride: k, Data: a.ct}, 0,
		blas64.General{Rows: n, Cols: k, Stride: k, Data: prod})
	norms := a.norms[:k]
	changed, in := 0.0, 0.0
	for i := range n {
		// |c|² - 2 x·c for every c and their minimum without a branch,
		// then the first c reaching it: one hard-to-predict branch per
		// point rather than one per centre.
		row := prod[i*k : i*k+k]
		row = row[:len(norms)]
		m := math.Inf(1)
		for c, g := range row {
			v := norms[c] - 2*g
			row[c] = v
			m = min(m, v)
		}
		best := 0
		for c, v := range row {
			if v == m {
				best = c
				break
			}
		}
		if float64(best) != labels[i] {
			changed++
			labels[i] = float64(best)
		}
		s := p[best*d : best*d+d]
		xi := x[i*d : i*d+d]
		xi = xi[:len(s)]
		for j := range s {
			s[j] += xi[j]
		}
		p[k*d+best]++
		if inertia {
			c := centres[best*d : best*d+d]
			c = c[:len(xi)]
			for j, v := range xi {
				t := v - c[j]
				in += t * t
			}
		}
	}
	p[k*d+k] += changed
	p[k*d+k+1] += in
}

// sqDistances sums the squared distance of every point of x (n x d) to
// its centre (labels), exactly: (x - c)², not from the products. Four
// partial sums over the coordinates (j mod 4) keep four additions in
// flight; each point's four are added to the total.
func sqDistances(x, labels, centres []float64, d int) float64 {
	in := 0.0
	for i, l := range labels {
		xi := x[i*d : i*d+d]
		c := centres[int(l)*d : int(l)*d+d]
		c = c[:len(xi)]
		var s0, s1, s2, s3 float64
		j := 0
		for ; j+4 <= len(xi); j += 4 {
			t0, t1, t2, t3 := xi[j]-c[j], xi[j+1]-c[j+1], xi[j+2]-c[j+2], xi[j+3]-c[j+3]
			s0 += t0 * t0
			s1 += t1 * t1
			s2 += t2 * t2
			s3 += t3 * t3
		}
		for ; j < len(xi); j++ {
			t := xi[j] - c[j]
			s0 += t * t
		}
		in += (s0 + s1) + (s2 + s3)
	}
	return in
}
