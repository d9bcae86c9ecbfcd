// Command cannon multiplies two random n x n matrices with
// cannon_product_d: Cannon's algorithm on a square number of localities
// (q x q tiles, sym tiling; inputs tiled otherwise are retiled first), SUMMA
// on any other. Each locality generates its
// own tiles of A and B (random_d: the same matrices on any number of
// localities), the product stays distributed, and the program prints the
// time and GFLOP/s (2n³ floating-point operations over the time of the
// product alone, from a barrier before it to a barrier after every
// locality has its tile of C). With --repeat K it multiplies K times in
// the same job and reports the best; the RESULT line also lists every
// product's time (times=t1,t2,...). With --check, locality 0 gathers A, B
// and C and compares C with one gonum product of the whole matrices (the
// largest relative difference is printed; above 1e-12 the program fails).
//
//	tessera run -n 4 cannon -n 2048
//	tessera run -n 3 cannon -n 500 --check   # SUMMA on a 3 x 1 grid
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

type options struct {
	n         int
	repeat    int
	seed      uint64
	check     bool
	tiling    string
	tolerance float64
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("cannon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.n, "n", 1024, "matrix order")
	fs.IntVar(&o.repeat, "repeat", 1, "products timed in this job (the best is reported, every one listed)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of A (B uses seed+1)")
	fs.BoolVar(&o.check, "check", false, "compare with a single-process product on locality 0")
	fs.StringVar(&o.tiling, "tiling", "sym", "tiling of A and B: sym, row or column")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o.tolerance = 1e-12
	switch {
	case fs.NArg() > 0:
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.n < 1:
		return options{}, fmt.Errorf("-n %d: want a positive matrix order", o.n)
	case o.repeat < 1:
		return options{}, fmt.Errorf("--repeat %d: want at least 1", o.repeat)
	case o.tiling != "sym" && o.tiling != "row" && o.tiling != "column":
		return options{}, fmt.Errorf("--tiling %q: want sym, row or column", o.tiling)
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0) // -help printed the flags, as asked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannon:", err)
		os.Exit(2)
	}
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := primitives.NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		_, err = run(ctx, e, o, os.Stdout)
		return err
	}))
}

// run multiplies and reports on locality 0; it returns the largest
// relative difference from the reference when checking (else 0).
func run(ctx context.Context, e *primitives.Env, o options, stdout io.Writer) (float64, error) {
	kind := map[string]annotate.Kind{"sym": annotate.Sym, "row": annotate.Row, "column": annotate.Column}[o.tiling]
	l := primitives.Tiled(kind)
	a := primitives.Random(ctx, e, []int{o.n, o.n}, l, o.seed)
	b := primitives.Random(ctx, e, []int{o.n, o.n}, l, o.seed+1)
	square := false
	if q := int(math.Sqrt(float64(e.Size()))); q*q == e.Size() {
		square = true
	}
	if square && kind != annotate.Sym {
		// Cannon wants a q x q grid: retile_d moves only the blocks
		// that change hands.
		a = primitives.Retile(ctx, e, a, primitives.Tiled(annotate.Sym))
		b = primitives.Retile(ctx, e, b, primitives.Tiled(annotate.Sym))
	}
	if err := runtime.WhenAll(a, b).Err(ctx); err != nil {
		return 0, err
	}
	// The clock's barriers: every locality starts together, and the
	// product is done when every locality's tile is.
	clock, err := runtime.NewCommunicator(e.Runtime(), "cannon/clock", nil, 0)
	if err != nil {
		return 0, err
	}
	defer clock.Close()
	best := math.Inf(1)
	times := make([]string, 0, o.repeat)
	var c *primitives.Array
	for r := range o.repeat {
		if _, err := clock.Barrier(ctx).Get(ctx); err != nil {
			return 0, err
		}
		start := time.Now()
		if c, err = primitives.CannonProduct(ctx, e, a, b).Get(ctx); err != nil {
			return 0, err
		}
		if _, err := clock.Barrier(ctx).Get(ctx); err != nil {
			return 0, err
		}
		s := time.Since(start).Seconds()
		best = min(best, s)
		times = append(times, strconv.FormatFloat(s, 'f', 6, 64))
		if r+1 < o.repeat {
			c.Release() // the next product's replaces it
		}
	}
	algorithm := "SUMMA"
	if square {
		algorithm = "Cannon"
	}
	gflops := 2 * math.Pow(float64(o.n), 3) / best / 1e9
	if e.Locality() == 0 {
		fmt.Fprintf(stdout, "cannon: %d x %d product, %s on %d localities (%s tiling, BLAS %s): %.4f s (best of %d), %.2f GFLOP/s\n",
			o.n, o.n, algorithm, e.Size(), o.tiling, primitives.BLAS(), best, o.repeat, gflops)
		fmt.Fprintf(stdout, "RESULT name=cannon n=%d localities=%d seconds=%.6f gflops=%.3f times=%s\n", o.n, e.Size(), best, gflops, strings.Join(times, ","))
		if c := e.Runtime().Counters(); c.BytesLent > 0 {
			fmt.Fprintf(stdout, "cannon: locality 0 lent %.1f MiB of tiles to localities on its machine without a copy\n", float64(c.BytesLent)/(1<<20))
		}
	}
	if !o.check {
		return 0, nil
	}
	wa := primitives.AllGather(ctx, e, a)
	wb := primitives.AllGather(ctx, e, b)
	wc := primitives.AllGather(ctx, e, runtime.MakeReady(c))
	if err := runtime.WhenAll(wa, wb, wc).Err(ctx); err != nil {
		return 0, err
	}
	if e.Locality() != 0 {
		return 0, nil
	}
	av, _ := wa.Get(ctx)
	bv, _ := wb.Get(ctx)
	cv, _ := wc.Get(ctx)
	ref := make([]float64, o.n*o.n)
	g := func(d []float64) blas64.General { return blas64.General{Rows: o.n, Cols: o.n, Stride: o.n, Data: d} }
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, g(av.Data), g(bv.Data), 0, g(ref))
	worst := 0.0
	for i, v := range ref {
		worst = max(worst, math.Abs(cv.Data[i]-v)/math.Max(1, math.Abs(v)))
	}
	fmt.Fprintf(stdout, "cannon: checked against one gonum product of the whole matrices: largest relative difference %.3g\n", worst)
	if worst > o.tolerance {
		return worst, fmt.Errorf("cannon: the product differs from the reference by %.3g (relative), more than %g", worst, o.tolerance)
	}
	return worst, nil
}
