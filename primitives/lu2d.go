package primitives

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// LU on a p x q grid with p > 1: the rows of a block column are spread
// over the p localities of its grid column, so step k gathers the panel on
// the owner of the diagonal tile (the pivot search of each column a
// reduction over the panel's tiles, which getrf does there), sends the
// factored panel and its pivots to every locality (the owners of the
// panel's tiles store their part of L), and applies the row swaps to every
// other block column as tasks that exchange the swapped rows between the
// localities of its grid column, one message per pair and step.

// row returns this locality's row g of block column j (global indices),
// which it must hold.
func (g *luGraph) row(grow, j int) []float64 {
	v := g.v
	nb := v.c.RowBlock
	lr := (grow/nb/v.c.GridRows)*nb + grow%nb
	c0 := (j / v.c.GridCols) * v.c.ColBlock
	return v.data[lr*v.ld+c0 : lr*v.ld+c0+v.cols(j)]
}

// rowOwner is the locality holding row grow of block column j.
func (g *luGraph) rowOwner(grow, j int) int {
	return g.v.owner(grow/g.v.c.RowBlock, j)
}

// swapped returns, for the pivots of step k (global rows), the rows the
// swaps change and the original row each ends up with: the net effect of
// applying them in turn.
func swapped(k, nb int, piv []float64) (rows []int, from map[int]int) {
	at := map[int]int{} // row -> original row now there
	get := func(r int) int {
		if o, ok := at[r]; ok {
			return o
		}
		return r
	}
	for t, p := range piv {
		r, s := k*nb+t, int(p)
		if r != s {
			at[r], at[s] = get(s), get(r)
		}
	}
	from = map[int]int{}
	for r, o := range at {
		if r != o {
			from[r] = o
			rows = append(rows, r)
		}
	}
	slices.Sort(rows)
	return rows, from
}

// pivotsOf is the pivot row of a panel message.
func pivotsOf(p blas64.General) []float64 { return p.Data[(p.Rows-1)*p.Stride:] }

// lu2d factors g.v in place on a p x q grid and returns the pivots.
func (e *Env) lu2d(ctx context.Context, op, base string, end *runtime.Reservation, lu *luGraph) ([]int, error) {
	g, err := newTileGraph(ctx, e, op, base, end, func(col int) error { return &SingularError{Array: lu.name, Column: col} })
	if err != nil {
		return nil, err
	}
	v := lu.v
	nt, me, nb := v.nbc, v.me, v.c.RowBlock
	_, mycol := v.c.Position(me)
	span := uint64(nt*nt + nt)
	tagUp := func(k, i int) uint64 { return uint64(k*nt + i) }
	tagPanel := func(k int) uint64 { return span + uint64(k) }
	tagSwap := func(k, j int) uint64 { return 2*span + uint64(k*nt+j) }
	tagU := func(k, j int) uint64 { return 3*span + uint64(k*nt+j) }
	ver := make([][]tileFuture, nt)
	for i := range ver {
		ver[i] = make([]tileFuture, nt)
		for j := range nt {
			if v.mine(i, j) {
				ver[i][j] = runtime.MakeReady(v.tile(i, j))
			}
		}
	}
	all := make([]bool, e.Size())
	for l := range all {
		all[l] = true
	}
	panels := make([]tileFuture, nt)
	for k := range nt {
		K := v.owner(k, k)
		prow := v.m - k*nb
		// The panel's tiles go to K, which factors them.
		var parts []tileFuture
		for i := k; i < nt; i++ {
			switch {
			case v.mine(i, k) && me != K:
				g.send(ver[i][k], tagUp(k, i), v.rows(i), v.cols(k), []int{K})
			case me == K && v.mine(i, k):
				parts = append(parts, ver[i][k])
			case me == K:
				parts = append(parts, g.recv(v.owner(i, k), tagUp(k, i), v.rows(i), v.cols(k)))
			}
		}
		if me == K {
			f := g.task(fmt.Sprintf("getrf(%d,%d)", k, k), func(vs []blas64.General) (blas64.General, error) {
				c := v.cols(k)
				pan := blas64.General{Rows: prow, Cols: c, Stride: c, Data: make([]float64, 0, (prow+1)*c)}
				for _, t := range vs {
					pan.Data = append(pan.Data, packed(t)...)
				}
				ipiv := make([]int, c)
				lapack64.Getrf(pan, ipiv)
				for t := range c {
					if d := pan.Data[t*c+t]; !(d > lu.tol || -d > lu.tol) {
						return blas64.General{}, &SingularError{Array: lu.name, Column: k*nb + t}
					}
				}
				for _, r := range ipiv {
					pan.Data = append(pan.Data, float64(k*nb+r))
				}
				pan.Rows++
				lu.store(k, pan)
				return pan, nil
			}, parts...)
			panels[k] = f
			for i := k; i < nt; i++ {
				if v.mine(i, k) {
					ver[i][k] = f
				}
			}
			g.send(f, tagPanel(k), prow+1, v.cols(k), destinations(all, me))
		} else {
			panels[k] = g.recv(K, tagPanel(k), prow+1, v.cols(k))
			var in []tileFuture
			for i := k; i < nt; i++ {
				if v.mine(i, k) {
					in = append(in, ver[i][k])
				}
			}
			if len(in) > 0 {
				st := g.task(fmt.Sprintf("store(%d)", k), func(vs []blas64.General) (blas64.General, error) {
					lu.store(k, vs[0])
					return vs[0], nil
				}, append([]tileFuture{panels[k]}, in...)...)
				for i := k; i < nt; i++ {
					if v.mine(i, k) {
						ver[i][k] = st
					}
				}
			}
		}
		for j := range nt {
			if j == k || j%v.c.GridCols != mycol {
				continue
			}
			e.lu2dColumn(g, lu, k, j, ver, panels[k], tagSwap(k, j), tagU(k, j))
		}
	}
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	var piv []int
	for k := range nt {
		pn, err := panels[k].Get(ctx)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		for _, r := range pivotsOf(pn) {
			piv = append(piv, int(r))
		}
	}
	return piv, nil
}

// store writes this locality's tiles of the factored panel of step k.
func (g *luGraph) store(k int, pan blas64.General) {
	v := g.v
	for i := k; i < v.nbr; i++ {
		if !v.mine(i, k) {
			continue
		}
		t := v.tile(i, k)
		off := (i - k) * v.c.RowBlock
		for r := range t.Rows {
			copy(t.Data[r*t.Stride:r*t.Stride+t.Cols], pan.Data[(off+r)*pan.Stride:(off+r)*pan.Stride+t.Cols])
		}
	}
}

// lu2dColumn adds the tasks of step k on this locality's tiles of block
// column j != k: the row swaps (laswp), and for j > k U's tile (trsm) and
// the trailing updates (gemm).
func (e *Env) lu2dColumn(g *tileGraph, lu *luGraph, k, j int, ver [][]tileFuture, panel tileFuture, swapTag, uTag uint64) {
	v := lu.v
	nt, me, nb := v.nbc, v.me, v.c.RowBlock
	_, col := v.c.Position(me)
	var peers []int // the other localities of the grid column
	for r := range v.c.GridRows {
		if l := v.c.Locality(r, col); l != me {
			peers = append(peers, l)
		}
	}
	var mineTiles []tileFuture
	for i := k; i < nt; i++ {
		if v.mine(i, j) {
			mineTiles = append(mineTiles, ver[i][j])
		}
	}
	// Old rows this locality keeps for itself, set by the pack task
	// before its future is ready.
	var own map[int][]float64
	pack := runtime.SpawnNamed(g.ctx, e.rt, fmt.Sprintf("laswp.send(%d,%d)", k, j), func(ctx context.Context) (struct{}, error) {
		pn, err := panel.Get(ctx)
		if err == nil {
			err = runtime.WhenAll(mineTiles...).Err(ctx)
		}
		var rows []int
		var from map[int]int
		if err == nil {
			rows, from = swapped(k, nb, pivotsOf(pn))
			own = map[int][]float64{}
		}
		var sent []*runtime.Future[struct{}]
		for _, y := range peers {
			msg := []float64{0}
			if err != nil {
				msg[0] = -1
				var ce columnError
				if errors.As(err, &ce) {
					msg[0] = float64(-2 - ce.column())
				}
			} else {
				for _, r := range rows {
					if lu.rowOwner(r, j) == y && lu.rowOwner(from[r], j) == me {
						msg = append(msg, lu.row(from[r], j)...)
					}
				}
			}
			sent = append(sent, g.ch.Set(ctx, y, swapTag, msg))
		}
		if err == nil {
			for _, r := range rows {
				if lu.rowOwner(r, j) == me && lu.rowOwner(from[r], j) == me {
					own[from[r]] = append([]float64(nil), lu.row(from[r], j)...)
				}
			}
		}
		for _, s := range sent {
			if serr := s.Err(ctx); serr != nil && err == nil {
				err = serr
			}
		}
		return struct{}{}, err
	})
	g.waits = append(g.waits, pack.Err)
	got := make([]*runtime.Future[[]float64], len(peers))
	for x, y := range peers {
		got[x] = g.ch.Get(g.ctx, y, swapTag)
		g.waits = append(g.waits, got[x].Err)
	}
	sw := runtime.ThenNamed(g.ctx, fmt.Sprintf("laswp(%d,%d)", k, j), runtime.WhenAll(mineTiles...), func(ctx context.Context, _ []blas64.General) (blas64.General, error) {
		pn, err := panel.Get(ctx)
		if err != nil {
			return blas64.General{}, err
		}
		if err := pack.Err(ctx); err != nil {
			return blas64.General{}, err
		}
		rows, from := swapped(k, nb, pivotsOf(pn))
		c := v.cols(j)
		for x, y := range peers {
			msg, err := got[x].Get(ctx)
			if err != nil {
				return blas64.General{}, err
			}
			if len(msg) == 0 || msg[0] < 0 {
				if len(msg) > 0 && msg[0] <= -2 {
					return blas64.General{}, g.failed(int(-msg[0] - 2))
				}
				return blas64.General{}, fmt.Errorf("the swapped rows of step %d from locality %d failed there", k, y)
			}
			msg = msg[1:]
			for _, r := range rows {
				if lu.rowOwner(r, j) == me && lu.rowOwner(from[r], j) == y {
					if len(msg) < c {
						return blas64.General{}, fmt.Errorf("the swapped rows of step %d from locality %d are short", k, y)
					}
					copy(lu.row(r, j), msg[:c])
					msg = msg[c:]
				}
			}
		}
		for _, r := range rows {
			if o, ok := own[from[r]]; ok && lu.rowOwner(r, j) == me {
				copy(lu.row(r, j), o)
			}
		}
		return blas64.General{}, nil
	})
	g.waits = append(g.waits, sw.Err)
	for i := k; i < nt; i++ {
		if v.mine(i, j) {
			ver[i][j] = sw
		}
	}
	if j < k {
		return
	}
	// U(k, j) goes to the owners of block column j below it.
	need := make([]bool, e.Size())
	for i := k + 1; i < nt; i++ {
		need[v.owner(i, j)] = true
	}
	var u tileFuture
	if v.mine(k, j) {
		u = g.task(fmt.Sprintf("trsm(%d,%d)", k, j), func(vs []blas64.General) (blas64.General, error) {
			pn, t := vs[0], v.tile(k, j)
			blas64.Trsm(blas.Left, blas.NoTrans, 1, blas64.Triangular{Uplo: blas.Lower, Diag: blas.Unit, N: pn.Cols, Stride: pn.Stride, Data: pn.Data}, t)
			return t, nil
		}, panel, sw)
		ver[k][j] = u
		g.send(u, uTag, v.rows(k), v.cols(j), destinations(need, me))
	} else if need[me] {
		u = g.recv(v.owner(k, j), uTag, v.rows(k), v.cols(j))
	}
	for i := k + 1; i < nt; i++ {
		if !v.mine(i, j) {
			continue
		}
		ver[i][j] = g.task(fmt.Sprintf("gemm(%d,%d,%d)", i, j, k), func(vs []blas64.General) (blas64.General, error) {
			pn, t := vs[0], v.tile(i, j)
			l := blas64.General{Rows: v.rows(i), Cols: pn.Cols, Stride: pn.Stride, Data: pn.Data[(i-k)*nb*pn.Stride:]}
			blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, l, vs[1], 1, t)
			return t, nil
		}, panel, u, ver[i][j])
	}
}
