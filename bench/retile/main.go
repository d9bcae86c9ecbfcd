// Command retile is the Tessera side of the retile section of `make bench`:
// run as a job (`tessera run -n 4 retile -n 4096`), it makes an n x n array
// of uniform random values tiled by rows and times primitives.Retile to
// columns, -reps times, each from a moment every locality has its row tile
// to the moment every locality has its column tile (a barrier on each
// side). It checks that the localities fetched exactly the plan's pieces
// between localities, and locality 0 prints the median time and the
// effective rate, the bytes that crossed between localities per second:
//
// -cpuprofile FILE writes a CPU profile per locality (FILE.L0, ...).
//
//	retile: 4096 x 4096 row -> column on 4 localities: 100663296 bytes moved in 0.2134 s
//	BenchmarkRetile/n=4096 5 0.213400 s/op 100663296 bytes 0.472 GB/s
//
// (gbps is 10^9 bytes per second).
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
	"github.com/tessera-amt/tessera/bench/internal/profile"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	n := flag.Int("n", 4096, "matrix order")
	reps := flag.Int("reps", 5, "timed retiles (after one untimed)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the retiles here, suffixed .L<locality>")
	flag.Parse()
	if *n < 1 || *reps < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: retile [-n order] [-reps r]")
		os.Exit(2)
	}
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		stop, err := profile.Start(*cpuprofile, rt.Here())
		if err != nil {
			return err
		}
		defer stop()
		return run(ctx, rt, acts, *n, *reps)
	}))
}

func run(ctx context.Context, rt *runtime.Runtime, acts *primitives.Actions, n, reps int) error {
	e, err := primitives.NewEnv(rt, acts)
	if err != nil {
		return err
	}
	defer e.Close()
	sync, err := runtime.NewCommunicator(rt, "bench.retile.barrier", nil, 0)
	if err != nil {
		return err
	}
	defer sync.Close()
	barrier := func() error {
		_, err := sync.AllReduce(ctx, []float64{0}, runtime.ReduceSum).Get(ctx)
		return err
	}
	shape := []int{n, n}
	x, err := primitives.Random(ctx, e, shape, primitives.Tiled(annotate.Row), 1).Get(ctx)
	if err != nil {
		return err
	}
	col, err := annotate.New(annotate.Column, shape, e.Size())
	if err != nil {
		return err
	}
	plan, err := annotate.Plan(x.Annotation().Tiling, col)
	if err != nil {
		return err
	}
	want := 0
	for _, p := range plan {
		if p.To == e.Locality() && !p.Local() {
			want += 8 * p.Block.Size()
		}
	}
	var times []float64
	for r := range reps + 1 {
		if err := barrier(); err != nil {
			return err
		}
		before := e.Counters().BytesFetched
		start := time.Now()
		y, err := primitives.Retile(ctx, e, runtime.MakeReady(x), primitives.Tiled(annotate.Column)).Get(ctx)
		if err != nil {
			return err
		}
		if err := barrier(); err != nil {
			return err
		}
		s := time.Since(start).Seconds()
		if got := e.Counters().BytesFetched - before; got != uint64(want) {
			return fmt.Errorf("retile on locality %d fetched %d bytes, want %d (the plan's pieces from other localities)", e.Locality(), got, want)
		}
		y.Release()
		if r > 0 {
			times = append(times, s)
		}
	}
	if e.Locality() == 0 {
		slices.Sort(times)
		med := times[len(times)/2]
		if len(times)%2 == 0 {
			med = (times[len(times)/2-1] + times[len(times)/2]) / 2
		}
		moved := 8 * annotate.Moved(plan)
		fmt.Printf("retile: %d x %d row -> column on %d localities: %d bytes moved in %.4f s (median of %d)\n", n, n, e.Size(), moved, med, reps)
		benchline.Print(os.Stdout, fmt.Sprintf("Retile/n=%d", n), reps, benchline.Metric{Value: med, Unit: "s/op"},
			benchline.Metric{Value: float64(moved), Unit: "bytes"}, benchline.Metric{Value: float64(moved) / med / 1e9, Unit: "GB/s"})
	}
	return nil
}
