package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// params are the parameters of the factorisation.
type params struct {
	factors    int
	iterations int
	reg        float64 // regularization
	alpha      float64 // confidence per unit of rating
	seed       uint64
}

// factorisation is the result: the whole factor matrices (users x factors
// and items x factors, row-major) as every locality holds them at the end,
// and the loss after each iteration.
type factorisation struct {
	x, y   primitives.Whole
	losses []float64
}

// iteration reports one finished iteration to the program.
type iteration struct {
	k       int // 1-based
	seconds float64
	loss    float64
}

// als factorises the ratings r with implicit-feedback ALS (JetLag Listing
// 4): Y starts as random_d(items x factors, "row"); each iteration solves
// every user's factors against the whole Y on the locality that owns the
// user, all-gathers X, solves every item against the whole X and
// all-gathers Y. comm carries the loss's sum; report, if not nil, hears of
// every iteration.
func als(ctx context.Context, e *primitives.Env, comm *runtime.Communicator, r *ratings, p params, report func(iteration)) (*factorisation, error) {
	rows := primitives.Tiled(annotate.Row)
	yFut := primitives.AllGather(ctx, e, primitives.Random(ctx, e, []int{r.items, p.factors}, rows, p.seed))
	y, err := yFut.Get(ctx)
	if err != nil {
		return nil, err
	}
	out := &factorisation{y: y}
	for k := 1; k <= p.iterations; k++ {
		start := time.Now()
		yty := gram(y.Data, p.factors)
		xl, err := solveRows(ctx, e.Runtime(), &r.byUser, y.Data, yty, p)
		if err != nil {
			return nil, err
		}
		x, err := gather(ctx, e, r.users, p.factors, xl)
		if err != nil {
			return nil, err
		}
		xtx := gram(x.Data, p.factors)
		yl, err := solveRows(ctx, e.Runtime(), &r.byItem, x.Data, xtx, p)
		if err != nil {
			return nil, err
		}
		if y, err = gather(ctx, e, r.items, p.factors, yl); err != nil {
			return nil, err
		}
		l, err := loss(ctx, comm, r, x.Data, y.Data, xtx, gram(y.Data, p.factors), p)
		if err != nil {
			return nil, err
		}
		out.x, out.y = x, y
		out.losses = append(out.losses, l)
		if report != nil {
			report(iteration{k: k, seconds: time.Since(start).Seconds(), loss: l})
		}
	}
	return out, nil
}

// gather makes this locality's solved rows the tile of a row-tiled array
// and all-gathers it (all_gather_d).
func gather(ctx context.Context, e *primitives.Env, n, f int, local []float64) (primitives.Whole, error) {
	a, err := primitives.NewArray(e, []int{n, f}, primitives.Tiled(annotate.Row), local)
	if err != nil {
		return primitives.Whole{}, err
	}
	return primitives.AllGather(ctx, e, runtime.MakeReady(a)).Get(ctx)
}

// gram returns WᵀW (f x f, upper triangle filled, lower undefined) of the
// row-major n x f matrix w.
func gram(w []float64, f int) []float64 {
	g := make([]float64, f*f)
	blas64.Syrk(blas.Trans, 1, blas64.General{Rows: len(w) / f, Cols: f, Stride: f, Data: w}, 0,
		blas64.Symmetric{Uplo: blas.Upper, N: f, Stride: f, Data: g})
	return g
}

// rowsPerTask is how many rows one solve task takes.
const rowsPerTask = 64

// solveRows solves, for every row of s (a user against the items, or an
// item against the users), the normal equations of implicit ALS against
// the whole other factor matrix o:
//
//	(OᵀO + reg I + Σ_j alpha r_j o_j o_jᵀ) x = Σ_j (1 + alpha r_j) o_j
//
// the sums running over the row's ratings only. This is Listing 4's
// (Oᵀ C O + OᵀO + reg I) x = Oᵀ (C + I) p with C = diag(alpha r): the
// diagonal is never formed, and p is zero off the rated entries. The rows
// are cut into tasks of rowsPerTask; each solve is a Cholesky
// factorisation (the matrix is symmetric positive definite).
func solveRows(ctx context.Context, rt *runtime.Runtime, s *sparseRows, o, oto []float64, p params) ([]float64, error) {
	f := p.factors
	out := make([]float64, s.rows()*f)
	var tasks []*runtime.Future[struct{}]
	for r0 := 0; r0 < s.rows(); r0 += rowsPerTask {
		r1 := min(r0+rowsPerTask, s.rows())
		tasks = append(tasks, runtime.SpawnNamed(ctx, rt, "als.solve", func(ctx context.Context) (struct{}, error) {
			return struct{}{}, solveBlock(s, o, oto, p, r0, r1, out)
		}))
	}
	if _, err := runtime.WhenAll(tasks...).Get(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// syrk adds SᵀS to the upper triangle of the f x f matrix c, S being the
// k x f row-major matrix s: the rank-k update that dominates ALS. The
// primitives' pure-Go BLAS does it in AVX2 and FMA instructions where the
// CPU has them; the openblas build, in OpenBLAS's Dsyrk.
func syrk(s []float64, k, f int, c []float64) {
	blas64.Syrk(blas.Trans, 1, blas64.General{Rows: k, Cols: f, Stride: f, Data: s}, 1,
		blas64.Symmetric{Uplo: blas.Upper, N: f, Stride: f, Data: c})
}

// solveBlock solves rows [r0, r1) of s into out (see solveRows).
func solveBlock(s *sparseRows, o, oto []float64, p params, r0, r1 int, out []float64) error {
	f := p.factors
	a := make([]float64, f*f)
	var scaled []float64 // the rated rows of o, each times sqrt(alpha r)
	for r := r0; r < r1; r++ {
		cols, vals := s.row(r)
		copy(a, oto)
		for d := range f {
			a[d*f+d] += p.reg
		}
		b := out[r*f : (r+1)*f]
		if need := len(cols) * f; cap(scaled) < need {
			scaled = make([]float64, need)
		}
		scaled = scaled[:len(cols)*f]
		for j, c := range cols {
			oj := o[int(c)*f : (int(c)+1)*f]
			conf := p.alpha * vals[j]
			w := math.Sqrt(conf)
			dst := scaled[j*f : (j+1)*f]
			for d, v := range oj {
				dst[d] = w * v
				b[d] += (1 + conf) * v
			}
		}
		if len(cols) > 0 {
			syrk(scaled, len(cols), f, a)
		}
		t, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Upper, N: f, Stride: f, Data: a})
		if !ok {
			return fmt.Errorf("als: the normal equations of row %d are not positive definite (regularization %g)", s.first+r, p.reg)
		}
		cholSolve(t.Data, f, b)
	}
	return nil
}

// cholSolve solves UᵀU x = b in place for the upper triangular f x f
// factor u (row-major): Uᵀ y = b forward, then U x = y backward, both
// along contiguous rows of u. (lapack64.Potrs does the same through
// Dtrsm, which for one right-hand side costs ten times as much.)
func cholSolve(u []float64, f int, b []float64) {
	for i := range f {
		b[i] /= u[i*f+i]
		if yi := b[i]; yi != 0 {
			row := u[i*f+i+1 : (i+1)*f]
			rest := b[i+1 : f]
			for j, v := range row {
				rest[j] -= yi * v
			}
		}
	}
	for i := f - 1; i >= 0; i-- {
		sum := b[i]
		row := u[i*f+i+1 : (i+1)*f]
		for j, v := range row {
			sum -= v * b[i+1+j]
		}
		b[i] = sum / u[i*f+i]
	}
}

// loss returns the objective ALS minimises,
//
//	Σ_{u,i} c_ui (p_ui - x_u·y_i)² + reg (|X|² + |Y|²),  c_ui = 1 + alpha r_ui, p_ui = [r_ui ≠ 0],
//
// over every user-item pair, without forming the dense matrix:
// Σ_{u,i} (x_u·y_i)² = ⟨XᵀX, YᵀY⟩, and the rated pairs add
// 1 - 2 s + alpha r (1 - s)² with s = x_u·y_i. Each locality sums over its
// users' ratings; one AllReduce adds the parts.
func loss(ctx context.Context, comm *runtime.Communicator, r *ratings, x, y, xtx, yty []float64, p params) (float64, error) {
	f := p.factors
	part := 0.0
	s := &r.byUser
	for row := range s.rows() {
		cols, vals := s.row(row)
		xu := x[(s.first+row)*f : (s.first+row+1)*f]
		for j, c := range cols {
			sc := blas64.Dot(blas64.Vector{N: f, Inc: 1, Data: xu}, blas64.Vector{N: f, Inc: 1, Data: y[int(c)*f : (int(c)+1)*f]})
			part += 1 - 2*sc + p.alpha*vals[j]*(1-sc)*(1-sc)
		}
	}
	sum, err := comm.AllReduce(ctx, []float64{part}, runtime.ReduceSum).Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("als: summing the loss: %w", err)
	}
	// ⟨XᵀX, YᵀY⟩ from the upper triangles, and the traces |X|², |Y|².
	inner, trX, trY := 0.0, 0.0, 0.0
	for i := range f {
		inner += xtx[i*f+i] * yty[i*f+i]
		trX += xtx[i*f+i]
		trY += yty[i*f+i]
		for j := i + 1; j < f; j++ {
			inner += 2 * xtx[i*f+j] * yty[i*f+j]
		}
	}
	return inner + sum[0] + p.reg*(trX+trY), nil
}
