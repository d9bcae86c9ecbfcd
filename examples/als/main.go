// Command als is distributed implicit-feedback ALS (Hu, Koren and Volinsky)
// on Tessera: the program of JetLag's Listing 4, written against the public
// API. Every locality owns a row block of the users and of the items
// (row tiling); Y starts as random_d(items x factors, "row"); each
// iteration solves every user's factors against the whole Y, all_gather_d's
// X, solves every item against the whole X and all_gather_d's Y.
//
// The solves are efficient, not literal: Listing 4 forms diag(conf_u), an
// items x items matrix, for every user. Here each user's system
//
//	(YᵀY + reg I + Yᵀ (C_u - I) Y) x_u = Yᵀ C_u p_u,   C_u = I + alpha diag(r_u)
//
// is built from the user's rated items alone. Two solvers (--solver):
//
//   - cg (the default): a few conjugate-gradient steps per row
//     (--cg-steps, 3), started from the row's factors of the previous
//     iteration, the matrix applied without being formed: O(n f + f²) per
//     step for a row of n ratings, over float32 copies of the row's rated
//     factor rows (see cg.go). At 64 factors 3 steps leave the loss after
//     15 iterations about 1% above the exact solver's, 4 steps about 0.2%;
//     GOGC is 25 unless the environment sets it (see gcPercent);
//   - exact: YᵀY + reg I is computed once per half-step, Yᵀ (C_u - I) Y is
//     a rank-k update (Syrk) with the k rated rows of Y scaled by
//     sqrt(alpha r_ui), the right-hand side sums (1 + alpha r_ui) y_i over
//     the same rows, and the system is solved by Cholesky: O(n f² + f³).
//
// The rows are solved as tasks over all of a locality's lanes.
//
// The loss printed after each iteration is the objective ALS minimises,
// Σ over every (u, i) of c_ui (p_ui - x_u·y_i)² + reg (|X|² + |Y|²), computed
// without the dense matrix (see loss).
//
// Input: a MovieLens ratings file, ml-20m/ml-25m's ratings.csv
// (userId,movieId,rating[,timestamp] with a header line) or ml-1m/ml-10m's
// ratings.dat (UserID::MovieID::Rating::Timestamp), told apart by the
// first line; ids may be sparse and unsorted and are mapped to dense
// indices in ascending order without gathering them in one place (see
// mapIDs). Each locality parses its own byte range of the file; or
// --synthetic USERS,ITEMS,DENSITY, a seeded generator with
// long-tailed item popularity, each locality generating its own users.
// Either way the ratings then go to the localities that own their user
// and their item. Output: X.csv and Y.csv (id followed by the factors,
// full precision) in --output, written by locality 0.
//
//	tessera run -n 4 examples/als --synthetic 4800,4800,0.01 --iterations 5
//	tessera run -n 2 examples/als --ratings ratings.csv --output out
//	als --synthetic 2000,1500,0.02 --make-ratings ratings.csv   # write a dataset
//
// The results do not depend on the number of localities: each user's and
// item's solve sees the same data in the same order on any job size.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/progress"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"golang.org/x/term"
)

// gcPercent is the collector's GOGC unless the environment sets one. An
// iteration's garbage is a few large pointer-free arrays (the solved and
// the gathered factors), which the collector frees at little cost, while
// at Go's default of 100 the heap grows to twice the live data before a
// collection: at MovieLens-20M's scale that is most of the peak RSS.
const gcPercent = 25

// options are the command line.
type options struct {
	ratings     string
	synthetic   synthetic
	makeRatings string
	output      string
	quiet       bool
	memoryEvery int             // print each locality's peak RSS and live arrays every so many iterations; 0 never
	progress    progress.Config // where locality 0 shows the progress of long phases
	params
}

// parseOptions parses the command line (without the program name).
func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("als", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var syn string
	var seed uint64
	var solverName string
	fs.StringVar(&o.ratings, "ratings", "", "MovieLens ratings `file` (userId,movieId,rating,timestamp)")
	fs.StringVar(&syn, "synthetic", "", "generate `USERS,ITEMS,DENSITY` ratings instead of reading a file")
	fs.StringVar(&o.makeRatings, "make-ratings", "", "with --synthetic: write the ratings to `file` in MovieLens format and exit")
	fs.IntVar(&o.factors, "factors", 40, "number of latent factors")
	fs.IntVar(&o.iterations, "iterations", 5, "ALS iterations")
	fs.Float64Var(&o.reg, "regularization", 0.1, "regularization weight")
	fs.Float64Var(&o.alpha, "alpha", 40, "confidence per unit of rating")
	fs.StringVar(&solverName, "solver", string(solverCG), "how each row's equations are solved: `cg` (conjugate gradient, warm-started) or exact (Cholesky)")
	fs.IntVar(&o.cgSteps, "cg-steps", 3, "conjugate-gradient steps per row and half-step (--solver cg)")
	fs.Uint64Var(&seed, "seed", 1, "seed of the initial factors and the synthetic ratings")
	fs.StringVar(&o.output, "output", "", "`directory` for X.csv and Y.csv (none: not written)")
	fs.BoolVar(&o.quiet, "quiet", false, "show no progress of the input's generation, writing or reading")
	fs.IntVar(&o.lossEvery, "loss-every", 1, "compute the loss every `K` iterations and after the last (0: after the last only)")
	fs.IntVar(&o.memoryEvery, "memory-every", 0, "every `K` iterations (and after the last), each locality prints its peak RSS and live arrays (0: never)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	o.seed = seed
	o.solver = solver(solverName)
	switch {
	case fs.NArg() > 0:
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case (o.ratings == "") == (syn == ""):
		return options{}, errors.New("give exactly one of --ratings FILE and --synthetic USERS,ITEMS,DENSITY")
	case o.makeRatings != "" && syn == "":
		return options{}, errors.New("--make-ratings needs --synthetic")
	case o.factors < 1:
		return options{}, fmt.Errorf("--factors %d: want at least 1", o.factors)
	case o.iterations < 1:
		return options{}, fmt.Errorf("--iterations %d: want at least 1", o.iterations)
	case !(o.reg > 0):
		return options{}, fmt.Errorf("--regularization %g: want a positive number", o.reg)
	case !(o.alpha >= 0):
		return options{}, fmt.Errorf("--alpha %g: want a number >= 0", o.alpha)
	case o.solver != solverCG && o.solver != solverExact:
		return options{}, fmt.Errorf("--solver %q: want cg or exact", solverName)
	case o.cgSteps < 1:
		return options{}, fmt.Errorf("--cg-steps %d: want at least 1", o.cgSteps)
	case o.lossEvery < 0:
		return options{}, fmt.Errorf("--loss-every %d: want 0 (the last iteration only) or more", o.lossEvery)
	case o.memoryEvery < 0:
		return options{}, fmt.Errorf("--memory-every %d: want 0 (never) or more", o.memoryEvery)
	}
	if syn != "" {
		s, err := parseSynthetic(syn, seed)
		if err != nil {
			return options{}, err
		}
		o.synthetic = s
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0) // -help printed the flags, as asked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "als:", err)
		os.Exit(2)
	}
	o.progress = progress.Config{Out: os.Stderr, Terminal: term.IsTerminal(int(os.Stderr.Fd())), Quiet: o.quiet}
	if o.makeRatings != "" {
		start := time.Now()
		n, err := o.synthetic.writeCSV(o.makeRatings, o.progress)
		if err != nil {
			fmt.Fprintln(os.Stderr, "als:", err)
			os.Exit(1)
		}
		fmt.Printf("als: wrote %d ratings (%d users x %d items) to %s in %.1f s\n",
			n, o.synthetic.users, o.synthetic.items, o.makeRatings, time.Since(start).Seconds())
		return
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		return run(ctx, rt, acts, o, os.Stdout)
	}))
}

// run is the program on one locality: read or generate the ratings,
// factorise, report on locality 0 and write the factors.
func run(ctx context.Context, rt *runtime.Runtime, acts *primitives.Actions, o options, stdout io.Writer) error {
	e, err := primitives.NewEnv(rt, acts)
	if err != nil {
		return err
	}
	defer e.Close()
	comm, err := runtime.NewCommunicator(rt, "als", nil, 0)
	if err != nil {
		return err
	}
	defer comm.Close()
	here, parts := int(rt.Here()), int(rt.NumLocalities())
	lead := here == 0
	pc := o.progress
	pc.Quiet = pc.Quiet || !lead // locality 0 speaks for the job
	start := time.Now()
	var r *ratings
	if o.ratings != "" {
		r, err = readRatings(ctx, comm, here, parts, o.ratings, pc)
	} else {
		r, err = o.synthetic.generate(ctx, comm, here, parts, pc)
	}
	if err != nil {
		return fmt.Errorf("als on locality %d: %w", here, err)
	}
	sums, err := comm.AllReduce(ctx, []float64{float64(r.byUser.nnz()), float64(r.byUser.empty()), float64(r.byItem.empty())}, runtime.ReduceSum).Get(ctx)
	if err != nil {
		return err
	}
	if lead {
		unrated := ""
		if sums[1] > 0 || sums[2] > 0 {
			unrated = fmt.Sprintf(" (%d users and %d items without ratings get zero factors)", int(sums[1]), int(sums[2]))
		}
		solve := string(o.solver)
		if o.solver == solverCG {
			solve = fmt.Sprintf("cg, %d steps", o.cgSteps)
		}
		ready := time.Since(start).Seconds()
		file := ""
		if st, err := os.Stat(o.ratings); err == nil && o.ratings != "" {
			file = fmt.Sprintf(" (a file of %d bytes)", st.Size()) // the memory's yardstick
		}
		fmt.Fprintf(stdout, "als: %d users x %d items, %d ratings%s, %d factors, solver %s, %d localities; input ready in %.3f s%s\n",
			r.users, r.items, int(sums[0]), unrated, o.factors, solve, parts, ready, file)
	}
	start = time.Now()
	f, err := als(ctx, e, comm, r, o.params, func(it iteration) {
		if lead {
			if math.IsNaN(it.loss) {
				fmt.Fprintf(stdout, "iteration %d/%d: %.3f s\n", it.k, o.iterations, it.seconds)
			} else {
				fmt.Fprintf(stdout, "iteration %d/%d: %.3f s, loss %.10g\n", it.k, o.iterations, it.seconds, it.loss)
			}
		}
		if o.memoryEvery > 0 && (it.k%o.memoryEvery == 0 || it.k == o.iterations) {
			c := e.Counters()
			fmt.Fprintf(stdout, "memory: locality %d, iteration %d: peak RSS %d KiB, %d live arrays of %d bytes\n",
				here, it.k, peakRSSKiB(), c.LiveArrays, c.LiveArrayBytes)
		}
	})
	if err != nil {
		return err
	}
	if lead {
		fmt.Fprintf(stdout, "als: %d iterations in %.3f s on %d localities\n", o.iterations, time.Since(start).Seconds(), parts)
		if o.output != "" {
			if err := writeFactors(o.output, r, f, o.factors); err != nil {
				return fmt.Errorf("als: writing the factors: %w", err)
			}
			fmt.Fprintf(stdout, "als: factors written to %s\n", o.output)
		}
	}
	return nil
}

// writeFactors writes X.csv (userId, factors) and Y.csv (movieId,
// factors) into dir with every digit of the float64 values.
func writeFactors(dir string, r *ratings, f *factorisation, k int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name, idName string, ids []int64, m []float64) error {
		var b []byte
		b = append(b, idName...)
		for j := range k {
			b = append(b, ",f"...)
			b = strconv.AppendInt(b, int64(j+1), 10)
		}
		b = append(b, '\n')
		for row, id := range ids {
			b = strconv.AppendInt(b, id, 10)
			for _, v := range m[row*k : (row+1)*k] {
				b = append(b, ',')
				b = strconv.AppendFloat(b, v, 'g', -1, 64)
			}
			b = append(b, '\n')
		}
		return os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	if err := write("X.csv", "userId", r.userIDs, f.x.Data); err != nil {
		return err
	}
	return write("Y.csv", "movieId", r.itemIDs, f.y.Data)
}
