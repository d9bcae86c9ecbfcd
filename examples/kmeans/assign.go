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

// assign labels every point of local (rows x d) with its nearest centre
// and returns the partial sums of one Lloyd step: k x d sums of the points
// of each cluster, k counts and the number of labels that changed, in the
// layout of part (k*d + k + 1). As scikit-learn does, a block of points
// meets the centres in one matrix product: the nearest centre of x
// minimises |c|² - 2 x·c (|x|² is the same for every c). Blocks run as
// tasks on the locality's lanes, each into sums of its own, added in block
// order so that the result does not depend on the lanes.
func assign(ctx context.Context, rt *runtime.Runtime, local, centres, labels []float64, k, d int, part []float64) error {
	rows := len(local) / d
	norms := make([]float64, k)
	ct := make([]float64, d*k) // the centres as columns: the product's kernel wants no transpose
	for c := range k {
		for j, v := range centres[c*d : (c+1)*d] {
			norms[c] += v * v
			ct[j*k+c] = v
		}
	}
	nb := (rows + blockRows - 1) / blockRows
	parts := make([][]float64, nb)
	var tasks []*runtime.Future[struct{}]
	for b := range nb {
		tasks = append(tasks, runtime.SpawnNamed(ctx, rt, "kmeans.assign", func(ctx context.Context) (struct{}, error) {
			r0, r1 := b*blockRows, min((b+1)*blockRows, rows)
			parts[b] = assignBlock(local[r0*d:r1*d], ct, norms, labels[r0:r1], k, d)
			return struct{}{}, nil
		}))
	}
	if _, err := runtime.WhenAll(tasks...).Get(ctx); err != nil {
		return err
	}
	for _, p := range parts {
		for i, v := range p {
			part[i] += v
		}
	}
	return nil
}

// assignBlock is assign for one block of points x, against the centres as
// the columns of ct (d x k); it returns the block's sums, counts and
// changed labels.
func assignBlock(x, ct, norms, labels []float64, k, d int) []float64 {
	n := len(x) / d
	part := make([]float64, k*d+k+1)
	prod := make([]float64, n*k) // x · centresᵀ
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: n, Cols: d, Stride: d, Data: x},
		blas64.General{Rows: d, Cols: k, Stride: k, Data: ct}, 0,
		blas64.General{Rows: n, Cols: k, Stride: k, Data: prod})
	for i := range n {
		row := prod[i*k : i*k+k]
		best, bestDist := 0, math.Inf(1)
		for c, g := range row {
			if v := norms[c] - 2*g; v < bestDist {
				best, bestDist = c, v
			}
		}
		if float64(best) != labels[i] {
			part[k*d+k]++
			labels[i] = float64(best)
		}
		s := part[best*d : best*d+d]
		xi := x[i*d : i*d+d]
		xi = xi[:len(s)]
		for j := range s {
			s[j] += xi[j]
		}
		part[k*d+best]++
	}
	return part
}
