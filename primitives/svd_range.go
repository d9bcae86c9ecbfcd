package primitives

import (
	"math"
	"math/rand/v2"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// TruncatedSVD's range finder on one locality. The products with A are
// what it costs (A is read from memory once per pass, every other
// operand is l columns wide), so a power iteration, the products A·W and
// then Qᵀ·A with Q an orthonormal basis of A·W, is one pass over A
// (fusedPass) instead of two: it forms Y' = A·W' and G = Y'ᵀ·A block by
// block, and Qᵀ·A = R'⁻ᵀ·G once R' (Y' = Q·R') is known. That is as
// accurate as forming Q first only when Y' is well conditioned: G's
// rounding errors, about ε·‖Y'‖·‖A‖, are multiplied by ‖R'⁻¹‖. So W' is
// W = orth(Aᵀ·Q_prev) scaled by R̂⁻¹, R̂ the R of the l x l Sᵀ where
// Aᵀ·Q_prev = W·S: A·W lies mostly in the range of Q_prev, where it is
// Q_prev·Sᵀ, so Y' = A·W·R̂⁻¹ is an orthonormal basis of that part plus
// a part orthogonal to it. Its singular values are then at least one and
// at most √(1 + ‖E‖²), E the orthogonal part, small once Q_prev holds
// most of A's range (1.0 to 1.4 on the benchmark's matrix, whose
// singular values halve from one to the next, and on uniform noise).
// R' comes from the Gram matrix Y'ᵀY' (CholeskyQR): once when Y' is that
// well conditioned (condOnce; Q = Y'·R'⁻¹ is then orthonormal to within
// about ε·κ²), twice otherwise (CholeskyQR2); if Y''s condition number
// exceeds condFinal (for the last projection, which the singular values
// come from) or condMid (before), or the factorisation fails, Q is
// formed explicitly by TSQR and Qᵀ·A by a pass of its own, as without
// the fusion. Locality 0 decides, on the sums, and its decisions travel
// down with them, so every locality takes the same path.
//
// The blocks are l columns wide, padded with zero columns to lp, a
// multiple of 8 when that adds at most a tenth: OpenBLAS's kernels (4 x
// 8 on AVX2) then run without ragged edges, and the padded products of
// the fused pass took 8% less time, Qᵀ·A 15% less (l = 30, lp = 32).

// Condition numbers of Y' up to which a fused pass's Qᵀ·A is taken:
// G's rounding errors grow by at most this factor over those of Qᵀ·A
// formed from an explicit Q. The last projection gives the singular
// values; the earlier ones only the next basis, whose errors the
// remaining products damp, and CholeskyQR2 is orthonormal to the
// rounding up to about 1e7. Up to condOnce one CholeskyQR does.
const (
	condFinal = 1e2
	condMid   = 1e5
	condOnce  = 4
)

// The decisions locality 0 sends down with a fused pass's sums.
const (
	stepDone     = 1 // Qᵀ·A = R⁻ᵀ·G (sent down in G's place), Q = Y'·R⁻¹
	stepRefine   = 2 // a second CholeskyQR
	stepExplicit = 3 // TSQR and a pass of its own
)

// condCholeskyQR is the largest condition number of a basis that
// CholeskyQR2 makes orthonormal to the rounding (it loses about ε·κ² of
// orthogonality in the first factorisation; below about u^-1/2 the second
// restores it).
const condCholeskyQR = 1e6

// svdStats records what TruncatedSVD's range finder did (for the tests).
type svdStats struct {
	once, twice, explicit int       // power iterations with one CholeskyQR, two, TSQR
	conds                 []float64 // κ(Y') of each power iteration
	tsqr                  int       // sketches orthonormalised by TSQR
}

// rangeFinder is one locality's state of TruncatedSVD's range finder.
type rangeFinder struct {
	t     *tsqrRun
	a     blas64.General // this locality's rows of A, rows x n
	l, lp int            // columns of the basis, and with the padding
	// rows x lp each, the columns from l on zero: Y (A·Ω, then the fused
	// passes' Y'), and Q or the basis that holds it.
	y, q  blas64.General
	tiles []*runtime.Tile
	z     []float64 // l x n: Qᵀ·A, the same on every locality
	// Q = basis·R⁻¹ (basis y or q; r nil: Q = basis).
	basis blas64.General
	r     []float64
	// condMid, condFinal and condOnce, unless the options change them.
	condMid, condFinal, condOnce float64
	stats                        *svdStats
}

// newRangeFinder returns the range finder of t's locality over its rows a
// for a basis of l columns.
func newRangeFinder(t *tsqrRun, a blas64.General, l int) *rangeFinder {
	lp := (l + 7) &^ 7
	if 10*(lp-l) > l {
		lp = l
	}
	f := &rangeFinder{t: t, a: a, l: l, lp: lp, condMid: condMid, condFinal: condFinal, condOnce: condOnce, stats: &svdStats{}}
	f.y = f.scratch(a.Rows, lp)
	return f
}

// qbuf returns the memory of q, rows x lp, taken when first asked for:
// only the second CholeskyQR and TSQR need it.
func (f *rangeFinder) qbuf() blas64.General {
	if f.q.Data == nil {
		f.q = f.scratch(f.a.Rows, f.lp)
	}
	return f.q
}

// scratch returns rows x lp memory of the locality's own (reused by
// length after release), given back by release.
func (f *rangeFinder) scratch(rows, lp int) blas64.General {
	tile := runtime.NewTile(f.t.e.rt, max(rows, 1)*lp, runtime.TileOptions{Uncleared: true})
	f.tiles = append(f.tiles, tile)
	return blas64.General{Rows: rows, Cols: lp, Stride: lp, Data: tile.Float64s()}
}

// release gives the scratch memory back.
func (f *rangeFinder) release() {
	for _, t := range f.tiles {
		t.Release()
	}
	f.tiles = nil
}

// cols returns the first l columns of x.
func (f *rangeFinder) cols(x blas64.General) blas64.General {
	x.Cols = f.l
	return x
}

// sketch sets Y = A·Ω for the Gaussian n x l Ω of seed (drawn alike on
// every locality) and returns NaN if Y holds NaN or Inf, else 0: an
// element of A that is NaN or Inf makes its row of Y NaN or Inf, so Y
// (l columns) is checked rather than A (n).
func (f *rangeFinder) sketch(seed uint64) float64 {
	n, l, lp := f.a.Cols, f.l, f.lp
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	omega := make([]float64, n*lp)
	for i := range n {
		for j := range l {
			omega[i*lp+j] = rng.NormFloat64()
		}
	}
	timesRight(f.a, blas64.General{Rows: n, Cols: lp, Stride: lp, Data: omega}, f.y)
	return nonFinite(f.y.Data[:f.y.Rows*lp])
}

// orthonormalize sets Q to an orthonormal basis of Y's columns, explicit:
// Y itself, by shifted CholeskyQR3 (Fukaya, Kannan, Nakatsukasa, Zhang
// and Yamamoto 2020: the Gram matrix shifted by 11·(m·l + l·(l+1))·u·
// ‖Y‖²_F, so that its Cholesky factorisation succeeds for any condition
// number of Y, then CholeskyQR twice), three sums of l x l and three
// triangular solves on Y's rows against TSQR's tree and its Q in memory of
// its own; by TSQR (orthonormalizeTSQR) when a factorisation fails, Y
// being numerically rank-deficient.
func (f *rangeFinder) orthonormalize(m int) error {
	l := f.l
	y := f.cols(f.y)
	for round := range 3 {
		msg := make([]float64, l*l+1)
		gram(y, msg)
		sum, err := f.t.allSum(msg, func(sum []float64) {
			if round == 0 {
				tr := 0.0
				for i := range l {
					tr += sum[i*l+i]
				}
				shift := 11 * float64(m*l+l*(l+1)) * 0x1p-53 * tr
				for i := range l {
					sum[i*l+i] += shift
				}
			}
			r, kappa, ok := cholesky(sum[:l*l], l)
			copy(sum, r.Data)
			sum[l*l] = 0
			if !ok || (round > 0 && kappa > condCholeskyQR) {
				sum[l*l] = 1
			}
		})
		if err != nil {
			return err
		}
		if sum[l*l] != 0 {
			f.stats.tsqr++
			return f.orthonormalizeTSQR()
		}
		rightSolve(y, blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: l, Stride: l, Data: sum[:l*l]})
	}
	f.basis, f.r = f.y, nil
	return nil
}

// orthonormalizeTSQR sets Q to an orthonormal basis of Y's columns,
// explicit, by TSQR (Y overwritten).
func (f *rangeFinder) orthonormalizeTSQR() error {
	l, lp, rows := f.l, f.lp, f.y.Rows
	f.qbuf()
	f.t.qInto = f.q.Data
	_, q, err := f.t.factor(f.cols(f.y), true)
	f.t.qInto = nil
	if err != nil {
		return err
	}
	if rows > 0 && &q.Data[0] != &f.q.Data[0] {
		copy(f.q.Data, q.Data[:rows*l])
	}
	// TSQR wrote Q's rows l apart: spread them lp apart, from the last.
	if lp != l {
		for i := rows - 1; i >= 0; i-- {
			copy(f.q.Data[i*lp:i*lp+l], f.q.Data[i*l:i*l+l])
			clear(f.q.Data[i*lp+l : (i+1)*lp])
		}
	}
	f.basis, f.r = f.q, nil
	return nil
}

// project sets z = Qᵀ·A for the explicit Q, summed over the localities:
// a pass of its own.
func (f *rangeFinder) project() error {
	part := make([]float64, f.lp*f.a.Cols)
	transTimes(f.basis, f.a, part)
	z, err := f.t.allSum(part[:f.l*f.a.Cols], nil)
	if err != nil {
		return err
	}
	f.z = z
	return nil
}

// powerStep is a power iteration from z = Q_prevᵀ·A: W = orth(Aᵀ·Q_prev),
// Y' = A·W·R̂⁻¹ and z = Qᵀ·A for Q an orthonormal basis of Y', in one
// pass over A when Y' is well conditioned (the file's comment), else
// two. last says the z is the final projection.
func (f *rangeFinder) powerStep(last bool) error {
	n, l, lp := f.a.Cols, f.l, f.lp
	w, s := orthRows(f.z, l, n)
	if rh, ok := preconditioner(s, l); ok {
		blas64.Trsm(blas.Right, blas.NoTrans, 1, rh, w)
	}
	wp := blas64.General{Rows: n, Cols: lp, Stride: lp, Data: make([]float64, n*lp)}
	for i := range n {
		copy(wp.Data[i*lp:i*lp+l], w.Data[i*l:(i+1)*l])
	}
	// The message: the Gram matrix Y'ᵀY' (l x l), the decision and κ,
	// then G = Y'ᵀ·A (its first l rows of lp).
	const head = 2
	gi := l*l + head
	buf := make([]float64, gi+lp*n)
	fusedPass(f.a, wp, f.y, buf[gi:])
	gram(f.cols(f.y), buf[:l*l])
	limit := f.condMid
	if last {
		limit = f.condFinal
	}
	sum, err := f.t.allSum(buf[:gi+l*n], func(sum []float64) {
		r, kappa, ok := cholesky(sum[:l*l], l)
		sum[l*l+1] = kappa
		switch {
		case !ok || kappa > limit:
			sum[l*l] = stepExplicit
		case kappa <= f.condOnce:
			sum[l*l] = stepDone
			copy(sum, r.Data)
			blas64.Trsm(blas.Left, blas.Trans, 1, r, blas64.General{Rows: l, Cols: n, Stride: n, Data: sum[gi:]})
		default:
			sum[l*l] = stepRefine
			copy(sum, r.Data)
		}
	})
	if err != nil {
		return err
	}
	f.stats.conds = append(f.stats.conds, sum[l*l+1])
	r1 := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: l, Stride: l, Data: sum[:l*l]}
	switch sum[l*l] {
	case stepDone:
		f.stats.once++
		f.z, f.basis, f.r = sum[gi:], f.y, r1.Data
		return nil
	case stepRefine:
		return f.refine(r1, sum[gi:])
	}
	// Y' too ill-conditioned for the fusion: Q explicit, and Qᵀ·A by a
	// pass of its own.
	f.stats.explicit++
	if err := f.orthonormalizeTSQR(); err != nil {
		return err
	}
	return f.project()
}

// refine is the second CholeskyQR of a fused power iteration: Q =
// (Y'·R1⁻¹)·R2⁻¹ with R2 the Cholesky factor of the Gram matrix of
// Y'·R1⁻¹, and Qᵀ·A = R2⁻ᵀ·R1⁻ᵀ·G. If R2 cannot be had, Q is formed
// by TSQR after all.
func (f *rangeFinder) refine(r1 blas64.Triangular, g []float64) error {
	l, n, rows := f.l, f.a.Cols, f.y.Rows
	q := f.qbuf()
	copy(q.Data[:rows*f.lp], f.y.Data[:rows*f.lp])
	rightSolve(f.cols(q), r1)
	msg := make([]float64, l*l+1)
	gram(f.cols(f.q), msg)
	sum, err := f.t.allSum(msg, func(sum []float64) {
		r, _, ok := cholesky(sum[:l*l], l)
		sum[l*l] = stepRefine
		if !ok {
			sum[l*l] = stepExplicit
		}
		copy(sum, r.Data)
	})
	if err != nil {
		return err
	}
	if sum[l*l] != stepRefine {
		f.stats.explicit++
		if err := f.orthonormalizeTSQR(); err != nil {
			return err
		}
		return f.project()
	}
	r2 := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: l, Stride: l, Data: sum[:l*l]}
	z := blas64.General{Rows: l, Cols: n, Stride: n, Data: g}
	blas64.Trsm(blas.Left, blas.Trans, 1, r1, z)
	blas64.Trsm(blas.Left, blas.Trans, 1, r2, z)
	f.stats.twice++
	f.z, f.basis, f.r = g, f.q, r2.Data
	return nil
}

// basisTimes sets u (rows x k) to Q·c for the l x k c (c overwritten).
func (f *rangeFinder) basisTimes(c blas64.General, u []float64) {
	if f.r != nil {
		blas64.Trsm(blas.Left, blas.NoTrans, 1, blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: f.l, Stride: f.l, Data: f.r}, c)
	}
	timesRight(f.cols(f.basis), c, blas64.General{Rows: f.basis.Rows, Cols: c.Cols, Stride: c.Cols, Data: u})
}

// orthRows returns W (n x l) with orthonormal columns and S (l x l, upper
// triangular) with zᵀ = W·S, for z l x n (row-major), by Householder QR.
func orthRows(z []float64, l, n int) (blas64.General, blas64.General) {
	w := blas64.General{Rows: n, Cols: l, Stride: l, Data: make([]float64, n*l)}
	for i := range l {
		for j, v := range z[i*n : (i+1)*n] {
			w.Data[j*l+i] = v
		}
	}
	tau := geqrf(w)
	s := blas64.General{Rows: l, Cols: l, Stride: l, Data: upperPadded(w, l)}
	work := []float64{0}
	lapack64.Orgqr(w, tau, work, -1)
	work = make([]float64, max(int(work[0]), l, 1))
	lapack64.Orgqr(w, tau, work, len(work))
	return w, s
}

// preconditioner returns R̂, the R of the QR factorisation of Sᵀ, and
// whether it is usable: no diagonal element zero, NaN, or below
// l·ε times the largest.
func preconditioner(s blas64.General, l int) (blas64.Triangular, bool) {
	st := blas64.General{Rows: l, Cols: l, Stride: l, Data: make([]float64, l*l)}
	for i := range l {
		for j := range l {
			st.Data[j*l+i] = s.Data[i*l+j]
		}
	}
	geqrf(st)
	r := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: l, Stride: l, Data: upperPadded(st, l)}
	big, small := 0.0, math.Inf(1)
	for i := range l {
		d := math.Abs(r.Data[i*l+i])
		big, small = max(big, d), min(small, d)
	}
	return r, small > float64(l)*0x1p-52*big && !math.IsInf(big, 0)
}

// cholesky returns the upper Cholesky factor R of the l x l symmetric c
// (its upper triangle; c untouched), R's 2-norm condition number, and
// whether c was positive definite with a finite factor.
func cholesky(c []float64, l int) (blas64.Triangular, float64, bool) {
	r := make([]float64, l*l)
	for i := range l {
		copy(r[i*l+i:(i+1)*l], c[i*l+i:(i+1)*l])
	}
	t, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: l, Stride: l, Data: r})
	t.Diag = blas.NonUnit
	if !ok || nonFinite(r) != 0 {
		return t, math.Inf(1), false
	}
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(l, l, append([]float64(nil), r...)), mat.SVDNone) {
		return t, math.Inf(1), false
	}
	v := svd.Values(nil)
	if !(v[l-1] > 0) {
		return t, math.Inf(1), false
	}
	return t, v[0] / v[l-1], true
}
