package primitives

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// SVDFactors is a (possibly truncated) singular value decomposition
// A ≈ U·diag(Values)·Vᵀ.
type SVDFactors struct {
	Values []float64  // decreasing, the same on every locality
	V      *mat.Dense // n x k right singular vectors, the same everywhere
	U      *Array     // m x k left singular vectors in a's row tiling; nil when not asked
}

// SVDTall returns the thin SVD of a tall-skinny row-tiled matrix (as TSQR
// wants): TSQR, then the SVD of the small R on every locality (R = U_r·Σ·Vᵀ),
// and, with wantU, U = Q·U_r, each locality multiplying its rows of Q.
func SVDTall(ctx context.Context, e *Env, a *runtime.Future[*Array], wantU bool) *runtime.Future[SVDFactors] {
	const op = "SVDTall"
	k := e.derive()
	qr := TSQR(ctx, e, a, wantU)
	return runtime.ThenNamed(ctx, "primitives."+op, qr, func(ctx context.Context, f QRFactors) (SVDFactors, error) {
		var svd mat.SVD
		if !svd.Factorize(f.R, mat.SVDThin) {
			return SVDFactors{}, e.errorf(op, "array %s: the SVD of R did not converge", f.x.Name())
		}
		out := SVDFactors{Values: svd.Values(nil), V: &mat.Dense{}}
		svd.VTo(out.V)
		if !wantU {
			return out, nil
		}
		var ur mat.Dense
		svd.UTo(&ur)
		u, err := e.timesSmall(op, k, f.Q, &ur)
		if err != nil {
			return SVDFactors{}, err
		}
		out.U = u
		return out, nil
	})
}

// timesSmall returns x·s, x row-tiled m x n and s n x k the same on every
// locality: each locality multiplies its rows. The result is derived from x
// (the k-th derived name).
func (e *Env) timesSmall(op string, k uint64, x *Array, s *mat.Dense) (*Array, error) {
	if err := x.pin(e, op); err != nil {
		return nil, err
	}
	defer x.unpin()
	b := x.ann.Local().Owned
	rows, cols := b[0].Len(), s.RawMatrix().Cols
	data := e.tileToSet(rows * cols)
	out := blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: data}
	if rows > 0 {
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: rows, Cols: b[1].Len(), Stride: b[1].Len(), Data: x.data}, s.RawMatrix(), 0, out)
	}
	ann := derivedAnnotation(k, x)
	t := ann.Tiling.Clone()
	t.Shape[1] = cols
	for i := range t.Tiles {
		t.Tiles[i].Owned[1] = annotate.Span{Stop: cols}
		t.Tiles[i].Halo[1] = annotate.Span{Stop: cols}
	}
	ann.Tiling = t
	return e.newArray(op, ann, data)
}

// TruncatedSVDOptions are the knobs of TruncatedSVD.
type TruncatedSVDOptions struct {
	Oversample int    // extra columns of the sketch (default 10)
	PowerIters int    // power iterations (default 2; negative: none)
	Seed       uint64 // of the Gaussian sketch
}

// TruncatedSVD returns the leading rank singular values and vectors of a
// row-tiled m x n matrix by the randomized range finder (Halko, Martinsson
// and Tropp 2011): Y = A·Ω for a Gaussian n x l sketch Ω (l = rank +
// oversampling, drawn alike on every locality), a few power iterations
// Y = A·(Aᵀ·Q) with Q re-orthogonalised through TSQR (and Aᵀ·Q by a local
// QR), then B = Qᵀ·A (l x n, summed over the localities), the SVD of the
// small B = U_b·Σ·Vᵀ on every locality, and U = Q·U_b. Sums travel up and
// down the same binary tree as TSQR's R. The products with A are as many
// as Dask's svd_compressed makes (2 + 2·PowerIters); unlike its default
// power iterator, which orthonormalises once at the end, every product is
// orthonormalised: without, the columns of (A·Aᵀ)^q·A·Ω for singular
// values decaying fast lose their trailing directions below the rounding.
// Aᵀ·Q is formed as Qᵀ·A, A's rows contiguous for the BLAS.
//
// rank must be in [1, min(m, n)]; l is capped at min(m, n).
func TruncatedSVD(ctx context.Context, e *Env, a *runtime.Future[*Array], rank int, o TruncatedSVDOptions) *runtime.Future[SVDFactors] {
	const op = "TruncatedSVD"
	k := e.derive()
	if o.Oversample == 0 {
		o.Oversample = 10
	}
	if o.PowerIters == 0 {
		o.PowerIters = 2
	}
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (SVDFactors, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return SVDFactors{}, err
		}
		if err := x.pin(e, op); err != nil {
			return SVDFactors{}, err
		}
		defer x.unpin()
		if err := e.adopt(op, x); err != nil {
			return SVDFactors{}, err
		}
		if err := e.checkRowTiled(ctx, op, r, x, false); err != nil {
			return SVDFactors{}, err
		}
		m, n := x.ann.Tiling.Shape[0], x.ann.Tiling.Shape[1]
		if rank < 1 || rank > min(m, n) {
			return SVDFactors{}, e.errorf(op, "array %s of shape %v: rank %d, want one in [1, %d]", x.Name(), x.ann.Tiling.Shape, rank, min(m, n))
		}
		l := min(rank+max(o.Oversample, 0), m, n)
		ch, err := runtime.NewChannel(e.rt, fmt.Sprintf("%s/truncatedsvd~%d", CommunicatorName, k), nil)
		if err != nil {
			return SVDFactors{}, e.wrap(op, err)
		}
		defer ch.Close()
		t := &tsqrRun{e: e, ch: ch, ctx: ctx}
		rows := x.ann.Local().Owned[0].Len()
		ax := mat.NewDense(max(rows, 1), n, nil)
		if rows > 0 {
			ax = mat.NewDense(rows, n, x.data)
		}
		rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
		omega := mat.NewDense(n, l, nil)
		for i := range n {
			for j := range l {
				omega.Set(i, j, rng.NormFloat64())
			}
		}
		y := mat.NewDense(ax.RawMatrix().Rows, l, nil)
		y.Mul(ax, omega)
		q, err := t.orthonormal(y, rows)
		if err != nil {
			return SVDFactors{}, e.wrap(op, err)
		}
		for range max(o.PowerIters, 0) {
			w, err := t.projection(ax, q, rows) // Qᵀ·A, l x n
			if err != nil {
				return SVDFactors{}, e.wrap(op, err)
			}
			y.Mul(ax, thinQ(w.T())) // A·orth(Aᵀ·Q)
			if q, err = t.orthonormal(y, rows); err != nil {
				return SVDFactors{}, e.wrap(op, err)
			}
		}
		b, err := t.projection(ax, q, rows) // B = Qᵀ·A, l x n
		if err != nil {
			return SVDFactors{}, e.wrap(op, err)
		}
		var svd mat.SVD
		if !svd.Factorize(b, mat.SVDThin) {
			return SVDFactors{}, e.errorf(op, "array %s: the SVD of the %dx%d projection did not converge", x.Name(), l, n)
		}
		var ub, v mat.Dense
		svd.UTo(&ub)
		svd.VTo(&v)
		out := SVDFactors{Values: svd.Values(nil)[:rank], V: mat.DenseCopyOf(v.Slice(0, n, 0, rank))}
		var u mat.Dense
		u.Mul(q, ub.Slice(0, l, 0, rank))
		data := e.tileToSet(rows * rank)
		if rows > 0 {
			copy(data, u.RawMatrix().Data)
		}
		ann := derivedAnnotation(k, x)
		ann.Tiling.Shape[1] = rank
		for i := range ann.Tiling.Tiles {
			ann.Tiling.Tiles[i].Owned[1] = annotate.Span{Stop: rank}
			ann.Tiling.Tiles[i].Halo[1] = annotate.Span{Stop: rank}
		}
		if out.U, err = e.newArray(op, ann, data); err != nil {
			return SVDFactors{}, err
		}
		return out, nil
	})
}

// orthonormal returns this locality's rows of an orthonormal basis of the
// columns of Y (its rows y, of which the first rows count, overwritten),
// through TSQR.
func (t *tsqrRun) orthonormal(y *mat.Dense, rows int) (*mat.Dense, error) {
	raw := y.RawMatrix()
	a := blas64.General{Rows: rows, Cols: raw.Cols, Stride: raw.Stride, Data: raw.Data}
	_, q, err := t.factor(a, true)
	if err != nil {
		return nil, err
	}
	if rows == 0 {
		return mat.NewDense(1, raw.Cols, nil), nil
	}
	return mat.NewDense(rows, raw.Cols, q.Data), nil
}

// projection returns Qᵀ·A summed over the localities (l x n, on every
// locality): each multiplies its rows (Qᵀ, l x rows, times A), and the sums
// travel up the tree and back down. QᵀA rather than AᵀQ: the BLAS then
// copies the small Q transposed, not A.
func (t *tsqrRun) projection(a, q *mat.Dense, rows int) (*mat.Dense, error) {
	n, l := a.RawMatrix().Cols, q.RawMatrix().Cols
	part := mat.NewDense(l, n, nil)
	if rows > 0 {
		part.Mul(q.T(), a)
	}
	sum, err := t.allSum(part.RawMatrix().Data)
	if err != nil {
		return nil, err
	}
	return mat.NewDense(l, n, sum), nil
}

// thinQ returns the n x l factor Q with orthonormal columns of the QR
// factorisation of z (n x l, n >= l): the l reflectors applied to the
// first l columns of the identity alone, not the n x n Q.
func thinQ(z mat.Matrix) *mat.Dense {
	q := mat.DenseCopyOf(z)
	raw := q.RawMatrix()
	tau := geqrf(raw)
	work := []float64{0}
	lapack64.Orgqr(raw, tau, work, -1)
	work = make([]float64, max(int(work[0]), raw.Cols, 1))
	lapack64.Orgqr(raw, tau, work, len(work))
	return q
}

// allSum returns the element-wise sum of v over the localities, on every
// locality: up the binary tree of treeLevels and back down.
func (t *tsqrRun) allSum(v []float64) ([]float64, error) {
	up, down := t.nextTags(), t.nextTags()
	sum := append([]float64(nil), v...)
	var err error
	parent, level := -1, 0
	var kids [][2]int // partner, level
	treeLevels(t.ch.Size(), t.ch.Site(), func(s, partner int, combine bool) bool {
		if !combine {
			parent, level = partner, s
			err = t.ch.Set(t.ctx, partner, up+uint64(s), sum).Err(t.ctx)
			return false
		}
		var got []float64
		if got, err = t.ch.Get(t.ctx, partner, up+uint64(s)).Get(t.ctx); err != nil {
			return false
		}
		if len(got) != len(sum) {
			err = fmt.Errorf("a sum from locality %d has %d elements, want %d", partner, len(got), len(sum))
			return false
		}
		for i := range sum {
			sum[i] += got[i]
		}
		kids = append(kids, [2]int{partner, s})
		return true
	})
	if err != nil {
		return nil, err
	}
	if parent >= 0 {
		if sum, err = t.ch.Get(t.ctx, parent, down+uint64(level)).Get(t.ctx); err != nil {
			return nil, err
		}
	}
	for i := len(kids) - 1; i >= 0; i-- {
		if err := t.ch.Set(t.ctx, kids[i][0], down+uint64(kids[i][1]), sum).Err(t.ctx); err != nil {
			return nil, err
		}
	}
	return sum, nil
}
