// Command conv1d is the data-parallel 1-D convolution of JetLag's Listing 2:
// the first convolution layer of a network trained in parallel over samples.
// The input, a CSV file of samples x time steps rows of features (a
// human-activity-recognition batch: 2000 samples of 80 steps of 3
// accelerations), is read with file_read_csv_d tiled on its pages (samples),
// each locality reading only its own rows; the kernel, random
// (kernel size, input channels, filters) values uniform in (-bound, bound),
// is the same on every locality; conv1d_d convolves each locality's samples
// where they are, and the result keeps the input's page tiling. Every
// locality prints the annotation of its input tile as Listing 3 does, and the
// annotation of its output tile.
//
//	conv1d --make-input HAR.csv                       # 2000 x 80 x 3, seeded
//	tessera run -n 2 conv1d --input HAR.csv           # 100 filters of 10, valid
//
// With 100 filters of length 10 and valid padding the output of a
// (2000, 80, 3) input is (2000, 71, 100); on 2 localities each holds 1000
// pages.
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
	"strconv"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// options are the command line.
type options struct {
	input       string
	makeInput   string
	samples     int
	steps       int // rows per page of the input file
	features    int
	filters     int
	kernelSize  int
	bound       float64 // 0: Glorot's sqrt(6 / (fan_in + fan_out))
	padding     primitives.Padding
	stride      int
	dilation    int
	seed        uint64
	printValues bool
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("conv1d", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var padding string
	fs.StringVar(&o.input, "input", "", "CSV `file`: samples x steps rows of features")
	fs.StringVar(&o.makeInput, "make-input", "", "write a synthetic input of --samples x --steps x --features to `file` and exit")
	fs.IntVar(&o.samples, "samples", 2000, "samples of a --make-input file")
	fs.IntVar(&o.steps, "steps", 80, "time steps per sample (rows per page of the input)")
	fs.IntVar(&o.features, "features", 3, "features per step of a --make-input file")
	fs.IntVar(&o.filters, "filters", 100, "output channels")
	fs.IntVar(&o.kernelSize, "kernel-size", 10, "kernel length in steps")
	fs.Float64Var(&o.bound, "bound", 0, "kernel values are uniform in (-bound, bound); 0: sqrt(6 / (fan_in + fan_out))")
	fs.StringVar(&padding, "padding", "valid", "valid, same or causal")
	fs.IntVar(&o.stride, "stride", 1, "step between output steps")
	fs.IntVar(&o.dilation, "dilation", 1, "step between kernel taps")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the kernel (and of a --make-input file)")
	fs.BoolVar(&o.printValues, "print-values", false, "print the first values of each tile, as Listing 3")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	switch primitives.Padding(padding) {
	case primitives.PadValid, primitives.PadSame, primitives.PadCausal:
		o.padding = primitives.Padding(padding)
	default:
		return options{}, fmt.Errorf("--padding %q: want valid, same or causal", padding)
	}
	switch {
	case fs.NArg() > 0:
		return options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case (o.input == "") == (o.makeInput == ""):
		return options{}, errors.New("give exactly one of --input FILE and --make-input FILE")
	case o.samples < 1 || o.steps < 1 || o.features < 1:
		return options{}, fmt.Errorf("--samples %d, --steps %d, --features %d: each must be at least 1", o.samples, o.steps, o.features)
	case o.filters < 1 || o.kernelSize < 1:
		return options{}, fmt.Errorf("--filters %d, --kernel-size %d: each must be at least 1", o.filters, o.kernelSize)
	case o.stride < 1 || o.dilation < 1:
		return options{}, fmt.Errorf("--stride %d, --dilation %d: each must be at least 1", o.stride, o.dilation)
	case o.bound < 0:
		return options{}, fmt.Errorf("--bound %g: want a number >= 0", o.bound)
	}
	return o, nil
}

func main() {
	o, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0) // -help printed the flags, as asked
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "conv1d:", err)
		os.Exit(2)
	}
	if o.makeInput != "" {
		if err := writeInput(o.makeInput, o); err != nil {
			fmt.Fprintln(os.Stderr, "conv1d:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(primitives.Main(runtime.Config{}, func(ctx context.Context, e *primitives.Env) error {
		return run(ctx, e, o, os.Stdout)
	}))
}

// kernel returns the kernel, the same Whole on every locality: random_d of
// shape (kernel size, features, filters) mapped to (-bound, bound) and
// all-gathered — a chain of futures.
func kernel(ctx context.Context, e *primitives.Env, o options, features int) *runtime.Future[primitives.Whole] {
	bound := o.bound
	if bound == 0 {
		bound = math.Sqrt(6 / float64(o.kernelSize*features+o.kernelSize*o.filters))
	}
	u := primitives.Random(ctx, e, []int{o.kernelSize, features, o.filters}, primitives.Tiled(annotate.Page), o.seed)
	return primitives.AllGather(ctx, e, primitives.AddScalar(ctx, e, primitives.MulScalar(ctx, e, u, 2*bound), -bound))
}

// convolve reads the input and convolves it: the program's two primitives.
func convolve(ctx context.Context, e *primitives.Env, o options) (x, y *primitives.Array, err error) {
	xf := primitives.ReadCSV(ctx, e, o.input, primitives.CSVOptions{RowsPerPage: o.steps, Layout: primitives.Tiled(annotate.Page)})
	// The kernel's input channels are the file's columns: known once the
	// file is read.
	xa, err := xf.Get(ctx)
	if err != nil {
		return nil, nil, err
	}
	k := kernel(ctx, e, o, xa.Shape()[2])
	yf := primitives.Conv1D(ctx, e, xf, k, primitives.Conv1DOptions{Padding: o.padding, Stride: o.stride, Dilation: o.dilation})
	ya, err := yf.Get(ctx)
	if err != nil {
		return nil, nil, err
	}
	return xa, ya, nil
}

// run is the program on one locality.
func run(ctx context.Context, e *primitives.Env, o options, stdout io.Writer) error {
	start := time.Now()
	x, y, err := convolve(ctx, e, o)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	sum, err := primitives.Sum(ctx, e, runtime.MakeReady(y)).Get(ctx)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(stdout)
	fmt.Fprintf(w, "print(input_array) on locality %d:\n", e.Locality())
	if o.printValues {
		fmt.Fprintf(w, "%s, ", firstValues(x))
	}
	fmt.Fprintf(w, "%s\n", x.Annotation())
	fmt.Fprintf(w, "conv1d_d output on locality %d: shape %v, local pages %v\n%s\n",
		e.Locality(), y.Shape(), y.OwnedBlock()[0], y.Annotation())
	if e.Locality() == 0 {
		fmt.Fprintf(w, "conv1d: input %v * kernel [%d %d %d] (%s, stride %d, dilation %d) = %v on %d localities in %.3f s; sum of the output %.12g\n",
			x.Shape(), o.kernelSize, x.Shape()[2], o.filters, o.padding, o.stride, o.dilation, y.Shape(), e.Size(), elapsed.Seconds(), sum)
	}
	return w.Flush()
}

// firstValues prints the first steps of the first page of the local tile
// in Listing 3's style.
func firstValues(a *primitives.Array) string {
	local, b := a.Local(), a.LocalBlock()
	if len(local) == 0 {
		return "[]"
	}
	cols := b[2].Len()
	row := func(r int) string {
		s := "["
		for c := range cols {
			if c > 0 {
				s += ", "
			}
			s += strconv.FormatFloat(local[r*cols+c], 'g', 4, 64)
		}
		return s + "]"
	}
	return "[[" + row(0) + ", ..., " + row(b[1].Len()-1) + "], ...]"
}

// writeInput writes a synthetic human-activity-like batch: samples x steps
// lines of features, each feature a noisy oscillation whose frequency and
// amplitude depend on the sample's activity.
func writeInput(path string, o options) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	state := o.seed*0x9e3779b97f4a7c15 + 1
	next := func() float64 { // xorshift64*, uniform in [0, 1)
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		return float64((state*0x2545f4914f6cdd1d)>>11) / (1 << 53)
	}
	var line []byte
	for s := range o.samples {
		activity := s % 6
		freq := 0.05 + 0.07*float64(activity)
		for t := range o.steps {
			line = line[:0]
			for c := range o.features {
				if c > 0 {
					line = append(line, ',')
				}
				v := (1+float64(activity))*math.Sin(freq*float64(t)+float64(c)) + 0.3*(next()-0.5)
				line = strconv.AppendFloat(line, v, 'f', 4, 64)
			}
			line = append(line, '\n')
			w.Write(line)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
