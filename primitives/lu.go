package primitives

import (
	"context"
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// LUFactors is the result of LU: P·A = L·U.
type LUFactors struct {
	// LU holds L below the diagonal (its unit diagonal not stored) and U
	// on and above it, in a's layout.
	LU *Array
	// Pivots are LAPACK's row interchanges, global and 0-based: row i
	// was swapped with row Pivots[i], for i = 0, 1, ... in turn.
	Pivots []int
}

// LU factors a square matrix with partial pivoting, P·A = L·U, by the
// tiled right-looking algorithm as a task graph. a is laid out
// block-cyclically (BlockCyclic, square blocks) on any p x q grid.
//
// Step k: getrf(k,k) factors the panel, block column k from the diagonal
// down, on the owner of the diagonal tile: the pivot search of each of its
// columns is a reduction of that column over the panel's tiles, which on
// a grid of more than one row first travel there (each once). The
// factored panel and its pivots travel once to every other locality,
// where laswp(k,j) applies the row swaps to each block column j as a task
// (the columns left of the panel too, so that L is P·A's; rows on other
// localities of the grid column are exchanged, one message per pair),
// trsm(k,j) makes U's block row, sent once to the localities below it,
// and gemm(i,j,k) updates the trailing tiles. The panel of step k+1
// starts once its own column is updated (lookahead). On a 1 x q grid
// every block column is on one locality and swaps move nothing, and each
// locality updates its block columns right of the panel in two tasks: the
// next panel's column, then, once its own next panel is factored, all the
// others, contiguous in its local matrix, with one trsm and one gemm
// (update(k,j0:j1)).
//
// A pivot whose magnitude is at most n·ε·max|a| (or NaN) fails the result
// on every locality with a *SingularError naming its global column.
func LU(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[LUFactors] {
	const op = "LU"
	k := e.derive()
	return graphCollective(ctx, e, op, func(ctx context.Context, r, end *runtime.Reservation) (LUFactors, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return LUFactors{}, err
		}
		if err := x.pin(e, op); err != nil {
			return LUFactors{}, err
		}
		pinned := true
		defer func() {
			if pinned {
				x.unpin()
			}
		}()
		if err := e.adopt(op, x); err != nil {
			return LUFactors{}, err
		}
		if err := e.checkCyclic(op, x, true); err != nil {
			return LUFactors{}, err
		}
		norm := 0.0
		for _, v := range x.data {
			if av := math.Abs(v); av > norm || math.IsNaN(av) {
				norm = av
			}
		}
		// The largest magnitude, and -1 when every locality donated x.
		mine := 0.0
		if donatable(x) {
			mine = -1
		}
		got, err := r.AllReduce(ctx, []float64{norm, mine}, nanMax).Get(ctx)
		if err != nil {
			return LUFactors{}, e.wrap(op, err)
		}
		n := x.ann.Tiling.Shape[0]
		var data []float64
		if got[1] == -1 {
			pinned = false
			if data, err = e.inherit(ctx, op, x); err != nil {
				return LUFactors{}, err
			}
		} else {
			data = e.tileToSet(len(x.data))
			copy(data, x.data)
		}
		v := newCyclicMatrix(x.ann.Tiling, e.Locality(), data)
		lu := &luGraph{v: v, name: x.Name(), tol: float64(n) * 0x1p-52 * got[0]}
		if !(got[0] > 0) || math.IsInf(got[0], 0) {
			lu.tol = math.Inf(1) // every pivot fails: zero, NaN or Inf in a
		}
		base := fmt.Sprintf("%s/lu~%d", CommunicatorName, k)
		factor := e.lu
		if x.ann.Tiling.Cyclic.GridRows > 1 {
			factor = e.lu2d
		}
		piv, err := factor(ctx, op, base, end, lu)
		if err != nil {
			return LUFactors{}, err
		}
		out, err := e.newArray(op, derivedAnnotation(k, x), data)
		if err != nil {
			return LUFactors{}, err
		}
		return LUFactors{LU: out, Pivots: piv}, nil
	})
}

// luGraph is what the tasks of one LU share.
type luGraph struct {
	v    *cyclicMatrix
	name string
	tol  float64 // a pivot at most this large is zero
}

// column is this locality's block column j from global row r0 down: a
// view of its local matrix (all rows are local on a 1 x q grid).
func (g *luGraph) column(j, r0 int) blas64.General {
	v := g.v
	c0 := (j / v.c.GridCols) * v.c.ColBlock
	rows, cols := v.m-r0, v.cols(j)
	off := r0*v.ld + c0
	return blas64.General{Rows: rows, Cols: cols, Stride: v.ld, Data: v.data[off : off+(rows-1)*v.ld+cols]}
}

// getrf factors the panel of step k in place and returns it packed into
// out, with one more row holding its pivots (global rows).
func (g *luGraph) getrf(k int, out blas64.General) (blas64.General, error) {
	nb := g.v.c.RowBlock
	p := g.column(k, k*nb)
	ipiv := make([]int, p.Cols)
	lapack64.Getrf(p, ipiv)
	for j := range p.Cols {
		if d := p.Data[j*p.Stride+j]; !(math.Abs(d) > g.tol) {
			return blas64.General{}, &SingularError{Array: g.name, Column: k*nb + j}
		}
	}
	packInto(out.Data, p)
	for t, r := range ipiv {
		out.Data[p.Rows*p.Cols+t] = float64(k*nb + r)
	}
	return out, nil
}

// laswp applies the pivots of panel (its last row), the panel of step k,
// to the columns c (whole local columns, from global row 0).
func (g *luGraph) laswp(k int, c blas64.General, panel blas64.General) {
	nb := g.v.c.RowBlock
	piv := panel.Data[(panel.Rows-1)*panel.Stride:]
	for t := range panel.Cols {
		r, s := k*nb+t, int(piv[t])
		if r != s {
			a, b := c.Data[r*c.Stride:r*c.Stride+c.Cols], c.Data[s*c.Stride:s*c.Stride+c.Cols]
			for x := range a {
				a[x], b[x] = b[x], a[x]
			}
		}
	}
}

// span is this locality's block columns j0 (one of its own) to j1-1
// (those of them it has, contiguous in its local matrix on a 1 x q grid) from global row r0
// down.
func (g *luGraph) span(j0, j1, r0 int) blas64.General {
	v := g.v
	c0 := (j0 / v.c.GridCols) * v.c.ColBlock
	c1 := v.ld
	if j1 < v.nbc {
		c1 = (j1 / v.c.GridCols) * v.c.ColBlock
		if j1%v.c.GridCols > j0%v.c.GridCols {
			c1 += v.c.ColBlock // one more of ours in the last period before j1
		}
	}
	rows, cols := v.m-r0, c1-c0
	off := r0*v.ld + c0
	return blas64.General{Rows: rows, Cols: cols, Stride: v.ld, Data: v.data[off : off+(rows-1)*v.ld+cols]}
}

// update adds to g the task of step k that applies the panel's row swaps
// to this locality's block columns j0 to j1-1 (j0 > k, its own), solves
// U's block row in them and updates the trailing rows below it, as one
// product of the panel's L with the whole block row. It waits for after
// too, when not nil.
func (lu *luGraph) update(g *tileGraph, ver [][]tileFuture, panel, after tileFuture, k, j0, j1 int) {
	v := lu.v
	nb, nt := v.c.RowBlock, v.nbr
	var cols []int
	for j := j0; j < j1; j++ {
		if v.mine(k, j) {
			cols = append(cols, j)
		}
	}
	if len(cols) == 0 {
		return
	}
	in := []tileFuture{panel}
	for _, j := range cols {
		for i := k; i < nt; i++ {
			in = append(in, ver[i][j])
		}
	}
	if after != nil {
		in = append(in, after)
	}
	f := g.task(fmt.Sprintf("update(%d,%d:%d)", k, cols[0], cols[len(cols)-1]), func(vs []blas64.General) (blas64.General, error) {
		p := vs[0]
		lu.laswp(k, lu.span(cols[0], j1, 0), p)
		c := lu.span(cols[0], j1, k*nb)
		u := blas64.General{Rows: p.Cols, Cols: c.Cols, Stride: c.Stride, Data: c.Data}
		blas64.Trsm(blas.Left, blas.NoTrans, 1, blas64.Triangular{Uplo: blas.Lower, Diag: blas.Unit, N: p.Cols, Stride: p.Stride, Data: p.Data}, u)
		if c.Rows > p.Cols {
			l := blas64.General{Rows: c.Rows - p.Cols, Cols: p.Cols, Stride: p.Stride, Data: p.Data[p.Cols*p.Stride:]}
			below := blas64.General{Rows: c.Rows - p.Cols, Cols: c.Cols, Stride: c.Stride, Data: c.Data[p.Cols*c.Stride:]}
			blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, l, u, 1, below)
		}
		return u, nil
	}, in...)
	for _, j := range cols {
		for i := k; i < nt; i++ {
			ver[i][j] = f
		}
	}
}

// lu factors g.v in place and returns the pivots.
func (e *Env) lu(ctx context.Context, op, base string, end *runtime.Reservation, lu *luGraph) ([]int, error) {
	g, err := newTileGraph(ctx, e, op, base, end, func(col int) error { return &SingularError{Array: lu.name, Column: col} })
	if err != nil {
		return nil, err
	}
	v := lu.v
	nt, me, nb := v.nbc, v.me, v.c.RowBlock
	// ver[j]: the latest version of this locality's block column j (its
	// tasks touch it from the diagonal down; one future per column
	// orders them); tile (i, j) is also tracked for the updates.
	ver := make([][]tileFuture, nt)
	for i := range ver {
		ver[i] = make([]tileFuture, nt)
		for j := range nt {
			if v.mine(i, j) {
				ver[i][j] = runtime.MakeReady(v.tile(i, j))
			}
		}
	}
	panels := make([]tileFuture, nt)
	all := make([]bool, e.Size())
	for l := range all {
		all[l] = true
	}
	// rest: the update of the previous step's columns after the
	// lookahead one, made once this step's panel task is, so that it
	// waits for that panel here (the critical path goes first).
	var rest func(after tileFuture)
	// Each step's panel is scratch memory of its step (graphStep), which
	// ends once the next step has added the rest of its update; the
	// pivots are copied out before.
	var prev *graphStep
	pivots := make([][]int, nt)
	for k := range nt {
		prow := v.m - k*nb + 1
		step := g.beginStep()
		if v.mine(k, k) {
			var in []tileFuture
			for i := k; i < nt; i++ {
				in = append(in, ver[i][k])
			}
			f := g.task(fmt.Sprintf("getrf(%d,%d)", k, k), func([]blas64.General) (blas64.General, error) {
				return lu.getrf(k, g.scratch(step, prow, v.cols(k)))
			}, in...)
			for i := k; i < nt; i++ {
				ver[i][k] = f
			}
			panels[k] = f
			g.send(f, uint64(k), prow, v.cols(k), destinations(all, me))
		} else {
			panels[k] = g.recv(v.owner(k, k), uint64(k), prow, v.cols(k))
		}
		g.task(fmt.Sprintf("pivots(%d)", k), func(vs []blas64.General) (blas64.General, error) {
			p := vs[0]
			for _, r := range p.Data[(p.Rows-1)*p.Stride : (p.Rows-1)*p.Stride+p.Cols] {
				pivots[k] = append(pivots[k], int(r))
			}
			return blas64.General{}, nil
		}, panels[k])
		if rest != nil {
			var after tileFuture
			if v.mine(k, k) {
				after = panels[k]
			}
			g.cur = prev
			rest(after)
			g.cur = step
			rest = nil
		}
		if prev != nil {
			g.endStep(prev)
		}
		prev = step
		// Columns left of the panel: the row swaps only.
		for j := range k {
			if !v.mine(k, j) {
				continue
			}
			in := []tileFuture{panels[k]}
			for i := k; i < nt; i++ {
				in = append(in, ver[i][j])
			}
			sw := g.task(fmt.Sprintf("laswp(%d,%d)", k, j), func(vs []blas64.General) (blas64.General, error) {
				lu.laswp(k, lu.column(j, 0), vs[0])
				return v.tile(k, j), nil
			}, in...)
			for i := k; i < nt; i++ {
				ver[i][j] = sw
			}
		}
		// Columns right of it: this locality's next one (k+1's panel,
		// lookahead) on its own, then the others, contiguous in the local
		// matrix, in one task: swaps, U's block row and the trailing
		// update as one product each.
		first := k + 1
		if first < nt && v.mine(k, first) {
			lu.update(g, ver, panels[k], nil, k, first, first+1)
			first += v.c.GridCols
		}
		if first < nt {
			k, first, panel := k, first, panels[k]
			rest = func(after tileFuture) { lu.update(g, ver, panel, after, k, first, nt) }
		}
	}
	g.cur = prev
	if rest != nil {
		rest(nil)
	}
	if prev != nil {
		g.endStep(prev)
	}
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	var piv []int
	for _, p := range pivots {
		piv = append(piv, p...)
	}
	return piv, nil
}

// SolveLU returns X with A·X = B for a square a, through LU: P·A = L·U,
// then L·Y = P·B and U·X = Y (SolveTriangular). a and b are laid out
// block-cyclically with the same square blocks on one grid; P·B's rows
// that another locality holds are fetched from it (fetch_block). A
// singular a fails the result with LU's *SingularError.
func SolveLU(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	const op = "SolveLU"
	f := LU(ctx, e, a)
	lu := runtime.Then(ctx, f, func(_ context.Context, v LUFactors) (*Array, error) { return v.LU, nil })
	k := e.derive()
	pb := runtime.Dataflow2(ctx, func(ctx context.Context, v LUFactors, y *Array) (*Array, error) {
		if err := y.pin(e, op); err != nil {
			return nil, err
		}
		defer y.unpin()
		if err := e.checkSolve(op, v.LU, y); err != nil {
			return nil, err
		}
		if err := e.adopt(op, y); err != nil {
			return nil, err
		}
		data := e.tileToSet(len(y.data))
		copy(data, y.data)
		if err := e.permuteRows(ctx, y, v.Pivots, data); err != nil {
			return nil, e.wrap(op, err)
		}
		return e.newArray(op, derivedAnnotation(k, y), data)
	}, f, b)
	y := SolveTriangular(ctx, e, lu, pb, Triangular{Unit: true})
	return SolveTriangular(ctx, e, lu, y, Triangular{Upper: true})
}

// permuteRows sets data, this locality's tile of a copy of the
// block-cyclic y, to its tile of P·y for the row interchanges piv: each
// row that changes is copied from y's tile here or fetched from the
// locality holding it, one block row segment per fetch.
func (e *Env) permuteRows(ctx context.Context, y *Array, piv []int, data []float64) error {
	content := make([]int, len(piv))
	for r := range content {
		content[r] = r
	}
	for r, s := range piv {
		content[r], content[s] = content[s], content[r]
	}
	t := y.ann.Tiling
	c := *t.Cyclic
	h := t.Tiles[e.Locality()].Halo
	type pending struct {
		f        *runtime.Future[[]float64]
		buf      *runtime.Tile
		src, dst annotate.Block
	}
	var fs []pending
	defer func() {
		for _, p := range fs {
			p.buf.Release()
		}
	}()
	for _, reg := range t.Regions(e.Locality()) {
		for r := reg[0].Start; r < reg[0].Stop; r++ {
			s := content[r]
			if s == r {
				continue
			}
			from := annotate.Block{{Start: s, Stop: s + 1}, reg[1]}
			src, ok1 := t.Storage(from)
			dst, ok2 := t.Storage(annotate.Block{{Start: r, Stop: r + 1}, reg[1]})
			if !ok1 || !ok2 {
				return fmt.Errorf("array %s: rows %d and %d of columns %v cross a block", y.Name(), r, s, reg[1])
			}
			owner := c.Owner(s/c.RowBlock, reg[1].Start/c.ColBlock)
			if owner == e.Locality() {
				copyMoved(data, h, dst, y.data, h, src)
				continue
			}
			buf := runtime.NewTile(e.rt, src.Size(), runtime.TileOptions{Uncleared: true})
			fs = append(fs, pending{f: e.fetchTile(ctx, y, owner, src, buf), buf: buf, src: src, dst: dst})
		}
	}
	for _, p := range fs {
		if _, err := p.f.Get(ctx); err != nil {
			return fmt.Errorf("array %s: %w", y.Name(), err)
		}
		copyMoved(data, h, p.dst, p.buf.Float64s(), p.src, p.src)
	}
	return nil
}
