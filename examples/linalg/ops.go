package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// runner runs the factorisations of one job.
type runner struct {
	e         *primitives.Env
	o         options
	out       io.Writer
	clock     *runtime.Communicator
	residuals map[string]float64
	op        string // the factorisation running, which names its CPU profile
}

// uniform is a reproducible value in [-1, 1) for (seed, i, j).
func uniform(seed uint64, i, j int) float64 {
	z := seed*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9 + uint64(j)*0x94d049bb133111eb
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11)/(1<<52) - 1
}

// generate makes a row-tiled matrix of the given shape whose element
// (i, j) is at(i, j); each locality computes its own rows only.
func (r *runner) generate(shape []int, at func(i, j int) float64) (*primitives.Array, error) {
	t, err := annotate.New(annotate.Row, shape, r.e.Size())
	if err != nil {
		return nil, err
	}
	b := t.Tiles[r.e.Locality()].Owned
	data := make([]float64, 0, b.Size())
	for i := b[0].Start; i < b[0].Stop; i++ {
		for j := b[1].Start; j < b[1].Stop; j++ {
			data = append(data, at(i, j))
		}
	}
	return primitives.NewArray(r.e, shape, primitives.Layout{Tiling: &t}, data)
}

// timed runs fn between two barriers of every locality and returns the
// seconds it took, the slowest locality's.
func (r *runner) timed(ctx context.Context, fn func() error) (float64, error) {
	if _, err := r.clock.Barrier(ctx).Get(ctx); err != nil {
		return 0, err
	}
	if r.o.cpuProfile != "" {
		stop, err := profileCPU(fmt.Sprintf("%s.%s.%d", r.o.cpuProfile, r.op, r.e.Locality()))
		if err != nil {
			return 0, fmt.Errorf("locality %d: %w", r.e.Locality(), err)
		}
		defer stop()
	}
	start, before := time.Now(), readUsage()
	if err := fn(); err != nil {
		return 0, err
	}
	if _, err := r.clock.Barrier(ctx).Get(ctx); err != nil {
		return 0, err
	}
	secs := time.Since(start).Seconds()
	if r.o.usage {
		fmt.Fprintf(r.out, "linalg: %s on locality %d: %v\n", r.op, r.e.Locality(), readUsage().minus(before))
	}
	return secs, nil
}

// report prints a result as a sentence and as a Go benchmark line.
func (r *runner) report(name, params, what string, secs, flops float64) {
	if r.e.Locality() != 0 {
		return
	}
	g := flops / secs / 1e9
	fmt.Fprintf(r.out, "linalg: %s: %.4f s, %.2f GFLOP/s\n", what, secs, g)
	fmt.Fprintf(r.out, "Benchmark%s/%s/localities=%d 1 %.6f s/op %.3f GFLOP/s\n", name, params, r.e.Size(), secs, g)
}

// residual records and prints a residual measured on locality 0, and
// fails when it is above the tolerance.
func (r *runner) residual(key, what string, v, tol float64) error {
	r.residuals[key] = v
	fmt.Fprintf(r.out, "linalg: %s = %.3g\n", what, v)
	if !(v <= tol) {
		return fmt.Errorf("%s = %.3g, more than %g", what, v, tol)
	}
	return nil
}

// whole gathers a on every locality, through a row tiling when it has
// another, as a gonum matrix.
func (r *runner) whole(ctx context.Context, a *primitives.Array) (*mat.Dense, error) {
	f := runtime.MakeReady(a)
	if a.Annotation().Tiling.Cyclic != nil {
		f = primitives.Retile(ctx, r.e, f, primitives.Tiled(annotate.Row))
	}
	w, err := primitives.AllGather(ctx, r.e, f).Get(ctx)
	if err != nil {
		return nil, err
	}
	return w.Dense()
}

func relDiff(a, b mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(a, b)
	return mat.Norm(&d, 2) / mat.Norm(a, 2)
}

// columnGrid is the grid of lu and qr: 1 x p, or cholesky's with --grid2d.
func (r *runner) columnGrid() (int, int, error) {
	if r.o.grid2D {
		return grid(r.o, r.e.Size())
	}
	return 1, r.e.Size(), nil
}

func (r *runner) cholesky(ctx context.Context) error {
	e, n := r.e, r.o.n
	p, q, err := grid(r.o, e.Size())
	if err != nil {
		return err
	}
	l, err := primitives.BlockCyclic([]int{n, n}, r.o.nb, p, q)
	if err != nil {
		return err
	}
	// Symmetric, diagonally dominant: positive definite.
	spd := func(i, j int) float64 {
		if i == j {
			return float64(n)
		}
		return uniform(r.o.seed, min(i, j), max(i, j))
	}
	a0, err := r.generate([]int{n, n}, spd)
	if err != nil {
		return err
	}
	a, err := primitives.Retile(ctx, e, runtime.MakeReady(a0), l).Get(ctx)
	if err != nil {
		return err
	}
	var lf *primitives.Array
	secs, err := r.timed(ctx, func() error {
		// Factored in its own memory, as dpotrf and pdpotrf do: the
		// check reads a0.
		lf, err = primitives.Cholesky(ctx, e, primitives.Donate(runtime.MakeReady(a))).Get(ctx)
		return err
	})
	if err != nil {
		return err
	}
	flops := math.Pow(float64(n), 3) / 3
	r.report("Cholesky", fmt.Sprintf("n=%d/nb=%d", n, r.o.nb), fmt.Sprintf("Cholesky of %dx%d, %dx%d blocks on a %dx%d grid", n, n, r.o.nb, r.o.nb, p, q), secs, flops)
	var A *mat.Dense
	if r.o.check || r.o.baseline {
		if A, err = r.whole(ctx, a0); err != nil {
			return err
		}
	}
	if r.o.check {
		L, err := r.whole(ctx, lf)
		if err != nil {
			return err
		}
		if e.Locality() == 0 {
			var llt mat.Dense
			llt.Mul(L, L.T())
			if err := r.residual("cholesky", "‖A − LLᵀ‖/‖A‖", relDiff(A, &llt), 10*float64(n)*0x1p-52); err != nil {
				return err
			}
		}
	}
	if r.o.baseline && e.Locality() == 0 {
		raw := mat.DenseCopyOf(A).RawMatrix()
		start := time.Now()
		if _, ok := lapack64.Potrf(blas64.Symmetric{Uplo: blas.Lower, N: n, Stride: raw.Stride, Data: raw.Data}); !ok {
			return fmt.Errorf("one-process dpotrf: not positive definite")
		}
		s := time.Since(start).Seconds()
		fmt.Fprintf(r.out, "BenchmarkDpotrf/n=%d 1 %.6f s/op %.3f GFLOP/s\n", n, s, flops/s/1e9)
	}
	return nil
}

func (r *runner) lu(ctx context.Context) error {
	e, n := r.e, r.o.n
	p, q, err := r.columnGrid()
	if err != nil {
		return err
	}
	l, err := primitives.BlockCyclic([]int{n, n}, r.o.nb, p, q)
	if err != nil {
		return err
	}
	a0, err := r.generate([]int{n, n}, func(i, j int) float64 { return uniform(r.o.seed+1, i, j) })
	if err != nil {
		return err
	}
	a, err := primitives.Retile(ctx, e, runtime.MakeReady(a0), l).Get(ctx)
	if err != nil {
		return err
	}
	var f primitives.LUFactors
	secs, err := r.timed(ctx, func() error {
		f, err = primitives.LU(ctx, e, primitives.Donate(runtime.MakeReady(a))).Get(ctx)
		return err
	})
	if err != nil {
		return err
	}
	flops := 2 * math.Pow(float64(n), 3) / 3
	r.report("LU", fmt.Sprintf("n=%d/nb=%d", n, r.o.nb), fmt.Sprintf("LU of %dx%d, %dx%d blocks on a %dx%d grid", n, n, r.o.nb, r.o.nb, p, q), secs, flops)
	var A *mat.Dense
	if r.o.check || r.o.baseline {
		if A, err = r.whole(ctx, a0); err != nil {
			return err
		}
	}
	if r.o.check {
		lu, err := r.whole(ctx, f.LU)
		if err != nil {
			return err
		}
		if e.Locality() == 0 {
			L, U := mat.NewDense(n, n, nil), mat.NewDense(n, n, nil)
			for i := range n {
				for j := range n {
					switch {
					case i > j:
						L.Set(i, j, lu.At(i, j))
					case i == j:
						L.Set(i, j, 1)
						U.Set(i, j, lu.At(i, j))
					default:
						U.Set(i, j, lu.At(i, j))
					}
				}
			}
			pa := mat.DenseCopyOf(A)
			for i, s := range f.Pivots {
				ri, rs := mat.Row(nil, i, pa), mat.Row(nil, s, pa)
				pa.SetRow(i, rs)
				pa.SetRow(s, ri)
			}
			var prod mat.Dense
			prod.Mul(L, U)
			if err := r.residual("lu", "‖PA − LU‖/‖A‖", relDiff(pa, &prod), 10*float64(n)*0x1p-52); err != nil {
				return err
			}
		}
	}
	if r.o.baseline && e.Locality() == 0 {
		raw := mat.DenseCopyOf(A).RawMatrix()
		start := time.Now()
		lapack64.Getrf(raw, make([]int, n))
		s := time.Since(start).Seconds()
		fmt.Fprintf(r.out, "BenchmarkDgetrf/n=%d 1 %.6f s/op %.3f GFLOP/s\n", n, s, flops/s/1e9)
	}
	return nil
}

func (r *runner) qr(ctx context.Context) error {
	e, n := r.e, r.o.n
	p, q, err := r.columnGrid()
	if err != nil {
		return err
	}
	l, err := primitives.BlockCyclic([]int{n, n}, r.o.nb, p, q)
	if err != nil {
		return err
	}
	a0, err := r.generate([]int{n, n}, func(i, j int) float64 { return uniform(r.o.seed+4, i, j) })
	if err != nil {
		return err
	}
	a, err := primitives.Retile(ctx, e, runtime.MakeReady(a0), l).Get(ctx)
	if err != nil {
		return err
	}
	var f primitives.QRResult
	secs, err := r.timed(ctx, func() error {
		f, err = primitives.QR(ctx, e, runtime.MakeReady(a), true).Get(ctx)
		return err
	})
	if err != nil {
		return err
	}
	// geqrf and forming Q, each 4n³/3.
	flops := 8 * math.Pow(float64(n), 3) / 3
	r.report("QR", fmt.Sprintf("n=%d/nb=%d", n, r.o.nb), fmt.Sprintf("tiled QR of %dx%d with explicit Q, %dx%d blocks on a %dx%d grid", n, n, r.o.nb, r.o.nb, p, q), secs, flops)
	if !r.o.check {
		return nil
	}
	A, err := r.whole(ctx, a0)
	if err != nil {
		return err
	}
	QR, err := r.whole(ctx, f.QR)
	if err != nil {
		return err
	}
	Q, err := r.whole(ctx, f.Q)
	if err != nil {
		return err
	}
	if e.Locality() != 0 {
		return nil
	}
	R := mat.NewDense(n, n, nil)
	for i := range n {
		for j := i; j < n; j++ {
			R.Set(i, j, QR.At(i, j))
		}
	}
	var prod, qtq mat.Dense
	prod.Mul(Q, R)
	if err := r.residual("qr", "‖A − QR‖/‖A‖", relDiff(A, &prod), 10*float64(n)*0x1p-52); err != nil {
		return err
	}
	qtq.Mul(Q.T(), Q)
	for i := range n {
		qtq.Set(i, i, qtq.At(i, i)-1)
	}
	return r.residual("qr-orthogonality", "‖QᵀQ − I‖ (tiled QR)", mat.Norm(&qtq, 2), 10*float64(n)*0x1p-52)
}

func (r *runner) tsqr(ctx context.Context) error {
	e, m, c := r.e, r.o.m, r.o.cols
	a, err := r.generate([]int{m, c}, func(i, j int) float64 { return uniform(r.o.seed+2, i, j) })
	if err != nil {
		return err
	}
	var f primitives.QRFactors
	secs, err := r.timed(ctx, func() error {
		f, err = primitives.TSQR(ctx, e, runtime.MakeReady(a), r.o.formQ).Get(ctx)
		return err
	})
	if err != nil {
		return err
	}
	// geqrf and forming Q, each 2mc² − 2c³/3.
	fm, fc := float64(m), float64(c)
	geqrf := 2*fm*fc*fc - 2*fc*fc*fc/3
	if !r.o.formQ {
		r.report("TSQR", fmt.Sprintf("m=%d/cols=%d/q=false", m, c), fmt.Sprintf("TSQR of %dx%d, R only", m, c), secs, geqrf)
		return nil
	}
	flops := 2 * geqrf
	r.report("TSQR", fmt.Sprintf("m=%d/cols=%d", m, c), fmt.Sprintf("TSQR of %dx%d with explicit Q", m, c), secs, flops)
	if !r.o.check && !r.o.baseline {
		return nil
	}
	A, err := r.whole(ctx, a)
	if err != nil {
		return err
	}
	if r.o.check {
		Q, err := r.whole(ctx, f.Q)
		if err != nil {
			return err
		}
		if e.Locality() == 0 {
			var qr, qtq mat.Dense
			qr.Mul(Q, f.R)
			if err := r.residual("tsqr", "‖A − QR‖/‖A‖", relDiff(A, &qr), 10*fm*0x1p-52); err != nil {
				return err
			}
			qtq.Mul(Q.T(), Q)
			for i := range c {
				qtq.Set(i, i, qtq.At(i, i)-1)
			}
			if err := r.residual("orthogonality", "‖QᵀQ − I‖", mat.Norm(&qtq, 2), 10*fm*0x1p-52); err != nil {
				return err
			}
		}
	}
	if r.o.baseline && e.Locality() == 0 {
		var qr mat.QR
		start := time.Now()
		qr.Factorize(A)
		s := time.Since(start).Seconds()
		fmt.Fprintf(r.out, "BenchmarkDgeqrf/m=%d/cols=%d 1 %.6f s/op %.3f GFLOP/s\n", m, c, s, flops/2/s/1e9)
	}
	return nil
}
