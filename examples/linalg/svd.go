package main

import (
	"context"
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// svdTerms is how many rank-one terms the SVD's matrix sums: 2^-60 is
// below a double's precision relative to the first term.
func svdTerms(cols int) int { return min(cols, 60) }

// svdU is u_t(i), the row factor of term t; svdV is 2^-t·v_t(j), its
// column factor with the term's weight.
func (r *runner) svdU(i, t int) float64 { return uniform(r.o.seed+3+uint64(t), i, 0) }
func (r *runner) svdV(j, t int) float64 {
	return math.Ldexp(uniform(r.o.seed+1000+uint64(t), j, 0), -t)
}

// svdMatrix is the SVD's element (i, j): Σ_t 2^-t·u_t(i)·v_t(j), singular
// values decaying about as 2^-t (bench/lapack and bench/linalg_dask.py make
// the same matrix). The v_t and the last row's u_t are computed once.
func (r *runner) svdMatrix(cols int) func(i, j int) float64 {
	terms := svdTerms(cols)
	v := make([]float64, cols*terms)
	for j := range cols {
		for t := range terms {
			v[j*terms+t] = r.svdV(j, t)
		}
	}
	u, row := make([]float64, terms), -1
	return func(i, j int) float64 {
		if i != row {
			for t := range terms {
				u[t] = r.svdU(i, t)
			}
			row = i
		}
		s := 0.0
		for t, vt := range v[j*terms : (j+1)*terms] {
			s += u[t] * vt
		}
		return s
	}
}

// svdReference returns the singular values of the SVD's matrix A = U·Vᵀ
// (U the m x T row factors, V the c x T weighted column factors) by LAPACK
// (through lapack64) from its factors: with U = Q_u·R_u (TSQR of the
// row-tiled U) and V = Q_v·R_v, A's singular values are those of the
// T x T matrix R_u·R_vᵀ. Cheap at any m, and exact up to the rounding
// of A's elements.
func (r *runner) svdReference(ctx context.Context) ([]float64, error) {
	m, c := r.o.m, r.o.cols
	terms := svdTerms(c)
	u, err := r.generate([]int{m, terms}, r.svdU)
	if err != nil {
		return nil, err
	}
	ru, err := primitives.TSQR(ctx, r.e, runtime.MakeReady(u), false).Get(ctx)
	if err != nil {
		return nil, err
	}
	v := mat.NewDense(c, terms, nil)
	for j := range c {
		for t := range terms {
			v.Set(j, t, r.svdV(j, t))
		}
	}
	var qr mat.QR
	qr.Factorize(v)
	var rv, core mat.Dense
	qr.RTo(&rv)
	core.Mul(ru.R.Slice(0, terms, 0, terms), rv.Slice(0, terms, 0, terms).T())
	var svd mat.SVD
	if !svd.Factorize(&core, mat.SVDNone) {
		return nil, fmt.Errorf("locality %d: LAPACK's SVD of the %dx%d core did not converge", r.e.Locality(), terms, terms)
	}
	return svd.Values(nil), nil
}

func (r *runner) svd(ctx context.Context) error {
	e, m, c, k := r.e, r.o.m, r.o.cols, r.o.rank
	a, err := r.generate([]int{m, c}, r.svdMatrix(c))
	if err != nil {
		return err
	}
	var f primitives.SVDFactors
	opts := primitives.TruncatedSVDOptions{Oversample: r.o.oversample, PowerIters: r.o.power, Seed: r.o.seed}
	if r.o.power == 0 {
		opts.PowerIters = -1
	}
	secs, err := r.timed(ctx, func() error {
		f, err = primitives.TruncatedSVD(ctx, e, runtime.MakeReady(a), k, opts).Get(ctx)
		return err
	})
	if err != nil {
		return err
	}
	l := float64(min(k+r.o.oversample, c))
	// The products with A dominate: 2·(power+1) of A·Z and Aᵀ·Q each.
	flops := 2 * float64(r.o.power+1) * 2 * float64(m) * float64(c) * l
	params := fmt.Sprintf("m=%d/cols=%d/rank=%d", m, c, k)
	what := fmt.Sprintf("truncated SVD of %dx%d, rank %d, %d power iterations", m, c, k, r.o.power)
	if e.Locality() == 0 {
		// The values, for comparing with bench/lapack's (gesdd).
		for i, v := range f.Values {
			fmt.Fprintf(r.out, "BenchmarkSVDValue/m=%d/cols=%d/i=%d 1 %.17g sigma\n", m, c, i, v)
		}
	}
	if !r.o.check {
		r.report("TruncatedSVD", params, what, secs, flops)
		return nil
	}
	want, err := r.svdReference(ctx)
	if err != nil {
		return err
	}
	if e.Locality() != 0 {
		return nil
	}
	worst := 0.0
	for i, v := range f.Values {
		worst = max(worst, math.Abs(v-want[i])/want[i])
	}
	g := flops / secs / 1e9
	fmt.Fprintf(r.out, "linalg: %s: %.4f s, %.2f GFLOP/s\n", what, secs, g)
	fmt.Fprintf(r.out, "BenchmarkTruncatedSVD/%s/localities=%d 1 %.6f s/op %.3f GFLOP/s %.3g max-rel-diff\n", params, e.Size(), secs, g, worst)
	return r.residual("svd", fmt.Sprintf("largest relative difference of the %d leading singular values from LAPACK's (of the matrix's factors)", k), worst, 1e-8)
}
