package primitives

import (
	"context"
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
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

	// For the tests: what the range finder did, and condition limits
	// other than condMid and condFinal, and condOnce (0: those).
	stats             *svdStats
	condMax, condOnce float64
}

// TruncatedSVD returns the leading rank singular values and vectors of a
// row-tiled m x n matrix by the randomized range finder (Halko, Martinsson
// and Tropp 2011): Y = A·Ω for a Gaussian n x l sketch Ω (l = rank +
// oversampling, drawn alike on every locality), a few power iterations
// Y = A·(Aᵀ·Q) with Q re-orthogonalised each time (and Aᵀ·Q by a local
// QR), then B = Qᵀ·A (l x n, summed over the localities), the SVD of the
// small B = U_b·Σ·Vᵀ on every locality, and U = Q·U_b. Sums travel up and
// down a binary tree over the localities. The products with A are as many
// as Dask's svd_compressed makes (2 + 2·PowerIters); unlike its default
// power iterator, which orthonormalises once at the end, every product is
// orthonormalised: without, the columns of (A·Aᵀ)^q·A·Ω for singular
// values decaying fast lose their trailing directions below the rounding.
// Aᵀ·Q is formed as Qᵀ·A, A's rows contiguous for the BLAS. The sketch is
// orthonormalised by shifted CholeskyQR3. A power iteration reads A once,
// not twice: A·W and the next Qᵀ·A are formed together, block by block of
// A's rows, with W scaled so that A·W is well conditioned and Q comes
// from its Gram matrix (svd_range.go). When a basis is not well
// conditioned after all (A of lower rank than l), Q is formed by TSQR,
// and Qᵀ·A by a pass of its own. A is checked for NaN and Inf through
// Y = A·Ω.
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
		if bad := e.rowTiledShape(op, x, false); bad != nil {
			r.Cancel(bad)
			return SVDFactors{}, bad
		}
		m, n := x.ann.Tiling.Shape[0], x.ann.Tiling.Shape[1]
		if rank < 1 || rank > min(m, n) {
			bad := e.errorf(op, "array %s of shape %v: rank %d, want one in [1, %d]", x.Name(), x.ann.Tiling.Shape, rank, min(m, n))
			r.Cancel(bad)
			return SVDFactors{}, bad
		}
		l := min(rank+max(o.Oversample, 0), m, n)
		ch, err := runtime.NewChannel(e.rt, fmt.Sprintf("%s/truncatedsvd~%d", CommunicatorName, k), nil)
		if err != nil {
			r.Cancel(err)
			return SVDFactors{}, e.wrap(op, err)
		}
		defer ch.Close()
		rows := x.ann.Local().Owned[0].Len()
		f := newRangeFinder(&tsqrRun{e: e, ch: ch, ctx: ctx}, blas64.General{Rows: rows, Cols: n, Stride: n, Data: x.data}, l)
		defer f.release()
		if o.condMax > 0 {
			f.condMid, f.condFinal = o.condMax, o.condMax
		}
		if o.condOnce > 0 {
			f.condOnce = o.condOnce
		}
		if o.stats != nil {
			f.stats = o.stats
		}
		got, err := r.AllReduce(ctx, []float64{f.sketch(o.Seed)}, nanMax).Get(ctx)
		if err != nil {
			return SVDFactors{}, e.wrap(op, err)
		}
		if math.IsNaN(got[0]) || math.IsInf(got[0], 0) {
			return SVDFactors{}, e.errorf(op, "array %s holds NaN or Inf (or elements whose products with the sketch overflow): want finite elements", x.Name())
		}
		if err := f.orthonormalize(m); err != nil {
			return SVDFactors{}, e.wrap(op, fmt.Errorf("array %s: %w", x.Name(), err))
		}
		if err := f.project(); err != nil {
			return SVDFactors{}, e.wrap(op, err)
		}
		for i := range max(o.PowerIters, 0) {
			if err := f.powerStep(i == o.PowerIters-1); err != nil {
				return SVDFactors{}, e.wrap(op, fmt.Errorf("array %s: %w", x.Name(), err))
			}
		}
		var svd mat.SVD
		if !svd.Factorize(mat.NewDense(l, n, f.z), mat.SVDThin) {
			return SVDFactors{}, e.errorf(op, "array %s: the SVD of the %dx%d projection did not converge", x.Name(), l, n)
		}
		var ub, v mat.Dense
		svd.UTo(&ub)
		svd.VTo(&v)
		out := SVDFactors{Values: svd.Values(nil)[:rank], V: mat.DenseCopyOf(v.Slice(0, n, 0, rank))}
		c := mat.DenseCopyOf(ub.Slice(0, l, 0, rank))
		data := e.ownTileToSet(rows * rank)
		f.basisTimes(c.RawMatrix(), data)
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

// allSum returns the element-wise sum of v over the localities, on every
// locality: up the binary tree of treeLevels and back down. atRoot, when
// not nil, runs on the sum at the root (locality 0) before it goes down:
// what it writes into the sum, decisions among them, every locality gets
// alike.
func (t *tsqrRun) allSum(v []float64, atRoot func(sum []float64)) ([]float64, error) {
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
		if len(sum) != len(v) {
			return nil, fmt.Errorf("the sum from locality %d has %d elements, want %d", parent, len(sum), len(v))
		}
	} else if atRoot != nil {
		atRoot(sum)
	}
	for i := len(kids) - 1; i >= 0; i-- {
		if err := t.ch.Set(t.ctx, kids[i][0], down+uint64(kids[i][1]), sum).Err(t.ctx); err != nil {
			return nil, err
		}
	}
	return sum, nil
}
