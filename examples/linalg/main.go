// Command linalg runs Tessera's distributed dense linear algebra on
// generated matrices and prints, for each factorisation, its time, its
// GFLOP/s and (with --check, the default) its residuals computed on
// locality 0 from the gathered factors:
//
//   - cholesky: A = L·Lᵀ of a symmetric diagonally dominant n x n matrix
//     on a p x q block-cyclic grid (near-square by default),
//     ‖A − LLᵀ‖/‖A‖;
//   - lu: P·A = L·U of a random n x n matrix on a 1 x p grid (--grid2d:
//     cholesky's),
//     ‖PA − LU‖/‖A‖;
//   - qr: A = Q·R of a random n x n matrix by tiled Householder QR on a
//     1 x p grid (--grid2d: cholesky's), ‖A − QR‖/‖A‖ and ‖QᵀQ − I‖;
//   - tsqr: A = Q·R of a random tall-skinny m x c matrix, row-tiled,
//     ‖A − QR‖/‖A‖ and ‖QᵀQ − I‖;
//   - svd: the leading --rank singular values of an m x c matrix of
//     decaying spectrum by the randomized range finder, their largest
//     relative difference from gonum's SVD of the whole matrix.
//
// Each result is also printed as a Go benchmark line
// (BenchmarkCholesky/n=4096/localities=4 1 2.5 s/op 9.1 GFLOP/s). With
// --baseline, locality 0 also times one-process LAPACK (dpotrf, dgetrf,
// dgeqrf of the whole matrix, with the BLAS of the build) on the same
// input, printed as BenchmarkDpotrf and so on.
//
//	tessera run -n 4 linalg -n 2048 --nb 256
//	tessera run -n 4 linalg --ops cholesky -n 4096 --check=false --baseline
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

type options struct {
	n, nb      int
	grid       string
	m, cols    int
	rank       int
	power      int
	ops        []string
	seed       uint64
	check      bool
	baseline   bool
	gridP      int
	gridQ      int
	grid2D     bool
	oversample int
	formQ      bool
	cpuProfile string
	usage      bool
}

var allOps = []string{"cholesky", "lu", "qr", "tsqr", "svd"}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("linalg", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var ops string
	fs.IntVar(&o.n, "n", 1024, "order of the square matrices (cholesky, lu, qr)")
	fs.IntVar(&o.nb, "nb", 256, "block size of the block-cyclic layout (256: the fastest Cholesky measured at n = 8192 and 16384 on 4 localities)")
	fs.StringVar(&o.grid, "grid", "", "process grid PxQ of cholesky (default near-square)")
	fs.BoolVar(&o.grid2D, "grid2d", false, "lu and qr on cholesky's grid too (default: a 1xP grid, every block column on one locality)")
	fs.IntVar(&o.m, "m", 20000, "rows of the tall-skinny matrices (tsqr, svd)")
	fs.IntVar(&o.cols, "cols", 64, "columns of the tall-skinny matrices (tsqr, svd)")
	fs.IntVar(&o.rank, "rank", 10, "singular values the truncated SVD finds")
	fs.IntVar(&o.power, "power", 2, "power iterations of the truncated SVD")
	fs.IntVar(&o.oversample, "oversample", 10, "oversampling of the truncated SVD's sketch")
	fs.StringVar(&ops, "ops", strings.Join(allOps, ","), "factorisations to run, comma-separated: "+strings.Join(allOps, ", "))
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the generated matrices")
	fs.BoolVar(&o.formQ, "tsqr-q", true, "tsqr forms Q explicitly (false: R and the implicit Q only; no residuals)")
	fs.BoolVar(&o.check, "check", true, "gather the factors on locality 0 and print the residuals")
	fs.BoolVar(&o.baseline, "baseline", false, "also time one-process LAPACK on locality 0")
	fs.BoolVar(&o.usage, "usage", false, "each locality prints its CPU time, page faults and context switches during each timed factorisation")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write each locality's CPU profile of each timed factorisation to this path with \".<op>.<locality>\" appended")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, op := range strings.Split(ops, ",") {
		op = strings.TrimSpace(op)
		if !contains(allOps, op) {
			return options{}, fmt.Errorf("--ops: unknown factorisation %q (want %s)", op, strings.Join(allOps, ", "))
		}
		o.ops = append(o.ops, op)
	}
	switch {
	case o.n < 1:
		return options{}, fmt.Errorf("-n %d: want a positive order", o.n)
	case o.nb < 1:
		return options{}, fmt.Errorf("--nb %d: want a positive block size", o.nb)
	case o.m < 1 || o.cols < 1 || o.m < o.cols:
		return options{}, fmt.Errorf("-m %d --cols %d: want a tall-skinny shape, m >= cols >= 1", o.m, o.cols)
	case o.rank < 1 || o.rank > o.cols:
		return options{}, fmt.Errorf("--rank %d: want one in [1, %d]", o.rank, o.cols)
	case o.power < 0 || o.oversample < 0:
		return options{}, fmt.Errorf("--power %d --oversample %d: want non-negative values", o.power, o.oversample)
	}
	if o.grid != "" {
		if _, err := fmt.Sscanf(o.grid, "%dx%d", &o.gridP, &o.gridQ); err != nil || o.gridP < 1 || o.gridQ < 1 {
			return options{}, fmt.Errorf("--grid %q: want PxQ, such as 2x2", o.grid)
		}
	}
	return o, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0) // -help printed the flags, as asked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "linalg:", err)
		os.Exit(2)
	}
	os.Exit(primitives.Main(runtime.Config{}, func(ctx context.Context, e *primitives.Env) error {
		_, err := run(ctx, e, o, os.Stdout)
		return err
	}))
}

// grid returns the p x q grid of the Cholesky: the one asked for, or the
// most nearly square with p <= q.
func grid(o options, size int) (int, int, error) {
	if o.gridP > 0 {
		if o.gridP*o.gridQ != size {
			return 0, 0, fmt.Errorf("--grid %dx%d has %d processes, the job %d localities", o.gridP, o.gridQ, o.gridP*o.gridQ, size)
		}
		return o.gridP, o.gridQ, nil
	}
	p := 1
	for d := 1; d*d <= size; d++ {
		if size%d == 0 {
			p = d
		}
	}
	return p, size / p, nil
}

// run runs every factorisation asked for and returns the residuals it
// measured (on locality 0, with --check), by name.
func run(ctx context.Context, e *primitives.Env, o options, stdout io.Writer) (map[string]float64, error) {
	clock, err := runtime.NewCommunicator(e.Runtime(), "linalg/clock", nil, 0)
	if err != nil {
		return nil, err
	}
	defer clock.Close()
	r := &runner{e: e, o: o, out: stdout, clock: clock, residuals: map[string]float64{}}
	if e.Locality() == 0 {
		fmt.Fprintf(stdout, "linalg: %d localities, BLAS %s\n", e.Size(), primitives.BLAS())
	}
	for _, op := range o.ops {
		var err error
		r.op = op
		switch op {
		case "cholesky":
			err = r.cholesky(ctx)
		case "lu":
			err = r.lu(ctx)
		case "qr":
			err = r.qr(ctx)
		case "tsqr":
			err = r.tsqr(ctx)
		case "svd":
			err = r.svd(ctx)
		}
		if err != nil {
			return r.residuals, fmt.Errorf("linalg: %s: %w", op, err)
		}
	}
	return r.residuals, nil
}

// profileCPU starts a CPU profile written to path; stop ends it.
func profileCPU(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
