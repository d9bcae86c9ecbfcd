package primitives

import (
	"context"
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Triangular says which triangle of a matrix SolveTriangular reads and how
// it applies it.
type Triangular struct {
	Upper bool // the upper triangle (else the lower)
	Trans bool // solve with the transpose
	Unit  bool // the diagonal is ones, not read
}

func (t Triangular) String() string {
	s := "lower"
	if t.Upper {
		s = "upper"
	}
	if t.Unit {
		s = "unit " + s
	}
	if t.Trans {
		s += ", transposed"
	}
	return s
}

// SingularError is the error of a solve or factorisation whose matrix is
// singular: the pivot of global column Column is zero (or not a number).
type SingularError struct {
	Array  string // the matrix, "name/generation"
	Column int
}

func (e *SingularError) Error() string {
	return fmt.Sprintf("matrix %s is singular: the pivot of column %d is zero", e.Array, e.Column)
}

func (e *SingularError) column() int { return e.Column }

// SolveTriangular returns X with op(T)·X = B for the triangle of t that
// kind names (op(T) = T, or Tᵀ when kind.Trans): many right-hand sides at
// once. t (n x n) and b (n x r) are block-cyclic (BlockCyclic) with the
// same square blocks on the same grid; X has b's layout and is a result
// derived from b.
//
// The solve is a task graph on the tiles of B: step k solves the tiles of
// block row k with the diagonal tile of T (trsm(k,c), on their owners) and
// updates the block rows still to solve with them (gemm(i,c,k)); a tile of
// T travels once to each locality whose tiles of B need it, a solved tile
// of X once to each locality of its block column that updates with it.
//
// A zero (or NaN) on the diagonal of a non-unit T fails the result on every
// locality with a *SingularError naming the global column; layouts that
// do not conform fail it with an error naming both arrays, and NaN or Inf
// in either with an error naming them (T's triangle or not: the check
// reads the whole tiles).
func SolveTriangular(ctx context.Context, e *Env, t, b *runtime.Future[*Array], kind Triangular) *runtime.Future[*Array] {
	const op = "SolveTriangular"
	k := e.derive()
	return graphCollective(ctx, e, op, func(ctx context.Context, r, end *runtime.Reservation) (*Array, error) {
		tx, err := t.Get(ctx)
		if err != nil {
			return nil, err
		}
		bx, err := b.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := pinBoth(e, op, tx, bx); err != nil {
			return nil, err
		}
		defer tx.unpin()
		defer bx.unpin()
		if err := e.checkSolve(op, tx, bx); err != nil {
			return nil, err
		}
		if err := e.checkFinite(ctx, op, r, tx, bx); err != nil {
			return nil, err
		}
		data := e.tileToSet(len(bx.data))
		copy(data, bx.data)
		tm := newCyclicMatrix(tx.ann.Tiling, e.Locality(), tx.data)
		bm := newCyclicMatrix(bx.ann.Tiling, e.Locality(), data)
		base := fmt.Sprintf("%s/solvetriangular~%d", CommunicatorName, k)
		if err := e.solveTriangular(ctx, op, base, end, tx.Name(), tm, bm, kind); err != nil {
			return nil, err
		}
		return e.newArray(op, derivedAnnotation(k, bx), data)
	})
}

// SolveSPD returns X with A·X = B for a symmetric positive definite a,
// through its Cholesky factor: L·Lᵀ = A, then L·Y = B and Lᵀ·X = Y
// (SolveTriangular). a and b are laid out as SolveTriangular wants; a that
// is not positive definite fails the result with the
// *NotPositiveDefiniteError of Cholesky.
func SolveSPD(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	l := Cholesky(ctx, e, a)
	y := SolveTriangular(ctx, e, l, b, Triangular{})
	return SolveTriangular(ctx, e, l, y, Triangular{Trans: true})
}

// checkSolve checks that t is square and b conforms to it, both
// block-cyclic on one grid with the same square blocks.
func (e *Env) checkSolve(op string, t, b *Array) error {
	if err := e.checkCyclic(op, t, true); err != nil {
		return err
	}
	if err := e.checkCyclic(op, b, false); err != nil {
		return err
	}
	ts, bs := t.ann.Tiling.Shape, b.ann.Tiling.Shape
	if bs[0] != ts[0] {
		return e.errorf(op, "array %s of shape %v does not conform to the %dx%d matrix %s: want %d rows", b.Name(), bs, ts[0], ts[1], t.Name(), ts[0])
	}
	if ct, cb := *t.ann.Tiling.Cyclic, *b.ann.Tiling.Cyclic; ct != cb {
		return e.errorf(op, "array %s is laid out as %v, matrix %s as %v: want the same blocks on the same grid", b.Name(), cb, t.Name(), ct)
	}
	return nil
}

// solveTriangular overwrites bm with the solution (see SolveTriangular).
func (e *Env) solveTriangular(ctx context.Context, op, base string, end *runtime.Reservation, name string, tm, bm *cyclicMatrix, kind Triangular) error {
	g, err := newTileGraph(ctx, e, op, base, end, func(col int) error { return &SingularError{Array: name, Column: col} })
	if err != nil {
		return err
	}
	nt, nc, me, nb := tm.nbr, bm.nbc, e.Locality(), tm.c.RowBlock
	forward := kind.Upper == kind.Trans // op(T) is lower triangular
	uplo, tA := blas.Lower, blas.NoTrans
	if kind.Upper {
		uplo = blas.Upper
	}
	if kind.Trans {
		tA = blas.Trans
	}
	diag := blas.NonUnit
	if kind.Unit {
		diag = blas.Unit
	}
	// rest is the block rows still to solve after step k.
	rest := func(k int) (from, to int) {
		if forward {
			return k + 1, nt
		}
		return 0, k
	}
	ver := make([][]tileFuture, nt)
	for i := range ver {
		ver[i] = make([]tileFuture, nc)
		for c := range nc {
			if bm.mine(i, c) {
				ver[i][c] = runtime.MakeReady(bm.tile(i, c))
			}
		}
	}
	xTag := func(k, c int) uint64 { return uint64(nt*nt + k*nc + c) }
	for s := range nt {
		k := s
		if !forward {
			k = nt - 1 - s
		}
		lo, hi := rest(k)
		// T(k, k) goes to the owners of block row k of B.
		need := make([]bool, e.Size())
		for c := range nc {
			need[bm.owner(k, c)] = true
		}
		tkk := e.sendOrRecv(g, tm, k, k, need)
		x := make([]tileFuture, nc)
		for c := range nc {
			// X(k, c) goes to the owners of block column c still to solve.
			need := make([]bool, e.Size())
			for i := lo; i < hi; i++ {
				need[bm.owner(i, c)] = true
			}
			if !bm.mine(k, c) {
				if need[me] {
					x[c] = g.recv(bm.owner(k, c), xTag(k, c), bm.rows(k), bm.cols(c))
				}
				continue
			}
			f := g.task(fmt.Sprintf("trsm(%d,%d)", k, c), func(vs []blas64.General) (blas64.General, error) {
				d := vs[1]
				if !kind.Unit {
					for j := range d.Rows {
						if v := d.Data[j*d.Stride+j]; v == 0 || math.IsNaN(v) {
							return blas64.General{}, &SingularError{Array: name, Column: k*nb + j}
						}
					}
				}
				blas64.Trsm(blas.Left, tA, 1, blas64.Triangular{Uplo: uplo, Diag: diag, N: d.Rows, Stride: d.Stride, Data: d.Data}, vs[0])
				return vs[0], nil
			}, ver[k][c], tkk)
			ver[k][c], x[c] = f, f
			g.send(f, xTag(k, c), bm.rows(k), bm.cols(c), destinations(need, me))
		}
		for i := lo; i < hi; i++ {
			// op(T)(i, k) is stored as T(i, k), or T(k, i) transposed.
			si, sj := i, k
			if kind.Trans {
				si, sj = k, i
			}
			need := make([]bool, e.Size())
			for c := range nc {
				need[bm.owner(i, c)] = true
			}
			tik := e.sendOrRecv(g, tm, si, sj, need)
			for c := range nc {
				if !bm.mine(i, c) {
					continue
				}
				ver[i][c] = g.task(fmt.Sprintf("gemm(%d,%d,%d)", i, c, k), func(vs []blas64.General) (blas64.General, error) {
					blas64.Gemm(tA, blas.NoTrans, -1, vs[1], vs[2], 1, vs[0])
					return vs[0], nil
				}, ver[i][c], tik, x[c])
			}
		}
	}
	return g.wait(ctx)
}

// sendOrRecv makes tile (i, j) of the input matrix m available where need
// says: its owner sends it to the others that need it and has it at once;
// a locality that needs it receives it; nil elsewhere. Its tag is its
// index among m's tiles.
func (e *Env) sendOrRecv(g *tileGraph, m *cyclicMatrix, i, j int, need []bool) tileFuture {
	tag := uint64(i*m.nbc + j)
	if m.mine(i, j) {
		f := runtime.MakeReady(m.tile(i, j))
		g.send(f, tag, m.rows(i), m.cols(j), destinations(need, m.me))
		return f
	}
	if need[m.me] {
		return g.recv(m.owner(i, j), tag, m.rows(i), m.cols(j))
	}
	return nil
}
