package primitives

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	gonumlapack "gonum.org/v1/gonum/lapack/gonum"
)

// QR on a p x q grid with p > 1: the panel's tiles travel to the owner of
// the diagonal tile, which factors them (geqrf) and forms the block
// reflector's triangular factor T (H = I − V·T·Vᵀ); the panel (R, V, tau
// and T) travels once to every locality, whose tiles of it store their
// part. The block reflector is applied to a block column whose rows are
// spread over its grid column as a reduction: each locality computes
// W = Σ V_iᵀ·C_ij over its tiles, the owner of the column's diagonal
// row sums them and sends back Tᵀ·W (T·W to form Q), and each locality
// updates its tiles, C_ij −= V_i·(Tᵀ·W).

// qrPanel is the panel message of step k: prow rows of the factored
// panel, one of tau, c of T.
type qrPanel struct{ g blas64.General }

func (p qrPanel) cols() int { return p.g.Cols }

// v returns the rows of V for tile rows [r0, r0+rows) of the panel, with
// the unit diagonal and zeros above it made explicit in the top tile.
func (p qrPanel) v(r0, rows int) blas64.General {
	c := p.cols()
	out := blas64.General{Rows: rows, Cols: c, Stride: c, Data: append([]float64(nil), p.g.Data[r0*c:(r0+rows)*c]...)}
	for r := range rows {
		for t := range c {
			switch g := r0 + r; {
			case g == t:
				out.Data[r*c+t] = 1
			case g < t:
				out.Data[r*c+t] = 0
			}
		}
	}
	return out
}

// t is the triangular factor, c x c.
func (p qrPanel) t(prow int) blas64.General {
	c := p.cols()
	return blas64.General{Rows: c, Cols: c, Stride: c, Data: p.g.Data[(prow+1)*c : (prow+1+c)*c]}
}

// qr2d factors v in place on a p x q grid and, when qv is not nil, forms
// Q in it; it returns tau.
func (e *Env) qr2d(ctx context.Context, op, base string, end *runtime.Reservation, name string, v, qv *cyclicMatrix) ([]float64, error) {
	g, err := newTileGraph(ctx, e, op, base, end, func(col int) error { return fmt.Errorf("matrix %s: column %d failed", name, col) })
	if err != nil {
		return nil, err
	}
	lu := &luGraph{v: v}
	nt, me, nb := v.nbc, v.me, v.c.RowBlock
	_, mycol := v.c.Position(me)
	span := uint64(v.nbr*nt + nt)
	ver := versions(v)
	all := make([]bool, e.Size())
	for l := range all {
		all[l] = true
	}
	panels := make([]tileFuture, nt)
	for k := range nt {
		K := v.owner(k, k)
		prow, c := v.m-k*nb, v.cols(k)
		var parts []tileFuture
		for i := k; i < v.nbr; i++ {
			switch {
			case v.mine(i, k) && me != K:
				g.send(ver[i][k], uint64(k*v.nbr+i), v.rows(i), c, []int{K})
			case me == K && v.mine(i, k):
				parts = append(parts, ver[i][k])
			case me == K:
				parts = append(parts, g.recv(v.owner(i, k), uint64(k*v.nbr+i), v.rows(i), c))
			}
		}
		if me == K {
			f := g.task(fmt.Sprintf("geqrf(%d,%d)", k, k), func(vs []blas64.General) (blas64.General, error) {
				pan := blas64.General{Rows: prow, Cols: c, Stride: c, Data: make([]float64, 0, (prow+1+c)*c)}
				for _, t := range vs {
					pan.Data = append(pan.Data, packed(t)...)
				}
				tau := geqrf(pan)
				vfull := qrPanel{pan}.v(0, prow)
				tm := make([]float64, c*c)
				gonumlapack.Implementation{}.Dlarft(lapack.Forward, lapack.ColumnWise, prow, c, vfull.Data, c, tau, tm, c)
				pan.Data = append(append(pan.Data, tau...), tm...)
				pan.Rows = prow + 1 + c
				lu.store(k, pan)
				return pan, nil
			}, parts...)
			panels[k] = f
			for i := k; i < v.nbr; i++ {
				if v.mine(i, k) {
					ver[i][k] = f
				}
			}
			g.send(f, span+uint64(k), prow+1+c, c, destinations(all, me))
		} else {
			panels[k] = g.recv(K, span+uint64(k), prow+1+c, c)
			var in []tileFuture
			for i := k; i < v.nbr; i++ {
				if v.mine(i, k) {
					in = append(in, ver[i][k])
				}
			}
			if len(in) > 0 {
				st := g.task(fmt.Sprintf("store(%d)", k), func(vs []blas64.General) (blas64.General, error) {
					lu.store(k, vs[0])
					return vs[0], nil
				}, append([]tileFuture{panels[k]}, in...)...)
				for i := k; i < v.nbr; i++ {
					if v.mine(i, k) {
						ver[i][k] = st
					}
				}
			}
		}
		for j := k + 1; j < nt; j++ {
			if j%v.c.GridCols == mycol {
				e.larfb(g, v, ver, k, j, panels[k], true, 2*span)
			}
		}
	}
	if qv != nil {
		qver := versions(qv)
		for j := range nt {
			if qv.mine(j, j) {
				t := qv.tile(j, j)
				for d := range min(t.Rows, t.Cols) {
					t.Data[d*t.Stride+d] = 1
				}
			}
		}
		for k := nt - 1; k >= 0; k-- {
			for j := k; j < nt; j++ {
				if j%v.c.GridCols == mycol {
					e.larfb(g, qv, qver, k, j, panels[k], false, 4*span)
				}
			}
		}
	}
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	var tau []float64
	for k := range nt {
		p, err := panels[k].Get(ctx)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		prow := v.m - k*nb
		tau = append(tau, p.Data[prow*p.Stride:prow*p.Stride+p.Cols]...)
	}
	return tau, nil
}

// versions are the first versions of this locality's tiles of v.
func versions(v *cyclicMatrix) [][]tileFuture {
	ver := make([][]tileFuture, v.nbr)
	for i := range ver {
		ver[i] = make([]tileFuture, v.nbc)
		for j := range v.nbc {
			if v.mine(i, j) {
				ver[i][j] = runtime.MakeReady(v.tile(i, j))
			}
		}
	}
	return ver
}

// larfb applies the block reflector of panel k (Hᵀ when trans, else H) to
// block column j of m from row k·nb down, as a reduction over the grid
// column (see above); tags from base.
func (e *Env) larfb(g *tileGraph, m *cyclicMatrix, ver [][]tileFuture, k, j int, panel tileFuture, trans bool, base uint64) {
	me, nb, nbr := m.me, m.c.RowBlock, m.nbr
	tagW := base + uint64(k*m.nbc+j)
	tagY := base + uint64(nbr*m.nbc+m.nbc) + uint64(k*m.nbc+j)
	root := m.owner(k, j)
	var mine []int
	part := make([]bool, e.Size())
	for i := k; i < nbr; i++ {
		part[m.owner(i, j)] = true
		if m.mine(i, j) {
			mine = append(mine, i)
		}
	}
	if len(mine) == 0 {
		return
	}
	cols := m.cols(j)
	in := []tileFuture{panel}
	for _, i := range mine {
		in = append(in, ver[i][j])
	}
	w := g.task(fmt.Sprintf("larfb.w(%d,%d)", k, j), func(vs []blas64.General) (blas64.General, error) {
		p := qrPanel{vs[0]}
		pc := p.cols()
		out := blas64.General{Rows: pc, Cols: cols, Stride: cols, Data: make([]float64, pc*cols)}
		for _, i := range mine {
			blas64.Gemm(blas.Trans, blas.NoTrans, 1, p.v((i-k)*nb, m.rows(i)), m.tile(i, j), 1, out)
		}
		return out, nil
	}, in...)
	pc := min(nb, m.n-k*nb)
	var y tileFuture
	if me == root {
		parts := []tileFuture{panel, w}
		for l, ok := range part {
			if ok && l != me {
				parts = append(parts, g.recv(l, tagW, pc, cols))
			}
		}
		y = g.task(fmt.Sprintf("larft(%d,%d)", k, j), func(vs []blas64.General) (blas64.General, error) {
			p := qrPanel{vs[0]}
			sum := blas64.General{Rows: pc, Cols: cols, Stride: cols, Data: make([]float64, pc*cols)}
			for _, x := range vs[1:] {
				for r := range pc {
					for t := range cols {
						sum.Data[r*cols+t] += x.Data[r*x.Stride+t]
					}
				}
			}
			out := blas64.General{Rows: pc, Cols: cols, Stride: cols, Data: make([]float64, pc*cols)}
			tA := blas.NoTrans
			if trans {
				tA = blas.Trans
			}
			blas64.Gemm(tA, blas.NoTrans, 1, p.t(m.m-k*nb), sum, 0, out)
			return out, nil
		}, parts...)
		g.send(y, tagY, pc, cols, destinations(part, me))
	} else {
		g.send(w, tagW, pc, cols, []int{root})
		y = g.recv(root, tagY, pc, cols)
	}
	upd := g.task(fmt.Sprintf("larfb(%d,%d)", k, j), func(vs []blas64.General) (blas64.General, error) {
		p := qrPanel{vs[0]}
		for _, i := range mine {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, -1, p.v((i-k)*nb, m.rows(i)), vs[1], 1, m.tile(i, j))
		}
		return blas64.General{}, nil
	}, panel, y, w)
	for _, i := range mine {
		// The tile itself is the value later steps read (the panel's
		// tiles travel to the owner of the diagonal).
		ver[i][j] = runtime.Then(g.ctx, upd, func(context.Context, blas64.General) (blas64.General, error) { return m.tile(i, j), nil })
	}
}
