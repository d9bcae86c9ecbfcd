package primitives

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// QRResult is the result of QR: A = Q·R.
type QRResult struct {
	// QR holds R on and above the diagonal and the Householder vectors
	// below it (LAPACK's geqrf form), in a's layout.
	QR *Array
	// Tau are the scales of the Householder reflectors, min(m, n) of them,
	// the same on every locality.
	Tau []float64
	// Q is the explicit m x n factor with orthonormal columns, in a's
	// layout, when QR was asked for it; nil otherwise.
	Q *Array
}

// QR factors a general m x n matrix (m >= n), A = Q·R, by tiled
// Householder QR as a task graph. a is laid out block-cyclically
// (BlockCyclic, square blocks) on any p x q grid.
//
// On a 1 x q grid every block column is on one locality. Step k: geqrf(k)
// factors the panel, block column k from row k·nb down, on its owner; the
// panel's reflectors travel once to each locality holding block columns
// to its right, where ormqr(k,j) applies Qᵀ to each of them as a task; the
// panel of step k+1 starts once its own column is updated (lookahead).
// With explicit, orgqr(j) forms block column j of Q on its owner from the
// panels 0..j, as soon as they are there. On a grid of more than one row
// the panel is factored on the owner of its diagonal tile and the block
// reflector applied as a reduction over each grid column (qr2d.go).
//
// A matrix wider than tall, not block-cyclic or holding NaN or Inf fails
// the result with an error naming the array.
func QR(ctx context.Context, e *Env, a *runtime.Future[*Array], explicit bool) *runtime.Future[QRResult] {
	const op = "QR"
	k := e.derive()
	kq := e.derive()
	return graphCollective(ctx, e, op, func(ctx context.Context, r, end *runtime.Reservation) (QRResult, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return QRResult{}, err
		}
		if err := x.pin(e, op); err != nil {
			return QRResult{}, err
		}
		defer x.unpin()
		if err := e.adopt(op, x); err != nil {
			return QRResult{}, err
		}
		if err := e.checkCyclic(op, x, false); err != nil {
			return QRResult{}, err
		}
		s, c := x.ann.Tiling.Shape, *x.ann.Tiling.Cyclic
		if s[0] < s[1] {
			return QRResult{}, e.errorf(op, "array %s of shape %v: want at least as many rows as columns", x.Name(), s)
		}
		if err := e.checkFinite(ctx, op, r, x); err != nil {
			return QRResult{}, err
		}
		data := e.tileToSet(len(x.data))
		copy(data, x.data)
		v := newCyclicMatrix(x.ann.Tiling, e.Locality(), data)
		var qv *cyclicMatrix
		if explicit {
			qv = newCyclicMatrix(x.ann.Tiling, e.Locality(), e.tileToSet(len(x.data)))
			clear(qv.data)
		}
		base := fmt.Sprintf("%s/qr~%d", CommunicatorName, k)
		factor := e.tiledQR
		if c.GridRows > 1 {
			factor = e.qr2d
		}
		tau, err := factor(ctx, op, base, end, x.Name(), v, qv)
		if err != nil {
			return QRResult{}, err
		}
		out := QRResult{Tau: tau}
		if out.QR, err = e.newArray(op, derivedAnnotation(k, x), data); err != nil {
			return QRResult{}, err
		}
		if explicit {
			if out.Q, err = e.newArray(op, derivedAnnotation(kq, x), qv.data); err != nil {
				return QRResult{}, err
			}
		}
		return out, nil
	})
}

// tiledQR factors v in place and, when qv is not nil, forms Q in it; it
// returns tau.
func (e *Env) tiledQR(ctx context.Context, op, base string, end *runtime.Reservation, name string, v, qv *cyclicMatrix) ([]float64, error) {
	g, err := newTileGraph(ctx, e, op, base, end, func(col int) error { return fmt.Errorf("matrix %s: column %d failed", name, col) })
	if err != nil {
		return nil, err
	}
	cols := &luGraph{v: v}
	nt, me, nb := v.nbc, v.me, v.c.ColBlock
	ver := make([]tileFuture, nt) // this locality's block columns
	for j := range nt {
		if v.mine(0, j) {
			ver[j] = runtime.MakeReady(v.tile(0, j))
		}
	}
	panels := make([]tileFuture, nt)
	taus := make([]tileFuture, nt) // every panel's tau, on every locality
	all := make([]bool, e.Size())
	for l := range all {
		all[l] = true
	}
	for k := range nt {
		prow := v.m - k*nb
		need := make([]bool, e.Size())
		for j := k + 1; j < nt; j++ {
			need[v.owner(0, j)] = true
		}
		if v.mine(0, k) {
			f := g.task(fmt.Sprintf("geqrf(%d)", k), func([]blas64.General) (blas64.General, error) {
				p := cols.column(k, k*nb)
				tau := geqrf(p)
				out := append(packed(p), tau...)
				return blas64.General{Rows: p.Rows + 1, Cols: p.Cols, Stride: p.Cols, Data: out}, nil
			}, ver[k])
			ver[k], panels[k] = f, f
			g.send(f, uint64(k), prow+1, v.cols(k), destinations(need, me))
			taus[k] = g.task(fmt.Sprintf("tau(%d)", k), func(vs []blas64.General) (blas64.General, error) {
				p := vs[0]
				return blas64.General{Rows: 1, Cols: p.Cols, Stride: p.Cols, Data: p.Data[(p.Rows-1)*p.Stride:]}, nil
			}, f)
			g.send(taus[k], uint64(nt+k), 1, v.cols(k), destinations(all, me))
		} else {
			if need[me] {
				panels[k] = g.recv(v.owner(0, k), uint64(k), prow+1, v.cols(k))
			}
			taus[k] = g.recv(v.owner(0, k), uint64(nt+k), 1, v.cols(k))
		}
		for j := k + 1; j < nt; j++ {
			if !v.mine(0, j) {
				continue
			}
			ver[j] = g.task(fmt.Sprintf("ormqr(%d,%d)", k, j), func(vs []blas64.General) (blas64.General, error) {
				p := vs[0]
				ormqr(blas.Trans, blas64.General{Rows: p.Rows - 1, Cols: p.Cols, Stride: p.Stride, Data: p.Data}, p.Data[(p.Rows-1)*p.Stride:], cols.column(j, k*nb))
				return vs[1], nil
			}, panels[k], ver[j])
		}
	}
	if qv != nil {
		qcols := &luGraph{v: qv}
		for j := range nt {
			if !qv.mine(0, j) {
				continue
			}
			g.task(fmt.Sprintf("orgqr(%d)", j), func(ps []blas64.General) (blas64.General, error) {
				q := qcols.column(j, 0)
				for t := range q.Cols {
					q.Data[(j*nb+t)*q.Stride+t] = 1
				}
				for k := j; k >= 0; k-- {
					p := ps[k]
					ormqr(blas.NoTrans, blas64.General{Rows: p.Rows - 1, Cols: p.Cols, Stride: p.Stride, Data: p.Data}, p.Data[(p.Rows-1)*p.Stride:], qcols.column(j, k*nb))
				}
				return blas64.General{}, nil
			}, panels[:j+1]...)
		}
	}
	if err := g.wait(ctx); err != nil {
		return nil, err
	}
	tau := make([]float64, 0, v.n)
	for k := range nt {
		t, err := taus[k].Get(ctx)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		tau = append(tau, t.Data[:t.Cols]...)
	}
	return tau, nil
}
