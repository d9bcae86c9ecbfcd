package primitives

import (
	"context"
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas/blas64"
)

// Inverse returns the inverse of a square 2-D array (inverse_d), by
// distributed Gauss-Jordan elimination with partial pivoting on the rows
// where they are: a must be row-tiled (Tiled(annotate.Row), every tile
// holding whole rows; retile it first otherwise), and the inverse has a's
// tiling; it is a result derived from a (a's name with a "~<k>" suffix,
// generation one more).
//
// Each locality keeps its rows of a and of the identity, [A | X]. Step k
// (k = 0..n-1) picks as pivot the row, among those not yet pivots, with
// the largest |A[r, k]|: every locality offers its best (value, row) and
// one AllGather of two numbers per locality decides, the same everywhere
// (the smaller row on a tie). The pivot row's owner scales it by
// 1/A[r, k] and broadcasts A[r, k+1:] and X[r, :] from there (one
// communicator of the call per root, binomial tree); every locality then
// eliminates column k from its other rows with two rank-1 updates (Dger).
// Rows are not swapped: at the end row k of the inverse is X[r_k], with
// r_k step k's pivot, and one AllToAllV brings every row to its owner.
//
// Cost for n x n on p localities: about 3n³/p flops per locality; n steps
// of one AllGather of 2p numbers and one broadcast of at most 2n numbers,
// each ⌈log2 p⌉ rounds, so 2n·⌈log2 p⌉ message latencies on the critical
// path — latency-bound for small n — and about 2n²·⌈log2 p⌉ numbers
// sent; then an AllToAllV of n²/p numbers per locality. Memory per
// locality: its rows of A and of X (twice its tile), one pivot row at a
// time, and for the final exchange a copy of its rows of X.
//
// A matrix is singular to working precision when a step's largest pivot
// is at most n·ε·max|a| (ε the float64 machine epsilon): the result is an
// error naming the array and the column, on every locality. NaN or Inf in
// the matrix give that error too. The first collective, an AllReduce of
// max|a| on the Env's communicator reserved when the primitive is called,
// also makes every locality start only when all have a valid input.
func Inverse(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	const op = "Inverse"
	k := e.derive()
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (*Array, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		if err := e.checkInverse(op, x); err != nil {
			return nil, err
		}
		own := x.ownedData()
		norm := 0.0
		for _, v := range own {
			if av := math.Abs(v); av > norm || math.IsNaN(av) {
				norm = av
			}
		}
		got, err := r.AllReduce(ctx, []float64{norm}, nanMax).Get(ctx)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		norm = got[0]
		n := x.ann.Tiling.Shape[0]
		if !(norm > 0) || math.IsInf(norm, 0) {
			return nil, e.errorf(op, "matrix %s is singular: max|a| is %v", x.Name(), norm)
		}
		g := &gaussJordan{e: e, op: op, x: x, n: n, tol: float64(n) * 0x1p-52 * norm,
			base: fmt.Sprintf("%s/inverse~%d", CommunicatorName, k)}
		data, err := g.run(ctx, own)
		if err != nil {
			return nil, err
		}
		return e.newArray(op, derivedAnnotation(k, x), data)
	})
}

// nanMax is max that keeps a NaN.
func nanMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

// checkInverse checks that x is a square row-tiled matrix.
func (e *Env) checkInverse(op string, x *Array) error {
	s := x.ann.Tiling.Shape
	if len(s) != 2 || s[0] != s[1] || s[0] == 0 {
		return e.errorf(op, "array %s of shape %v: want a non-empty square 2-D matrix", x.Name(), s)
	}
	for l, t := range x.ann.Tiling.Tiles {
		if c := t.Owned[1]; c.Start != 0 || c.Stop != s[1] {
			return e.errorf(op, "array %s of shape %v: the tile of locality %d holds columns %v; Inverse wants a row tiling (Tiled(annotate.Row)), every tile whole rows: retile it first",
				x.Name(), s, l, c)
		}
	}
	return nil
}

// gaussJordan is one locality's state of an Inverse.
type gaussJordan struct {
	e    *Env
	op   string
	x    *Array
	n    int
	tol  float64
	base string
}

// run eliminates and returns this locality's rows of the inverse.
func (g *gaussJordan) run(ctx context.Context, own []float64) ([]float64, error) {
	e, n, x := g.e, g.n, g.x
	tiles := x.ann.Tiling.Tiles
	me := e.Locality()
	r0, mi := tiles[me].Owned[0].Start, tiles[me].Owned[0].Len()
	owner := func(row int) int {
		for l, t := range tiles {
			if t.Owned[0].Start <= row && row < t.Owned[0].Stop {
				return l
			}
		}
		return -1
	}

	// Only this function uses w and xi (collectives send copies): they
	// go back to the runtime when it returns.
	wt := runtime.NewTile(e.rt, mi*n, runtime.TileOptions{Uncleared: true})
	defer wt.Release()
	w := wt.Float64s() // the rows of A, eliminated
	copy(w, own)
	xt := runtime.NewTile(e.rt, mi*n, runtime.TileOptions{})
	defer xt.Release()
	xi := xt.Float64s() // the rows of X, from the identity
	for i := range mi {
		xi[i*n+r0+i] = 1
	}
	e.track(int64(8 * (len(w) + len(xi))))
	defer e.track(-int64(8 * len(w)))
	used := make([]bool, mi)
	pivots := make([]int, n) // step k's pivot row

	p := e.Size()
	pivComm, err := runtime.NewCommunicator(e.rt, g.base+"/pivot", nil, 0)
	if err != nil {
		e.track(-int64(8 * len(xi)))
		return nil, e.wrap(g.op, err)
	}
	defer pivComm.Close()
	from := make([]*runtime.Communicator, p)
	defer func() {
		for _, c := range from {
			if c != nil {
				c.Close()
			}
		}
	}()
	fail := func(err error) ([]float64, error) {
		e.track(-int64(8 * len(xi)))
		return nil, err
	}
	f := make([]float64, mi) // the multipliers of column k
	for k := range n {
		best, bestRow := -1.0, -1
		for i := range mi {
			if v := math.Abs(w[i*n+k]); !used[i] && (v > best || math.IsNaN(v)) {
				best, bestRow = v, r0+i
				if math.IsNaN(v) {
					break
				}
			}
		}
		all, err := pivComm.AllGather(ctx, []float64{best, float64(bestRow)}).Get(ctx)
		if err != nil {
			return fail(e.wrap(g.op, err))
		}
		best, row := -1.0, -1
		for l := 0; l+1 < len(all); l += 2 {
			v, rw := all[l], int(all[l+1])
			if rw >= 0 && (v > best || math.IsNaN(v) || (v == best && rw < row)) {
				best, row = v, rw
				if math.IsNaN(v) {
					break
				}
			}
		}
		if !(best > g.tol) {
			return fail(e.errorf(g.op, "matrix %s is singular to working precision: at column %d the largest remaining pivot is %g (tolerance n·ε·max|a| = %g)",
				x.Name(), k, best, g.tol))
		}
		pivots[k] = row
		src := owner(row)
		if from[src] == nil {
			if from[src], err = runtime.NewCommunicator(e.rt, fmt.Sprintf("%s/from%d", g.base, src), nil, src); err != nil {
				return fail(e.wrap(g.op, err))
			}
		}
		// The pivot row, scaled: A[row, k+1:] then X[row, :].
		var prow []float64
		if src == me {
			i := row - r0
			used[i] = true
			s := 1 / w[i*n+k]
			blas64.Scal(s, blas64.Vector{N: n - k, Inc: 1, Data: w[i*n+k:]})
			blas64.Scal(s, blas64.Vector{N: n, Inc: 1, Data: xi[i*n:]})
			prow = make([]float64, 0, 2*n-k-1)
			prow = append(append(prow, w[i*n+k+1:(i+1)*n]...), xi[i*n:(i+1)*n]...)
		}
		got, err := from[src].Broadcast(ctx, prow).Get(ctx)
		if err != nil {
			return fail(e.wrap(g.op, err))
		}
		if len(got) != 2*n-k-1 {
			return fail(e.errorf(g.op, "step %d: pivot row of %d elements from locality %d, want %d", k, len(got), src, 2*n-k-1))
		}
		// Eliminate column k from every other row: A[i, k+1:] -= f_i·prow_A
		// and X[i, :] -= f_i·prow_X with f_i = A[i, k].
		for i := range mi {
			f[i] = w[i*n+k]
			if r0+i == row {
				f[i] = 0
			} else {
				w[i*n+k] = 0
			}
		}
		fv := blas64.Vector{N: mi, Inc: 1, Data: f}
		if k+1 < n {
			blas64.Ger(-1, fv, blas64.Vector{N: n - k - 1, Inc: 1, Data: got}, general(mi, n-k-1, n, w[k+1:]))
		}
		blas64.Ger(-1, fv, blas64.Vector{N: n, Inc: 1, Data: got[n-k-1:]}, general(mi, n, n, xi))
	}

	// Row k of the inverse is X[pivots[k]]: send each to the owner of k.
	blocks := make([][]float64, p)
	for l, t := range tiles {
		for k := t.Owned[0].Start; k < t.Owned[0].Stop; k++ {
			if rw := pivots[k]; rw >= r0 && rw < r0+mi {
				blocks[l] = append(blocks[l], xi[(rw-r0)*n:(rw-r0+1)*n]...)
			}
		}
	}
	e.track(-int64(8 * len(xi)))
	moved, err := pivComm.AllToAllV(ctx, blocks).Get(ctx)
	if err != nil {
		return nil, e.wrap(g.op, err)
	}
	out := e.tile(mi * n) // counted by newArray
	next := make([]int, p)
	for k := r0; k < r0+mi; k++ {
		src := owner(pivots[k])
		if next[src]+n > len(moved[src]) {
			return nil, e.errorf(g.op, "row %d of the inverse: locality %d sent %d elements", k, src, len(moved[src]))
		}
		copy(out[(k-r0)*n:], moved[src][next[src]:next[src]+n])
		next[src] += n
	}
	return out, nil
}
