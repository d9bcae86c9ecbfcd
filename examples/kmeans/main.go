// Command kmeans is Lloyd's k-means (Phylanx's k-means example) over a
// distributed array of points: each locality holds a block of rows (a row
// tiling), assigns its points to the nearest centre and sums them per
// cluster; the localities' sums are combined (one all-gather, added in
// locality order so every locality computes the same centres) and the new
// centres are their means. It stops after --iterations or when no label
// changes, as scikit-learn's KMeans(algorithm="lloyd", tol=0) does, then
// labels the points with the final centres and reports the inertia (the
// sum of squared distances to them).
//
// A point's nearest centre minimises |c|² - 2 x·c, as in scikit-learn.
// With up to 16 centres on an AVX2 CPU one kernel (nearest_amd64.s) takes
// a point's 16 products in registers and its label, count and cluster sum
// right after; otherwise blocks of points meet the centres in a matrix
// product and are then scanned (assign.go).
//
// The points come from a Zarr directory, a .npy or a .csv file (one point
// per row), read with each locality reading only its rows; the initial
// centres from --init (any of those formats, k rows) or the first --k
// points. The result is written as Zarr arrays under --output: centres
// (k x d, <f8) and labels (n, <i8), which Python's zarr and dask read.
//
//	kmeans --make-input points.npy --points 100000 --dims 8 --clusters 5
//	tessera run -n 2 kmeans --input points.npy --k 5 --iterations 10 --output result
//
// An empty cluster keeps its centre (scikit-learn moves it to a far point).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/internal/npy"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// options are the command line.
type options struct {
	input, init, output string
	k, iterations       int
	makeInput           string
	points, dims        int
	clusters            int
	seed                uint64
	cpuProfile          string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("kmeans", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.input, "input", "", "points: a Zarr `directory`, a .npy or a .csv file, one point per row")
	fs.StringVar(&o.init, "init", "", "initial centres (Zarr, .npy or .csv, k rows); default: the first --k points")
	fs.IntVar(&o.k, "k", 0, "clusters, when --init is not given")
	fs.IntVar(&o.iterations, "iterations", 10, "at most this many Lloyd iterations")
	fs.StringVar(&o.output, "output", "", "write centres and labels as Zarr arrays under this `directory`")
	fs.StringVar(&o.makeInput, "make-input", "", "write --points x --dims points around --clusters centres to this .npy `file` and exit")
	fs.IntVar(&o.points, "points", 100000, "points of a --make-input file")
	fs.IntVar(&o.dims, "dims", 8, "dimensions of a --make-input file")
	fs.IntVar(&o.clusters, "clusters", 5, "blobs of a --make-input file")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of a --make-input file")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the clustering to `file`.L on each locality L")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	switch {
	case fs.NArg() > 0:
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.makeInput != "":
		if o.points < 1 || o.dims < 1 || o.clusters < 1 {
			return options{}, fmt.Errorf("--points %d, --dims %d, --clusters %d: each must be at least 1", o.points, o.dims, o.clusters)
		}
		return o, nil
	case o.input == "":
		return options{}, errors.New("give --input FILE (or --make-input FILE)")
	case (o.init == "") == (o.k == 0):
		return options{}, errors.New("give exactly one of --init FILE and --k K")
	case o.k < 0:
		return options{}, fmt.Errorf("--k %d: want at least 1", o.k)
	case o.iterations < 1:
		return options{}, fmt.Errorf("--iterations %d: want at least 1", o.iterations)
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0) // -help printed the flags, as asked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kmeans:", err)
		os.Exit(2)
	}
	if o.makeInput != "" {
		if err := writeInput(o); err != nil {
			fmt.Fprintln(os.Stderr, "kmeans:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(primitives.Main(runtime.Config{}, func(ctx context.Context, e *primitives.Env) error {
		return run(ctx, e, o, os.Stdout)
	}))
}

// result is what a run gives on every locality.
type result struct {
	centres    []float64 // k x d
	labels     []float64 // this locality's points' clusters
	inertia    float64
	iterations int  // Lloyd iterations run
	converged  bool // no label changed in the last one
	n, d, k    int
}

// cluster runs Lloyd's algorithm on the points x (row-tiled) from centres
// (k x d, the same on every locality).
func cluster(ctx context.Context, e *primitives.Env, x *primitives.Array, centres []float64, k, iterations int) (result, error) {
	shape := x.Shape()
	if len(shape) != 2 {
		return result{}, fmt.Errorf("points %s of shape %v: want a 2-D array (points, dimensions)", x.Name(), shape)
	}
	n, d := shape[0], shape[1]
	if len(centres) != k*d {
		return result{}, fmt.Errorf("%d initial centre values for k = %d and %d dimensions: want %d", len(centres), k, d, k*d)
	}
	local := x.Local()
	rows := len(local) / d
	labels := make([]float64, rows)
	for i := range labels {
		labels[i] = -1
	}
	res := result{n: n, d: d, k: k}
	part := make([]float64, k*d+k+1) // sums, counts, changed labels
	as := newAssigner(e.Runtime(), local, labels, k, d, true)
	for it := 0; it < iterations; it++ {
		clear(part)
		if err := as.assign(ctx, centres, part, false); err != nil {
			return result{}, err
		}
		sum, err := primitives.AllSum(ctx, e, part).Get(ctx)
		if err != nil {
			return result{}, err
		}
		res.iterations = it + 1
		if it > 0 && sum[k*d+k] == 0 {
			res.converged = true
			break // the same labels give the same centres
		}
		for c := range k {
			if cnt := sum[k*d+c]; cnt > 0 {
				for j := range d {
					centres[c*d+j] = sum[c*d+j] / cnt
				}
			}
		}
	}
	// Labels of the final centres, and the inertia: each point's squared
	// distance to its centre, summed exactly.
	clear(part)
	if err := as.assign(ctx, centres, part, true); err != nil {
		return result{}, err
	}
	sum, err := primitives.AllSum(ctx, e, []float64{as.inertia}).Get(ctx)
	if err != nil {
		return result{}, err
	}
	res.centres, res.labels, res.inertia = centres, labels, sum[0]
	return res, nil
}

// run is the program on one locality.
func run(ctx context.Context, e *primitives.Env, o options, stdout io.Writer) error {
	start := time.Now()
	x, err := primitives.Load(ctx, e, o.input, primitives.Tiled(annotate.Row)).Get(ctx)
	if err != nil {
		return err
	}
	var centres []float64
	k := o.k
	if o.init != "" {
		c, err := primitives.Load(ctx, e, o.init, primitives.Tiled(annotate.Sym)).Get(ctx)
		if err != nil {
			return err
		}
		w, err := primitives.AllGather(ctx, e, runtime.MakeReady(c)).Get(ctx)
		if err != nil {
			return err
		}
		if len(w.Shape) != 2 || len(x.Shape()) != 2 || w.Shape[1] != x.Shape()[1] {
			return fmt.Errorf("initial centres %s of shape %v for points of shape %v: want (k, %d)", o.init, w.Shape, x.Shape(), x.Shape()[len(x.Shape())-1])
		}
		centres, k = w.Data, w.Shape[0]
	} else {
		if len(x.Shape()) != 2 || k > x.Shape()[0] {
			return fmt.Errorf("--k %d for points of shape %v: want a 2-D array of at least k points", k, x.Shape())
		}
		centres, err = x.Fetch(ctx, annotate.Block{{Start: 0, Stop: k}, {Start: 0, Stop: x.Shape()[1]}}).Get(ctx)
		if err != nil {
			return err
		}
	}
	read := time.Since(start)
	if o.cpuProfile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", o.cpuProfile, e.Locality()))
		if err != nil {
			return fmt.Errorf("locality %d: CPU profile: %w", e.Locality(), err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("locality %d: CPU profile %s: %w", e.Locality(), f.Name(), err)
		}
	}
	res, err := cluster(ctx, e, x, centres, k, o.iterations)
	if o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(start) - read
	if o.output != "" {
		if err := writeResult(ctx, e, o.output, x, res); err != nil {
			return err
		}
	}
	if e.Locality() == 0 {
		w := bufio.NewWriter(stdout)
		fmt.Fprintf(w, "kmeans: %d points x %d, k = %d on %d localities: %d iterations (converged: %v), inertia %.17g; read %.3f s, clustered %.3f s\n",
			res.n, res.d, k, e.Size(), res.iterations, res.converged, res.inertia, read.Seconds(), elapsed.Seconds())
		return w.Flush()
	}
	return nil
}

// writeResult writes centres (from locality 0) and labels (each locality
// its rows) as Zarr arrays under dir, a Zarr group.
func writeResult(ctx context.Context, e *primitives.Env, dir string, x *primitives.Array, res result) error {
	if e.Locality() == 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, ".zgroup"), []byte("{\"zarr_format\": 2}\n"), 0o644); err != nil {
			return err
		}
		c := primitives.Whole{Shape: []int{res.k, res.d}, Data: res.centres}
		if err := primitives.SaveZarr(filepath.Join(dir, "centres"), c, primitives.ZarrOptions{}); err != nil {
			return err
		}
	}
	labels, err := primitives.NewArray(e, []int{res.n}, primitives.Tiled(annotate.Row), res.labels)
	if err != nil {
		return err
	}
	_, err = primitives.WriteZarr(ctx, e, runtime.MakeReady(labels), filepath.Join(dir, "labels"), primitives.ZarrOptions{Dtype: "<i8", Compressor: "zstd"}).Get(ctx)
	return err
}

// writeInput writes o.points points in o.dims dimensions scattered around
// o.clusters random centres as a .npy file.
func writeInput(o options) error {
	state := o.seed*0x9e3779b97f4a7c15 + 1
	next := func() float64 { // xorshift64*, uniform in [0, 1)
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		return float64((state*0x2545f4914f6cdd1d)>>11) / (1 << 53)
	}
	centres := make([]float64, o.clusters*o.dims)
	for i := range centres {
		centres[i] = 20 * (next() - 0.5)
	}
	hdr, err := npy.EncodeHeader(npy.Float64, []int{o.points, o.dims})
	if err != nil {
		return err
	}
	f, err := os.Create(o.makeInput)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.Write(hdr)
	row := make([]float64, o.dims)
	var buf []byte
	for i := range o.points {
		c := i % o.clusters
		for j := range row {
			// The sum of three uniforms: a bump around the centre.
			row[j] = centres[c*o.dims+j] + (next()+next()+next()-1.5)*2
		}
		buf, _ = npy.Encode(npy.Float64, row, buf[:0])
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
