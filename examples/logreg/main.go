// Command logreg is logistic regression by batch gradient descent
// (Phylanx's LRA example) over a distributed array of samples: each
// locality holds a block of rows of X and the matching labels (row tilings
// of the same length cut the same way), computes its rows' predictions
// σ(X w + b) and its part of the gradient Xᵀ(σ(X w + b) − y); the parts
// are combined by one all-gather, added in locality order so every
// locality takes the same step w ← w − rate · gradient / n.
//
// X comes from a Zarr directory, a .npy or a .csv file (one sample per
// row) and the 0/1 labels from --labels (a vector or one column) or, with
// no --labels, from the last column of X; each locality reads only its
// rows. The weights are written as Zarr arrays under --output (weights,
// and intercept with --intercept); the accuracy and the mean log-loss on
// the training data are printed.
//
//	logreg --make-input data.npy --samples 100000 --features 10
//	tessera run -n 2 logreg --input data.npy --steps 100 --rate 0.5 --output model
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
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/internal/npy"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// options are the command line.
type options struct {
	input, labels, output string
	steps                 int
	rate                  float64
	intercept             bool
	makeInput             string
	samples, features     int
	seed                  uint64
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("logreg", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.input, "input", "", "samples: a Zarr `directory`, a .npy or a .csv file, one sample per row")
	fs.StringVar(&o.labels, "labels", "", "0/1 labels (Zarr, .npy or .csv, one per sample); default: the last column of --input")
	fs.StringVar(&o.output, "output", "", "write the weights as Zarr arrays under this `directory`")
	fs.IntVar(&o.steps, "steps", 100, "gradient descent steps")
	fs.Float64Var(&o.rate, "rate", 0.1, "learning rate")
	fs.BoolVar(&o.intercept, "intercept", false, "fit an intercept too")
	fs.StringVar(&o.makeInput, "make-input", "", "write --samples x (--features + 1) values, labels last, to this .npy `file` and exit")
	fs.IntVar(&o.samples, "samples", 100000, "samples of a --make-input file")
	fs.IntVar(&o.features, "features", 10, "features of a --make-input file")
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
	case o.steps < 0:
		return options{}, fmt.Errorf("--steps %d: want at least 0", o.steps)
	case !(o.rate > 0):
		return options{}, fmt.Errorf("--rate %g: want a number > 0", o.rate)
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0) // -help printed the flags, as asked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "logreg:", err)
		os.Exit(2)
	}
	if o.makeInput != "" {
		if err := writeInput(o); err != nil {
			fmt.Fprintln(os.Stderr, "logreg:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(primitives.Main(runtime.Config{}, func(ctx context.Context, e *primitives.Env) error {
		return run(ctx, e, o, os.Stdout)
	}))
}

// data is this locality's rows: features (rows x d, row-major, stride
// stride) and labels.
type data struct {
	x         []float64
	stride, d int
	y         []float64
	n         int // samples in all
}

// model is a fit: weights, intercept, and how well they do on the data.
type model struct {
	w          []float64
	b          float64
	accuracy   float64
	loss       float64 // mean log-loss
	iterations int
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// fit runs the gradient descent.
func fit(ctx context.Context, e *primitives.Env, dt data, steps int, rate float64, intercept bool) (model, error) {
	d := dt.d
	m := model{w: make([]float64, d), iterations: steps}
	rows := len(dt.y)
	part := make([]float64, d+1)
	for range steps {
		clear(part)
		for i := range rows {
			xi := dt.x[i*dt.stride : i*dt.stride+d]
			z := m.b
			for j, v := range xi {
				z += v * m.w[j]
			}
			r := sigmoid(z) - dt.y[i]
			for j, v := range xi {
				part[j] += v * r
			}
			part[d] += r
		}
		g, err := primitives.AllSum(ctx, e, part).Get(ctx)
		if err != nil {
			return model{}, err
		}
		for j := range d {
			m.w[j] -= rate * g[j] / float64(dt.n)
		}
		if intercept {
			m.b -= rate * g[d] / float64(dt.n)
		}
	}
	var right, loss float64
	for i := range rows {
		z := m.b
		for j, v := range dt.x[i*dt.stride : i*dt.stride+d] {
			z += v * m.w[j]
		}
		p := sigmoid(z)
		if (p >= 0.5) == (dt.y[i] >= 0.5) {
			right++
		}
		// log(1 + e^-z) for y = 1, log(1 + e^z) for y = 0, without overflow.
		s := z
		if dt.y[i] >= 0.5 {
			s = -z
		}
		loss += math.Max(s, 0) + math.Log1p(math.Exp(-math.Abs(s)))
	}
	tot, err := primitives.AllSum(ctx, e, []float64{right, loss}).Get(ctx)
	if err != nil {
		return model{}, err
	}
	m.accuracy, m.loss = tot[0]/float64(dt.n), tot[1]/float64(dt.n)
	return m, nil
}

// load reads the samples and labels, row-tiled alike.
func load(ctx context.Context, e *primitives.Env, o options) (data, *primitives.Array, error) {
	x, err := primitives.Load(ctx, e, o.input, primitives.Tiled(annotate.Row)).Get(ctx)
	if err != nil {
		return data{}, nil, err
	}
	shape := x.Shape()
	if len(shape) != 2 {
		return data{}, nil, fmt.Errorf("samples %s of shape %v: want a 2-D array (samples, features)", o.input, shape)
	}
	dt := data{x: x.Local(), stride: shape[1], d: shape[1], n: shape[0]}
	rows := len(dt.x) / shape[1]
	if o.labels == "" {
		if shape[1] < 2 {
			return data{}, nil, fmt.Errorf("samples %s of shape %v: want features and the labels last, or --labels", o.input, shape)
		}
		dt.d--
		dt.y = make([]float64, rows)
		for i := range rows {
			dt.y[i] = dt.x[i*dt.stride+dt.d]
		}
	} else {
		y, err := primitives.Load(ctx, e, o.labels, primitives.Tiled(annotate.Row)).Get(ctx)
		if err != nil {
			return data{}, nil, err
		}
		if y.Size() != shape[0] || len(y.Local()) != rows {
			return data{}, nil, fmt.Errorf("labels %s of shape %v for %d samples: want one label per sample", o.labels, y.Shape(), shape[0])
		}
		dt.y = y.Local()
	}
	for i, v := range dt.y {
		if v != 0 && v != 1 {
			return data{}, nil, fmt.Errorf("label of sample %d is %g: want 0 or 1", x.LocalBlock()[0].Start+i, v)
		}
	}
	return dt, x, nil
}

// run is the program on one locality.
func run(ctx context.Context, e *primitives.Env, o options, stdout io.Writer) error {
	start := time.Now()
	dt, _, err := load(ctx, e, o)
	if err != nil {
		return err
	}
	read := time.Since(start)
	m, err := fit(ctx, e, dt, o.steps, o.rate, o.intercept)
	if err != nil {
		return err
	}
	elapsed := time.Since(start) - read
	if e.Locality() != 0 {
		return nil
	}
	if o.output != "" {
		if err := writeModel(o, m); err != nil {
			return err
		}
	}
	w := bufio.NewWriter(stdout)
	fmt.Fprintf(w, "logreg: %d samples x %d features on %d localities, %d steps of rate %g: accuracy %.6f, log-loss %.12g; read %.3f s, fitted %.3f s\n",
		dt.n, dt.d, e.Size(), o.steps, o.rate, m.accuracy, m.loss, read.Seconds(), elapsed.Seconds())
	return w.Flush()
}

// writeModel writes the weights (and the intercept) under o.output, a
// Zarr group.
func writeModel(o options, m model) error {
	if err := os.MkdirAll(o.output, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.output, ".zgroup"), []byte("{\"zarr_format\": 2}\n"), 0o644); err != nil {
		return err
	}
	if err := primitives.SaveZarr(filepath.Join(o.output, "weights"), primitives.Whole{Shape: []int{len(m.w)}, Data: m.w}, primitives.ZarrOptions{}); err != nil {
		return err
	}
	if o.intercept {
		return primitives.SaveZarr(filepath.Join(o.output, "intercept"), primitives.Whole{Shape: []int{1}, Data: []float64{m.b}}, primitives.ZarrOptions{})
	}
	return nil
}

// writeInput writes samples drawn around a random separating plane, the
// label last, as a .npy file.
func writeInput(o options) error {
	state := o.seed*0x9e3779b97f4a7c15 + 1
	next := func() float64 { // xorshift64*, uniform in [0, 1)
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		return float64((state*0x2545f4914f6cdd1d)>>11) / (1 << 53)
	}
	plane := make([]float64, o.features)
	for j := range plane {
		plane[j] = 2 * (next() - 0.5)
	}
	hdr, err := npy.EncodeHeader(npy.Float64, []int{o.samples, o.features + 1})
	if err != nil {
		return err
	}
	f, err := os.Create(o.makeInput)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.Write(hdr)
	row := make([]float64, o.features+1)
	var buf []byte
	for range o.samples {
		z := 0.0
		for j := range o.features {
			row[j] = 4 * (next() - 0.5)
			z += row[j] * plane[j]
		}
		row[o.features] = 0
		if next() < sigmoid(3*z) {
			row[o.features] = 1
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
