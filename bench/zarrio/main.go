// Command zarrio measures Zarr I/O of distributed arrays: an SPMD program,
// one process per locality, started with `tessera run -n N zarrio`.
//
// -test io writes a -mib MiB array (row-tiled, -cols columns, from
// primitives.Random) with primitives.WriteZarr, no compressor and the
// default 8 MiB chunks, then reads it back with primitives.ReadZarr, -n
// times each. A write is timed until its data is on the disk: the write,
// then sync(2) on locality 0, then a barrier. Before each read the page
// cache is dropped (/proc/sys/vm/drop_caches after a sync, as root; the
// line says 1 cache-dropped, or 0 when it could not). Locality 0 prints
// the median rates
//
//	BenchmarkZarr/write 3 0.812 GB/s 0.790 min-GB/s 1 cache-dropped
//	BenchmarkZarr/read 3 1.23 GB/s 1.10 min-GB/s 1 cache-dropped
//
// which bench/dd_rate.sh's sequential rates of the same disk, in the same
// run, are the baseline of.
//
// -test normalise normalises the columns of the (-rows, -cols) Zarr array
// in directory -input (made first if missing:
// primitives.Random, no compressor, chunks of 62,500 rows) and writes the
// result to the Zarr directory -output, (x - mean) / std with NumPy's std
// (ddof 0): by default with primitives.ZScoreZarr, which streams over the
// chunks (one pass for the columns' moments, one AllGather, one pass
// normalising and writing each chunk) without materialising the array;
// with -tiles as ReadZarr, primitives.ZScore along axis 0 (scipy's
// zscore on the array: one pass for the mean and the variance together,
// one AllGather, one pass for the result) and WriteZarr; with -steps as
// ReadZarr, Sub and Div of MeanAxis and StdAxis, as (x - x.mean(0)) /
// x.std(0), and WriteZarr. The whole, read to written, is timed -n times
// (-cpuprofile FILE writes each locality's CPU profile to
// FILE.L<locality>):
//
//	BenchmarkNormalise/tessera 3 4.1 s/op 4.0 min-s/op 1.2345e+02 checksum
//
// The checksum is the sum of the result's first 1000 rows, which
// bench/normalise_dask.py prints for the same input.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/bench/internal/benchline"
	"github.com/tessera-amt/tessera/bench/internal/profile"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

type options struct {
	test          string
	dir           string
	mib           int
	rows, cols    int
	input, output string
	n             int
	cpuprofile    string
	steps         bool
	tiles         bool
}

func main() {
	var o options
	flag.StringVar(&o.test, "test", "io", "io or normalise")
	flag.StringVar(&o.dir, "dir", os.TempDir(), "scratch directory of -test io")
	flag.IntVar(&o.mib, "mib", 1024, "MiB written and read by -test io")
	flag.IntVar(&o.rows, "rows", 4000000, "rows of the -test normalise input")
	flag.IntVar(&o.cols, "cols", 64, "columns")
	flag.StringVar(&o.input, "input", "", "Zarr input of -test normalise (made if missing)")
	flag.StringVar(&o.output, "output", "", "Zarr output of -test normalise")
	flag.IntVar(&o.n, "n", 3, "timed repetitions")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of each locality to `file`.L<locality>")
	flag.BoolVar(&o.steps, "steps", false, "-test normalise: ReadZarr, Sub and Div of MeanAxis and StdAxis, WriteZarr instead of ZScoreZarr")
	flag.BoolVar(&o.tiles, "tiles", false, "-test normalise: ReadZarr, ZScore, WriteZarr instead of ZScoreZarr")
	flag.Parse()

	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := primitives.NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		stop, err := profile.Start(o.cpuprofile, uint32(e.Locality()))
		if err != nil {
			return err
		}
		defer stop()
		c, err := runtime.NewCommunicator(rt, "zarrio-bench", nil, 0)
		if err != nil {
			return err
		}
		defer c.Close()
		switch o.test {
		case "io":
			return ioTest(ctx, e, c, o)
		case "normalise":
			return normalise(ctx, e, c, o)
		}
		return fmt.Errorf("-test %q: want io or normalise", o.test)
	}))
}

// dropCache writes back and drops the page cache; false when not allowed.
func dropCache() bool {
	syncDisks()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0o200) == nil
}

func ioTest(ctx context.Context, e *primitives.Env, c *runtime.Communicator, o options) error {
	rows := o.mib << 20 / 8 / o.cols
	bytes := float64(rows * o.cols * 8)
	x, err := primitives.Random(ctx, e, []int{rows, o.cols}, primitives.Tiled(annotate.Row), 1).Get(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(o.dir, fmt.Sprintf("zarrio-%d.zarr", os.Getppid()))
	var writes, reads []float64
	dropped := true
	for range o.n {
		if e.Locality() == 0 {
			os.RemoveAll(path)
			dropped = dropCache() && dropped
		}
		if err := c.Barrier(ctx).Err(ctx); err != nil {
			return err
		}
		start := time.Now()
		if err := primitives.WriteZarr(ctx, e, runtime.MakeReady(x), path, primitives.ZarrOptions{}).Err(ctx); err != nil {
			return err
		}
		if e.Locality() == 0 {
			syncDisks()
		}
		if err := c.Barrier(ctx).Err(ctx); err != nil {
			return err
		}
		writes = append(writes, bytes/time.Since(start).Seconds()/1e9)
		if e.Locality() == 0 {
			dropped = dropCache() && dropped
		}
		if err := c.Barrier(ctx).Err(ctx); err != nil {
			return err
		}
		start = time.Now()
		y, err := primitives.ReadZarr(ctx, e, path, primitives.ZarrReadOptions{Layout: primitives.Tiled(annotate.Row)}).Get(ctx)
		if err != nil {
			return err
		}
		reads = append(reads, bytes/time.Since(start).Seconds()/1e9)
		if !slices.Equal(y.Local(), x.Local()) {
			return errors.New("the array read differs from the array written")
		}
		y.Release()
	}
	if e.Locality() == 0 {
		os.RemoveAll(path)
		cache := 1.0
		if !dropped {
			cache = 0
		}
		for _, r := range []struct {
			name  string
			rates []float64
		}{{"write", writes}, {"read", reads}} {
			slices.Sort(r.rates)
			fmt.Println(benchline.Format("Zarr/"+r.name, len(r.rates), benchline.Metric{Value: r.rates[len(r.rates)/2], Unit: "GB/s"},
				benchline.Metric{Value: r.rates[0], Unit: "min-GB/s"}, benchline.Metric{Value: cache, Unit: "cache-dropped"}))
		}
	}
	return nil
}

func normalise(ctx context.Context, e *primitives.Env, c *runtime.Communicator, o options) error {
	if o.input == "" || o.output == "" {
		return errors.New("-test normalise needs -input and -output")
	}
	if _, err := os.Stat(filepath.Join(o.input, ".zarray")); err != nil {
		x := primitives.Random(ctx, e, []int{o.rows, o.cols}, primitives.Tiled(annotate.Row), 3)
		if err := primitives.WriteZarr(ctx, e, x, o.input, primitives.ZarrOptions{Chunks: []int{62500, o.cols}}).Err(ctx); err != nil {
			return err
		}
	}
	var times []float64
	var sum float64
	for range o.n {
		if err := c.Barrier(ctx).Err(ctx); err != nil {
			return err
		}
		start := time.Now()
		if !o.steps && !o.tiles {
			if err := primitives.ZScoreZarr(ctx, e, o.input, o.output, primitives.ZarrOptions{}).Err(ctx); err != nil {
				return err
			}
			times = append(times, time.Since(start).Seconds())
			if e.Locality() == 0 {
				var err error
				if sum, err = fileChecksum(o.output); err != nil {
					return err
				}
			}
			continue
		}
		y, err := normaliseOnce(ctx, e, o)
		if err != nil {
			return err
		}
		times = append(times, time.Since(start).Seconds())
		if sum, err = checksum(ctx, e, y); err != nil {
			return err
		}
		y.Release()
	}
	if e.Locality() == 0 {
		slices.Sort(times)
		fmt.Println(benchline.Format("Normalise/tessera", len(times), benchline.Metric{Value: times[len(times)/2], Unit: "s/op"},
			benchline.Metric{Value: times[0], Unit: "min-s/op"}) + fmt.Sprintf(" %.10e checksum", sum))
	}
	return nil
}

// normaliseOnce reads, normalises and writes once: scipy's
// zscore(x, axis=0), the library's one pass for the columns' mean and
// variance together and one pass for the result. With -steps, as
// (x - x.mean(0)) / x.std(0), each step a primitive. It returns the
// result, to release when done.
func normaliseOnce(ctx context.Context, e *primitives.Env, o options) (*primitives.Array, error) {
	x := primitives.ReadZarr(ctx, e, o.input, primitives.ZarrReadOptions{Layout: primitives.Tiled(annotate.Row)})
	temps := []*runtime.Future[*primitives.Array]{x}
	var y *runtime.Future[*primitives.Array]
	if o.steps {
		mean := primitives.MeanAxis(ctx, e, x, 0, false)
		std := primitives.StdAxis(ctx, e, x, 0, false)
		centred := primitives.Sub(ctx, e, x, mean)
		y = primitives.Div(ctx, e, centred, std)
		temps = append(temps, mean, std, centred)
	} else {
		y = primitives.ZScore(ctx, e, x, 0)
	}
	err := primitives.WriteZarr(ctx, e, y, o.output, primitives.ZarrOptions{Chunks: []int{62500, o.cols}}).Err(ctx)
	for _, f := range temps {
		if a, err := f.Get(ctx); err == nil {
			a.Release()
		}
	}
	if err != nil {
		return nil, err
	}
	return y.Get(ctx)
}

// checksum is the sum of the first 1000 rows of y, on locality 0.
func checksum(ctx context.Context, e *primitives.Env, y *primitives.Array) (float64, error) {
	if e.Locality() != 0 {
		return 0, nil
	}
	shape := y.Shape()
	b := annotate.Block{{Start: 0, Stop: min(1000, shape[0])}, {Start: 0, Stop: shape[1]}}
	vals, err := y.Fetch(ctx, b).Get(ctx)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, v := range vals {
		sum += v
	}
	return sum, nil
}
