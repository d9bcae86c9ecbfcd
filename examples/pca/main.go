// Command pca is principal component analysis of a tall, skinny matrix
// (n samples x d features, d small): the covariance matrix is computed
// where the rows are — each locality centres its block of rows with the
// column means (one all-gather of column sums) and forms its d x d part
// of Xcᵀ Xc with a rank-k update, the parts added in locality order after
// a second all-gather — and every locality decomposes the d x d result
// itself (gonum's symmetric eigendecomposition). The explained variances
// are the eigenvalues, as scikit-learn's PCA(svd_solver="full") gives them
// (S² / (n − 1)), and their ratios to the total variance.
//
// X comes from a Zarr directory, a .npy or a .csv file, each locality
// reading only its rows. Under --output it writes Zarr arrays: components
// (k x d, each row's largest entry positive), explained_variance,
// explained_variance_ratio and mean; with --scores also scores, the
// projection of X on the components (n x k), written by every locality for
// its own rows.
//
//	pca --make-input X.npy --samples 1000000 --features 16
//	tessera run -n 2 pca --input X.npy --components 4 --output result --scores
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/internal/npy"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// options are the command line.
type options struct {
	input, output     string
	components        int
	scores            bool
	makeInput         string
	samples, features int
	seed              uint64
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("pca", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.input, "input", "", "samples: a Zarr `directory`, a .npy or a .csv file, one sample per row")
	fs.StringVar(&o.output, "output", "", "write the components, variances and mean as Zarr arrays under this `directory`")
	fs.IntVar(&o.components, "components", 0, "components to keep; 0: all")
	fs.BoolVar(&o.scores, "scores", false, "also write the samples' projections (scores) under --output")
	fs.StringVar(&o.makeInput, "make-input", "", "write --samples x --features correlated values to this .npy `file` and exit")
	fs.IntVar(&o.samples, "samples", 100000, "samples of a --make-input file")
	fs.IntVar(&o.features, "features", 16, "features of a --make-input file")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of a --make-input file")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	switch {
	case fs.NArg() > 0:
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.makeInput != "":
		if o.samples < 1 || o.features < 1 {
			return options{}, fmt.Errorf("--samples %d, --features %d: each must be at least 1", o.samples, o.features)
		}
		return o, nil
	case o.input == "":
		return options{}, errors.New("give --input FILE (or --make-input FILE)")
	case o.components < 0:
		return options{}, fmt.Errorf("--components %d: want at least 0", o.components)
	case o.scores && o.output == "":
		return options{}, errors.New("--scores needs --output")
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0) // -help printed the flags, as asked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pca:", err)
		os.Exit(2)
	}
	if o.makeInput != "" {
		if err := writeInput(o); err != nil {
			fmt.Fprintln(os.Stderr, "pca:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(primitives.Main(runtime.Config{}, func(ctx context.Context, e *primitives.Env) error {
		return run(ctx, e, o, os.Stdout)
	}))
}

// fit is a PCA: the mean, every component (rows, by decreasing variance),
// its variance and its share of the total.
type fit struct {
	n, d       int
	mean       []float64
	components []float64 // d x d, row i the i-th component
	variance   []float64
	ratio      []float64
	centred    []float64 // this locality's rows, centred
}

// analyse computes the PCA of the row-tiled x.
func analyse(ctx context.Context, e *primitives.Env, x *primitives.Array) (fit, error) {
	shape := x.Shape()
	if len(shape) != 2 || shape[0] < 2 {
		return fit{}, fmt.Errorf("samples %s of shape %v: want a 2-D array of at least 2 samples", x.Name(), shape)
	}
	n, d := shape[0], shape[1]
	local := x.Local()
	rows := len(local) / d
	sums := make([]float64, d)
	for i := range rows {
		for j, v := range local[i*d : (i+1)*d] {
			sums[j] += v
		}
	}
	sums, err := primitives.AllSum(ctx, e, sums).Get(ctx)
	if err != nil {
		return fit{}, err
	}
	f := fit{n: n, d: d, mean: make([]float64, d), centred: make([]float64, len(local))}
	for j := range d {
		f.mean[j] = sums[j] / float64(n)
	}
	for i := range rows {
		for j := range d {
			f.centred[i*d+j] = local[i*d+j] - f.mean[j]
		}
	}
	// This locality's Xcᵀ Xc (upper triangle), then the whole one.
	gram := blas64.Symmetric{N: d, Stride: d, Uplo: blas.Upper, Data: make([]float64, d*d)}
	if rows > 0 {
		blas64.Syrk(blas.Trans, 1, blas64.General{Rows: rows, Cols: d, Stride: d, Data: f.centred}, 0, gram)
	}
	all, err := primitives.AllSum(ctx, e, gram.Data).Get(ctx)
	if err != nil {
		return fit{}, err
	}
	cov := mat.NewSymDense(d, nil)
	for i := range d {
		for j := i; j < d; j++ {
			cov.SetSym(i, j, all[i*d+j]/float64(n-1))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return fit{}, fmt.Errorf("the %d x %d covariance matrix of %s did not decompose", d, d, x.Name())
	}
	values := eig.Values(nil)
	var vectors mat.Dense
	eig.VectorsTo(&vectors)
	order := make([]int, d)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return values[order[a]] > values[order[b]] })
	f.components, f.variance, f.ratio = make([]float64, d*d), make([]float64, d), make([]float64, d)
	total := 0.0
	for r, c := range order {
		f.variance[r] = math.Max(values[c], 0) // a rounding below zero is zero
		total += f.variance[r]
		big := 0
		for j := range d {
			f.components[r*d+j] = vectors.At(j, c)
			if math.Abs(vectors.At(j, c)) > math.Abs(vectors.At(big, c)) {
				big = j
			}
		}
		if vectors.At(big, c) < 0 {
			for j := range d {
				f.components[r*d+j] = -f.components[r*d+j]
			}
		}
	}
	for r := range d {
		f.ratio[r] = f.variance[r] / total
	}
	return f, nil
}

// run is the program on one locality.
func run(ctx context.Context, e *primitives.Env, o options, stdout io.Writer) error {
	start := time.Now()
	x, err := primitives.Load(ctx, e, o.input, primitives.Tiled(annotate.Row)).Get(ctx)
	if err != nil {
		return err
	}
	read := time.Since(start)
	f, err := analyse(ctx, e, x)
	if err != nil {
		return err
	}
	k := o.components
	if k == 0 || k > f.d {
		k = f.d
	}
	elapsed := time.Since(start) - read
	if o.output != "" {
		if err := write(ctx, e, o, f, k); err != nil {
			return err
		}
	}
	if e.Locality() != 0 {
		return nil
	}
	w := bufio.NewWriter(stdout)
	fmt.Fprintf(w, "pca: %d samples x %d features on %d localities, %d components; read %.3f s, analysed %.3f s\n",
		f.n, f.d, e.Size(), k, read.Seconds(), elapsed.Seconds())
	for r := range k {
		fmt.Fprintf(w, "component %d: explained variance %.17g, ratio %.17g\n", r, f.variance[r], f.ratio[r])
	}
	return w.Flush()
}

// write writes the fit's first k components under o.output (a Zarr group)
// from locality 0, and the scores from every locality.
func write(ctx context.Context, e *primitives.Env, o options, f fit, k int) error {
	if e.Locality() == 0 {
		if err := os.MkdirAll(o.output, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(o.output, ".zgroup"), []byte("{\"zarr_format\": 2}\n"), 0o644); err != nil {
			return err
		}
		for _, a := range []struct {
			name  string
			shape []int
			data  []float64
		}{
			{"components", []int{k, f.d}, f.components[:k*f.d]},
			{"explained_variance", []int{k}, f.variance[:k]},
			{"explained_variance_ratio", []int{k}, f.ratio[:k]},
			{"mean", []int{f.d}, f.mean},
		} {
			if err := primitives.SaveZarr(filepath.Join(o.output, a.name), primitives.Whole{Shape: a.shape, Data: a.data}, primitives.ZarrOptions{}); err != nil {
				return err
			}
		}
	}
	if !o.scores {
		return nil
	}
	rows := len(f.centred) / f.d
	scores := make([]float64, rows*k)
	if rows > 0 {
		blas64.Gemm(blas.NoTrans, blas.Trans, 1,
			blas64.General{Rows: rows, Cols: f.d, Stride: f.d, Data: f.centred},
			blas64.General{Rows: k, Cols: f.d, Stride: f.d, Data: f.components[:k*f.d]},
			0, blas64.General{Rows: rows, Cols: k, Stride: k, Data: scores})
	}
	a, err := primitives.NewArray(e, []int{f.n, k}, primitives.Tiled(annotate.Row), scores)
	if err != nil {
		return err
	}
	_, err = primitives.WriteZarr(ctx, e, runtime.MakeReady(a), filepath.Join(o.output, "scores"), primitives.ZarrOptions{Compressor: "zstd"}).Get(ctx)
	return err
}

// writeInput writes samples whose features mix a few latent factors of
// decreasing scale, plus noise, as a .npy file.
func writeInput(o options) error {
	state := o.seed*0x9e3779b97f4a7c15 + 1
	next := func() float64 { // xorshift64*, uniform in [0, 1)
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		return float64((state*0x2545f4914f6cdd1d)>>11) / (1 << 53)
	}
	const factors = 3
	mix := make([]float64, factors*o.features)
	for i := range mix {
		mix[i] = 2 * (next() - 0.5)
	}
	hdr, err := npy.EncodeHeader(npy.Float64, []int{o.samples, o.features})
	if err != nil {
		return err
	}
	fl, err := os.Create(o.makeInput)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(fl)
	w.Write(hdr)
	row := make([]float64, o.features)
	var buf []byte
	for range o.samples {
		var z [factors]float64
		for i := range z {
			z[i] = (next() - 0.5) * float64(int(10)>>i)
		}
		for j := range row {
			row[j] = 0.1 * (next() - 0.5)
			for i := range z {
				row[j] += z[i] * mix[i*o.features+j]
			}
		}
		buf, _ = npy.Encode(npy.Float64, row, buf[:0])
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		fl.Close()
		return err
	}
	return fl.Close()
}
