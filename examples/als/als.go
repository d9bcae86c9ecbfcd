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
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
)

// params are the parameters of the factorisation.
type params struct {
	factors    int
	iterations int
	reg        float64 // regularization
	alpha      float64 // confidence per unit of rating
	seed       uint64
	solver     solver // how each row's normal equations are solved
	cgSteps    int    // conjugate-gradient steps per row and half-step (solver cg)
	lossEvery  int    // the loss after every so many iterations and the last; 0: the last only
}

// solver names a way to solve the rows' normal equations.
type solver string

const (
	// solverCG takes cgSteps conjugate-gradient steps from the row's
	// factors of the previous iteration (see cgBlock).
	solverCG solver = "cg"
	// solverExact forms each row's matrix and factorises it (see
	// solveBlock): Listing 4's solve, done efficiently.
	solverExact solver = "exact"
)

// factorisation is the result: the whole factor matrices (users x factors
// and items x factors, row-major) as every locality holds them at the end,
// and the loss after each iteration.
type factorisation struct {
	x, y   primitives.Whole
	losses []float64 // by iteration; NaN where not computed (params.lossEvery)
}

// iteration reports one finished iteration to the program.
type iteration struct {
	k       int // 1-based
	seconds float64
	loss    float64 // NaN when not computed (params.lossEvery)
}

// als factorises the ratings r with implicit-feedback ALS (JetLag Listing
// 4): Y starts as random_d(items x factors, "row"); each iteration solves
// every user's factors against the whole Y on the locality that owns the
// user, all-gathers X, solves every item against the whole X and
// all-gathers Y. comm carries the loss's sum; report, if not nil, hears of
// every iteration.
func als(ctx context.Context, e *primitives.Env, comm *runtime.Communicator, r *ratings, p params, report func(iteration)) (*factorisation, error) {
	rows := primitives.Tiled(annotate.Row)
	random := primitives.Random(ctx, e, []int{r.items, p.factors}, rows, p.seed)
	y, err := primitives.AllGather(ctx, e, random).Get(ctx)
	if err != nil {
		return nil, err
	}
	if a, err := random.Get(ctx); err == nil {
		a.Release() // gathered: its tiles are read by no one any more
	}
	out := &factorisation{y: y}
	var x32, y32 []float32 // solver cg's float32 copies of X and Y
	for k := 1; k <= p.iterations; k++ {
		start := time.Now()
		yty := gram(y.Data, p.factors)
		xl, err := solveRows(ctx, e.Runtime(), &r.byUser, y.Data, yty, out.x.Data, &y32, p)
		if err != nil {
			return nil, err
		}
		x, err := gather(ctx, e, r.users, p.factors, xl)
		if err != nil {
			return nil, err
		}
		xtx := gram(x.Data, p.factors)
		yl, err := solveRows(ctx, e.Runtime(), &r.byItem, x.Data, xtx, y.Data, &x32, p)
		if err != nil {
			return nil, err
		}
		if y, err = gather(ctx, e, r.items, p.factors, yl); err != nil {
			return nil, err
		}
		l := math.NaN()
		if k == p.iterations || (p.lossEvery > 0 && k%p.lossEvery == 0) {
			if l, err = loss(ctx, e.Runtime(), comm, r, x.Data, y.Data, xtx, gram(y.Data, p.factors), p); err != nil {
				return nil, err
			}
		}
		out.x, out.y = x, y
		out.losses = append(out.losses, l)
		if report != nil {
			report(iteration{k: k, seconds: time.Since(start).Seconds(), loss: l})
		}
	}
	return out, nil
}

// gather makes this locality's solved rows the tile of a row-tiled array,
// all-gathers it (all_gather_d) and releases the array.
func gather(ctx context.Context, e *primitives.Env, n, f int, local []float64) (primitives.Whole, error) {
	a, err := primitives.NewArray(e, []int{n, f}, primitives.Tiled(annotate.Row), local)
	if err != nil {
		return primitives.Whole{}, err
	}
	w, err := primitives.AllGather(ctx, e, runtime.MakeReady(a)).Get(ctx)
	if err == nil {
		// The tile is read by no one any more: let it go now rather than
		// when the collector finds the handle unreachable, which keeps
		// an iteration's tiles alive into the next.
		a.Release()
	}
	return w, err
}

// gram returns WᵀW (f x f, upper triangle filled, lower undefined) of the
// row-major n x f matrix w.
func gram(w []float64, f int) []float64 {
	g := make([]float64, f*f)
	blas64.Syrk(blas.Trans, 1, blas64.General{Rows: len(w) / f, Cols: f, Stride: f, Data: w}, 0,
		blas64.Symmetric{Uplo: blas.Upper, N: f, Stride: f, Data: g})
	return g
}

// tasksPerLane is how many solve tasks a half-step makes per worker lane:
// enough that rows of very different lengths still even out over the
// lanes.
const tasksPerLane = 8

// cut splits the rows of s into runs of about equal work, the work of a
// row being its ratings plus f (the part every row pays), into about
// tasksPerLane runs per lane: the rows are solved as tasks, so one
// locality solves on all its lanes (cores) at once. The cut depends on
// the lanes, the result does not.
func cut(s *sparseRows, f, lanes int) [][2]int {
	total := s.nnz() + s.rows()*f
	target := max(total/(tasksPerLane*max(lanes, 1)), 1)
	var runs [][2]int
	r0, work := 0, 0
	for r := range s.rows() {
		work += s.ptr[r+1] - s.ptr[r] + f
		if work >= target {
			runs = append(runs, [2]int{r0, r + 1})
			r0, work = r+1, 0
		}
	}
	if r0 < s.rows() {
		runs = append(runs, [2]int{r0, s.rows()})
	}
	return runs
}

// solveRows solves, for every row of s (a user against the items, or an
// item against the users), the normal equations of implicit ALS against
// the whole other factor matrix o:
//
//	(OᵀO + reg I + Σ_j alpha r_j o_j o_jᵀ) x = Σ_j (1 + alpha r_j) o_j
//
// the sums running over the row's ratings only. This is Listing 4's
// (Oᵀ C O + OᵀO + reg I) x = Oᵀ (C + I) p with C = diag(alpha r): the
// diagonal is never formed, and p is zero off the rated entries. oto is
// OᵀO (upper triangle); prev, the whole factor matrix of the rows from the
// previous iteration (nil in the first), from which solver cg starts.
// buf32 keeps solver cg's float32 copy of o from one half-step to the
// next. A row without ratings gets zero factors, the exact solution. The rows
// are solved as tasks over all the locality's lanes (see cut).
func solveRows(ctx context.Context, rt *runtime.Runtime, s *sparseRows, o, oto, prev []float64, buf32 *[]float32, p params) ([]float64, error) {
	f := p.factors
	out := make([]float64, s.rows()*f)
	block := func(r0, r1 int) error { return solveBlock(s, o, oto, p, r0, r1, out) }
	if p.solver != solverExact {
		a32 := make([]float32, f*f)
		toFloat32(a32, fullGram(oto, f, p.reg))
		var start []float64
		if prev != nil {
			start = prev[s.first*f : (s.first+s.rows())*f]
		}
		o32 := mirror32(buf32, o)
		block = func(r0, r1 int) error { cgBlock(s, o32, a32, start, p, r0, r1, out); return nil }
	}
	var tasks []*runtime.Future[struct{}]
	for _, run := range cut(s, f, rt.Counters().Lanes) {
		tasks = append(tasks, runtime.SpawnNamed(ctx, rt, "als.solve", func(ctx context.Context) (struct{}, error) {
			return struct{}{}, block(run[0], run[1])
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
			if k := j + prefetchAhead; k < len(cols) {
				prefetchRow64(o[int(cols[k])*f:], f)
			}
			oj := o[int(c)*f : (int(c)+1)*f]
			conf := p.alpha * float64(vals[j])
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

// lossRows is how many users one task of loss sums over.
const lossRows = 512

// loss returns the objective ALS minimises,
//
//	Σ_{u,i} c_ui (p_ui - x_u·y_i)² + reg (|X|² + |Y|²),  c_ui = 1 + alpha r_ui, p_ui = [r_ui ≠ 0],
//
// over every user-item pair, without forming the dense matrix:
// Σ_{u,i} (x_u·y_i)² = ⟨XᵀX, YᵀY⟩, and the rated pairs add
// 1 - 2 s + alpha r (1 - s)² with s = x_u·y_i. Each locality sums over its
// users' ratings, in tasks of lossRows users over its lanes whose parts
// add up in row order; one AllReduce adds the localities' parts.
func loss(ctx context.Context, rt *runtime.Runtime, comm *runtime.Communicator, r *ratings, x, y, xtx, yty []float64, p params) (float64, error) {
	f := p.factors
	s := &r.byUser
	var runs [][2]int // fixed blocks, so that the sum does not depend on the lanes
	for r0 := 0; r0 < s.rows(); r0 += lossRows {
		runs = append(runs, [2]int{r0, min(r0+lossRows, s.rows())})
	}
	parts := make([]float64, len(runs))
	var tasks []*runtime.Future[struct{}]
	for k, run := range runs {
		tasks = append(tasks, runtime.SpawnNamed(ctx, rt, "als.loss", func(ctx context.Context) (struct{}, error) {
			part := 0.0
			for row := run[0]; row < run[1]; row++ {
				cols, vals := s.row(row)
				xu := x[(s.first+row)*f : (s.first+row+1)*f]
				for j, c := range cols {
					sc := floats.Dot(xu, y[int(c)*f:(int(c)+1)*f])
					part += 1 - 2*sc + p.alpha*float64(vals[j])*(1-sc)*(1-sc)
				}
			}
			parts[k] = part
			return struct{}{}, nil
		}))
	}
	if _, err := runtime.WhenAll(tasks...).Get(ctx); err != nil {
		return 0, err
	}
	part := 0.0
	for _, v := range parts {
		part += v
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
