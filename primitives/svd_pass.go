package primitives

import (
	goruntime "runtime"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// The products of the truncated SVD with this locality's rows of A (rows
// x n, row-major, the largest thing the SVD reads: 800 MB of a 200,000 x
// 2,000 matrix on each of four localities). Each is a pass over A, run
// as BLAS calls on blocks of rows, split over up to GOMAXPROCS goroutines
// (one per locality when localities share the cores), each goroutine
// summing its own part of a product Xᵀ·A.

// passBlockBytes is the most bytes of A's rows that one block of a fused
// pass (fusedPass) holds: the block is still in the cache when its second
// product reads it. 2 MiB: blocks of 64 to 512 rows of 2,000 columns ran
// the two products alike (about 13% faster than two passes over the
// whole of A, OpenBLAS on one core), and 2 MiB leaves room in the L3
// cache for the other localities' blocks.
const passBlockBytes = 2 << 20

// minPassRows is the fewest rows a goroutine of a pass takes.
const minPassRows = 256

// passWorkers is how many goroutines a pass over rows rows runs on.
func passWorkers(rows int) int {
	return max(1, min(goruntime.GOMAXPROCS(0), rows/minPassRows))
}

// rowWorkers runs fn(w, r0, r1) on nw goroutines, worker w taking rows
// [r0, r1) of rows.
func rowWorkers(rows, nw int, fn func(w, r0, r1 int)) {
	if nw == 1 {
		fn(0, 0, rows)
		return
	}
	var wg sync.WaitGroup
	for w := range nw {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w, w*rows/nw, (w+1)*rows/nw)
		}()
	}
	wg.Wait()
}

// rowRange returns rows [r0, r1) of a.
func rowRange(a blas64.General, r0, r1 int) blas64.General {
	if r1 <= r0 {
		return blas64.General{Cols: a.Cols, Stride: a.Stride}
	}
	return blas64.General{Rows: r1 - r0, Cols: a.Cols, Stride: a.Stride, Data: a.Data[r0*a.Stride : (r1-1)*a.Stride+a.Cols]}
}

// timesRight sets y = a·w (a rows x n, w n x l, y rows x l).
func timesRight(a, w, y blas64.General) {
	rowWorkers(a.Rows, passWorkers(a.Rows), func(_, r0, r1 int) {
		if r1 > r0 {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, rowRange(a, r0, r1), w, 0, rowRange(y, r0, r1))
		}
	})
}

// transTimes sets g (l x n, row-major) to xᵀ·a over this locality's rows
// (x rows x l, a rows x n): each worker sums its rows' part.
func transTimes(x, a blas64.General, g []float64) {
	l, n := x.Cols, a.Cols
	nw := passWorkers(a.Rows)
	parts := partSums(l*n, nw)
	rowWorkers(a.Rows, nw, func(w, r0, r1 int) {
		gw := blas64.General{Rows: l, Cols: n, Stride: n, Data: g}
		if w > 0 {
			gw.Data = parts[w-1]
		}
		if r1 > r0 {
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, rowRange(x, r0, r1), rowRange(a, r0, r1), 0, gw)
		} else {
			clear(gw.Data[:l*n])
		}
	})
	addParts(g[:l*n], parts)
}

// fusedPass sets y = a·w and g = yᵀ·a (l x n) in one pass over a, block
// by block of rows: a block's rows of y are formed, then, the block still
// in the cache, its part of yᵀ·a. Two products for one reading of A.
func fusedPass(a, w, y blas64.General, g []float64) {
	l, n := w.Cols, a.Cols
	bs := max(8, passBlockBytes/8/max(n, 1))
	nw := passWorkers(a.Rows)
	parts := partSums(l*n, nw)
	rowWorkers(a.Rows, nw, func(wk, r0, r1 int) {
		gw := blas64.General{Rows: l, Cols: n, Stride: n, Data: g}
		if wk > 0 {
			gw.Data = parts[wk-1]
		}
		clear(gw.Data[:l*n])
		for b0 := r0; b0 < r1; b0 += bs {
			b1 := min(b0+bs, r1)
			ab, yb := rowRange(a, b0, b1), rowRange(y, b0, b1)
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, ab, w, 0, yb)
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, yb, ab, 1, gw)
		}
	})
	addParts(g[:l*n], parts)
}

// partSums returns the buffers of the workers after the first of nw:
// each sums its own part of an n-element product.
func partSums(n, nw int) [][]float64 {
	parts := make([][]float64, nw-1)
	for i := range parts {
		parts[i] = make([]float64, n)
	}
	return parts
}

// addParts adds the workers' parts to g.
func addParts(g []float64, parts [][]float64) {
	for _, p := range parts {
		for i, v := range p {
			g[i] += v
		}
	}
}

// solveRows is the most rows rightSolve gives the BLAS at once: OpenBLAS's
// triangular solve on all of a 50,000 x 30 matrix touched 12 MB of
// buffer it had not touched before (3,000 page faults, once per process)
// and took 2.5 times as long as in blocks of 256 rows, which touched none.
const solveRows = 256

// rightSolve sets x to x·R⁻¹ for the upper triangular r, in blocks of
// rows.
func rightSolve(x blas64.General, r blas64.Triangular) {
	rowWorkers(x.Rows, passWorkers(x.Rows), func(_, r0, r1 int) {
		for b0 := r0; b0 < r1; b0 += solveRows {
			blas64.Trsm(blas.Right, blas.NoTrans, 1, r, rowRange(x, b0, min(b0+solveRows, r1)))
		}
	})
}

// gram sets c (l x l, the upper triangle; the lower left as it was) to
// xᵀ·x for x rows x l.
func gram(x blas64.General, c []float64) {
	l := x.Cols
	cs := blas64.Symmetric{Uplo: blas.Upper, N: l, Stride: l, Data: c}
	if x.Rows == 0 {
		for i := range l {
			clear(c[i*l+i : (i+1)*l])
		}
		return
	}
	blas64.Syrk(blas.Trans, 1, x, 0, cs)
}
