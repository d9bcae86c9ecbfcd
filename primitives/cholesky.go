package primitives

import (
	"context"
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// Cholesky returns L, the lower triangular factor of a = L·Lᵀ, for a
// symmetric positive definite matrix laid out block-cyclically
// (BlockCyclic, square blocks); only a's lower triangle is read. L has
// a's layout and zeros above the diagonal; it is a result derived from a
// (a's name with a "~<k>" suffix, generation one more).
//
// The factorisation is the tiled right-looking algorithm as a task graph:
// for each step k, potrf(k,k) factors the diagonal tile, trsm(i,k) solves
// the tiles below it, and gemm kernels update the trailing tiles (i,j)
// with L(i,k)·L(j,k)ᵀ: gemm(j,j,k) a diagonal tile, gemm(i0:i1,j,k) the
// tiles of a column that a locality has one below the other, up to
// cholChunk of them in one product (cholUpdates). Every kernel is a task
// on the locality owning its tiles (named after the kernel and the tiles
// in traces), ready when the futures of its input tiles are; ready
// kernels run by rank (tileGraph.ranked), those making tiles of the
// earliest column first, so the panel of step k+1 starts as soon as its
// own tiles are updated, ahead of the rest of step k's update
// (lookahead). A tile of L's panel travels, once it is made, to each
// locality that needs it, once (runtime.Channel).
//
// A matrix that is not positive definite (a pivot that is not positive,
// or NaN) fails the result on every locality with a
// *NotPositiveDefiniteError naming the global column. A matrix that is not
// square, not block-cyclic or with blocks that are not square is an error
// naming the array.
func Cholesky(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	const op = "Cholesky"
	k := e.derive()
	return graphCollective(ctx, e, op, func(ctx context.Context, r, end *runtime.Reservation) (*Array, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		pinned := true
		defer func() {
			if pinned {
				x.unpin()
			}
		}()
		if err := e.adopt(op, x); err != nil {
			return nil, err
		}
		if err := e.checkCyclic(op, x, true); err != nil {
			return nil, err
		}
		// The start barrier also tells whether every locality donated x.
		mine := 0.0
		if donatable(x) {
			mine = 1
		}
		all, err := r.AllReduce(ctx, []float64{mine}, math.Min).Get(ctx)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		data, src := []float64(nil), x.data
		if all[0] == 1 {
			pinned = false
			if data, err = e.inherit(ctx, op, x); err != nil {
				return nil, err
			}
			src = nil
		} else {
			data = e.tileToSet(len(x.data))
		}
		v := newCyclicMatrix(x.ann.Tiling, e.Locality(), data)
		if err := e.cholesky(ctx, op, fmt.Sprintf("%s/cholesky~%d", CommunicatorName, k), end, x.Name(), v, src); err != nil {
			return nil, err
		}
		v.zeroUpper()
		return e.newArray(op, derivedAnnotation(k, x), data)
	})
}

// cholesky factors the matrix whose local part is src (v's layout; nil:
// v holds it already) into v (its lower triangle; v's tiles above the
// diagonal cleared) by the task graph of Cholesky, over a channel named
// base.
func (e *Env) cholesky(ctx context.Context, op, base string, end *runtime.Reservation, name string, v *cyclicMatrix, src []float64) error {
	g, err := newTileGraph(ctx, e, op, base, end, func(col int) error {
		return &NotPositiveDefiniteError{Array: name, Column: col}
	})
	if err != nil {
		return err
	}
	nt, me, nb := v.nbr, v.me, v.c.RowBlock
	tag := func(i, j int) uint64 { return uint64(i*nt + j) }
	// rank orders the ready kernels. Those of the next cholLookahead
	// columns (j <= k+cholLookahead: their tiles join the next panels,
	// the critical path) go first, the one making tile (i, j) at step k
	// before those of later columns, then of later steps, then of later
	// rows; the rest of the update after them, step by step, so that a
	// step's received and packed tiles go back before the next steps
	// need as many (graphStep).
	n3 := int64(nt) * int64(nt) * int64(nt)
	rank := func(i, j, k int) int64 {
		if j <= k+cholLookahead {
			return (int64(j)*int64(nt)+int64(k))*int64(nt) + int64(i)
		}
		return n3 + (int64(k)*int64(nt)+int64(j))*int64(nt) + int64(i)
	}
	u := newCholUpdates(v, g, rank)
	u.load(src)
	for k := range nt {
		step := g.beginStep()
		// panel[i]: L(i, k) here, when this locality has or needs it.
		panel := make([]tileFuture, nt)
		// Who needs L(k, k): the owners of the tiles below it.
		need := make([]bool, e.Size())
		for i := k + 1; i < nt; i++ {
			need[v.owner(i, k)] = true
		}
		if v.mine(k, k) {
			t := v.tile(k, k)
			f := g.ranked(fmt.Sprintf("potrf(%d,%d)", k, k), rank(k, k, k), func([]blas64.General) (blas64.General, error) {
				return t, potrf(t, k*nb, name)
			}, u.version(k, k))
			panel[k] = f
			g.send(f, tag(k, k), v.rows(k), v.cols(k), destinations(need, me))
		} else if need[me] {
			panel[k] = g.recv(v.owner(k, k), tag(k, k), v.rows(k), v.cols(k))
		}
		for i := k + 1; i < nt; i++ {
			// Who needs L(i, k): the owners of row i and column i of the
			// trailing matrix.
			need := make([]bool, e.Size())
			for j := k + 1; j <= i; j++ {
				need[v.owner(i, j)] = true
			}
			for m := i; m < nt; m++ {
				need[v.owner(m, i)] = true
			}
			if v.mine(i, k) {
				t := v.tile(i, k)
				f := g.ranked(fmt.Sprintf("trsm(%d,%d)", i, k), rank(i, k, k), func(vs []blas64.General) (blas64.General, error) {
					l := vs[1]
					blas64.Trsm(blas.Right, blas.Trans, 1, blas64.Triangular{Uplo: blas.Lower, Diag: blas.NonUnit, N: l.Rows, Stride: l.Stride, Data: l.Data}, t)
					return t, nil
				}, u.version(i, k), panel[k])
				panel[i] = f
				g.send(f, tag(i, k), v.rows(i), v.cols(k), destinations(need, me))
			} else if need[me] {
				panel[i] = g.recv(v.owner(i, k), tag(i, k), v.rows(i), v.cols(k))
			}
		}
		u.step(k, panel)
		g.endStep(step)
	}
	return g.wait(ctx)
}

// potrf factors the diagonal tile t (its lower triangle) whose first
// column is global column col0; an error naming the first column whose
// pivot is not positive otherwise.
func potrf(t blas64.General, col0 int, name string) error {
	n := t.Rows
	keep := packed(t)
	// OpenBLAS's dpotrf passes a NaN pivot on (reference LAPACK's stops):
	// a NaN on the factor's diagonal fails the tile here too.
	if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: t.Stride, Data: t.Data}); ok && !nanDiagonal(t) {
		return nil
	}
	return &NotPositiveDefiniteError{Array: name, Column: col0 + firstBadPivot(keep, n)}
}

// nanDiagonal reports whether the square tile t has a NaN on its diagonal.
func nanDiagonal(t blas64.General) bool {
	for j := range t.Rows {
		if math.IsNaN(t.Data[j*t.Stride+j]) {
			return true
		}
	}
	return false
}

// firstBadPivot returns the first column at which the unblocked Cholesky
// of the n x n row-major matrix a (lower triangle) meets a pivot that is
// not positive; its last column when there is none (the blocked one
// failed on rounding).
func firstBadPivot(a []float64, n int) int {
	for j := range n {
		d := a[j*n+j]
		for k := range j {
			d -= a[j*n+k] * a[j*n+k]
		}
		if !(d > 0) || math.IsInf(d, 0) {
			return j
		}
		d = math.Sqrt(d)
		a[j*n+j] = d
		for i := j + 1; i < n; i++ {
			s := a[i*n+j]
			for k := range j {
				s -= a[i*n+k] * a[j*n+k]
			}
			a[i*n+j] = s / d
		}
	}
	return n - 1
}

// zeroUpper sets this locality's elements above the diagonal of its
// diagonal tiles to zero.
func (v *cyclicMatrix) zeroUpper() {
	for i := range v.nbr {
		for j := range v.nbc {
			if !v.mine(i, j) || j != i {
				continue // the tiles above the diagonal were cleared by load
			}
			t := v.tile(i, j)
			for r := range t.Rows {
				c0 := 0
				if i == j {
					c0 = r + 1
				}
				for c := c0; c < t.Cols; c++ {
					t.Data[r*t.Stride+c] = 0
				}
			}
		}
	}
}
