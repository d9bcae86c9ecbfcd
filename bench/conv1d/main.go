// Command conv1d measures primitives.Conv1D: an SPMD program, one process
// per locality, started with `tessera run -n N conv1d`.
//
// The input is the (pages, steps, channels) array of the JetLag paper's
// Listing 2, page-tiled, from primitives.Random with seed 1; the kernel
// (size, channels, filters) is the same generator's values with seed 2,
// held whole by every locality. Every locality runs -warmup convolutions,
// then -n, each waited for on every locality (a Barrier of a communicator
// of its own) before the next starts, and releases each result but the
// last once timed (as a training loop drops a layer's output); locality 0
// times each one and prints
//
//	BenchmarkConv1D/tessera 10 0.01234 s/op 0.01200 min-s/op 1.234e+05 checksum
//
// with the median and the smallest time of one convolution, and the sum of
// the output (gathered by Sum), which bench/conv1d_numpy.py prints for the
// same data.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/tessera-amt/tessera/bench/internal/benchline"
	"os"
	"slices"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	pages := flag.Int("pages", 2000, "pages (samples) of the input")
	steps := flag.Int("steps", 80, "time steps per page")
	in := flag.Int("in", 3, "input channels")
	size := flag.Int("kernel", 10, "kernel size")
	out := flag.Int("filters", 100, "output channels")
	padding := flag.String("padding", "valid", "valid, same or causal")
	n := flag.Int("n", 10, "timed convolutions")
	warm := flag.Int("warmup", 2, "convolutions before timing")
	flag.Parse()

	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := primitives.NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		c, err := runtime.NewCommunicator(rt, "conv1d-bench", nil, 0)
		if err != nil {
			return err
		}
		defer c.Close()

		x := primitives.Random(ctx, e, []int{*pages, *steps, *in}, primitives.Tiled(annotate.Page), 1)
		kshape := []int{*size, *in, *out}
		kernel := primitives.AllGather(ctx, e, primitives.Random(ctx, e, kshape, primitives.Tiled(annotate.Page), 2))
		if _, err := x.Get(ctx); err != nil {
			return err
		}
		if _, err := kernel.Get(ctx); err != nil {
			return err
		}
		opts := primitives.Conv1DOptions{Padding: primitives.Padding(*padding)}
		var times []float64
		var y *runtime.Future[*primitives.Array]
		for i := range *warm + *n {
			if err := c.Barrier(ctx).Err(ctx); err != nil {
				return err
			}
			start := time.Now()
			y = primitives.Conv1D(ctx, e, x, kernel, opts)
			if err := y.Err(ctx); err != nil {
				return err
			}
			if err := c.Barrier(ctx).Err(ctx); err != nil {
				return err
			}
			if i >= *warm {
				times = append(times, time.Since(start).Seconds())
			}
			if i < *warm+*n-1 {
				prev, _ := y.Get(ctx)
				prev.Release() // its memory serves the next result
			}
		}
		sum, err := primitives.Sum(ctx, e, y).Get(ctx)
		if err != nil {
			return err
		}
		if rt.Here() == 0 {
			slices.Sort(times)
			fmt.Println(benchline.Format("Conv1D/tessera", len(times), benchline.Metric{Value: times[len(times)/2], Unit: "s/op"},
				benchline.Metric{Value: times[0], Unit: "min-s/op"}) + fmt.Sprintf(" %.10e checksum", sum))
		}
		return nil
	}))
}
