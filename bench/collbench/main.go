// Command collbench measures Tessera's collectives: an SPMD program, one
// process per locality, started with `tessera run -n 4 collbench`.
//
//	allreduce1     AllReduce (sum) of one float64
//	allreduce1mib  AllReduce (sum) of 1 MiB (131,072 float64) per site
//	allgather1mib  AllGather of 1 MiB per site (4 MiB result on 4 sites)
//	allreduce4kib  AllReduce (sum) of 4 KiB (512 float64), the largest
//	               that goes through the board in the machine's shared
//	               memory (larger ones go through the bulk region)
//	barrier        Barrier
//	broadcast1     Broadcast of one float64 from site 0
//
// Every locality runs each measurement: a Barrier, -warmup (or
// -big-warmup) operations, a Barrier, then -n (or -big-n) operations back
// to back, each waited for before the next starts. Locality 0 times the
// second loop and prints one line per measurement
//
//	BenchmarkColl/allreduce1 2000 41.250 us/op 0.0002 GB/s
//
// with microseconds per operation and gbps = bytes per site / time per
// operation (10^9 bytes per second). Each result is given back to its
// runtime (runtime.AdoptTile, then Release) once checked, as a loop that
// is done with it would, so the next operation's result reuses its memory
// (as the Open MPI program reuses its receive buffer).
// bench/mpi/allreduce.c prints the same lines for Open MPI. -cpuprofile
// FILE writes a CPU profile of one measurement (name it with -test) per
// locality, FILE.L<locality>. -p2p sends every collective's data in
// parcels even when all localities share the machine
// (runtime.Config.PointToPointCollectives), to compare with the
// collectives through its shared memory.
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/tessera-amt/tessera/bench/internal/benchline"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/bench/internal/profile"
	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	n := flag.Int("n", 2000, "timed operations of the one-float64 AllReduce")
	warm := flag.Int("warmup", 500, "operations before timing, one float64")
	bigN := flag.Int("big-n", 100, "timed operations of 1 MiB")
	bigWarm := flag.Int("big-warmup", 10, "operations before timing, 1 MiB")
	tests := flag.String("test", "allreduce1,allreduce1mib,allgather1mib", "comma-separated measurements")
	p2p := flag.Bool("p2p", false, "collectives by parcels only, not through the machine's shared memory")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the timed loops here, suffixed .L<locality>")
	flag.Parse()
	want := map[string]bool{}
	for _, t := range strings.Split(*tests, ",") {
		want[strings.TrimSpace(t)] = true
	}
	os.Exit(runtime.Main(runtime.Config{PointToPointCollectives: *p2p}, func(ctx context.Context, rt *runtime.Runtime) error {
		c, err := runtime.NewCommunicator(rt, "collbench", nil, 0)
		if err != nil {
			return err
		}
		defer c.Close()
		sites := c.Size()
		measure := func(name string, elems, warm, n int, op func(d []float64) error) error {
			if !want[name] {
				return nil
			}
			d := make([]float64, elems)
			for i := range d {
				d[i] = float64(i%7 + c.Site())
			}
			if err := c.Barrier(ctx).Err(ctx); err != nil {
				return err
			}
			for range warm {
				if err := op(d); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			goruntime.GC()
			if err := c.Barrier(ctx).Err(ctx); err != nil {
				return err
			}
			stop, err := profile.Start(*cpuprofile, rt.Here())
			if err != nil {
				return err
			}
			defer stop()
			start := time.Now()
			for range n {
				if err := op(d); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			per := time.Since(start).Seconds() / float64(n)
			if rt.Here() == 0 {
				benchline.Print(os.Stdout, "Coll/"+name, n, benchline.Metric{Value: per * 1e6, Unit: "us/op"}, benchline.Metric{Value: float64(elems*8) / per / 1e9, Unit: "GB/s"})
			}
			return nil
		}
		allreduce := func(d []float64) error {
			r, err := c.AllReduce(ctx, d, runtime.ReduceSum).Get(ctx)
			if err == nil && len(r) != len(d) {
				err = fmt.Errorf("AllReduce returned %d elements, want %d", len(r), len(d))
			}
			runtime.AdoptTile(rt, r).Release()
			return err
		}
		allgather := func(d []float64) error {
			r, err := c.AllGather(ctx, d).Get(ctx)
			if err == nil && len(r) != sites*len(d) {
				err = fmt.Errorf("AllGather returned %d elements, want %d", len(r), sites*len(d))
			}
			runtime.AdoptTile(rt, r).Release()
			return err
		}
		barrier := func([]float64) error { return c.Barrier(ctx).Err(ctx) }
		broadcast := func(d []float64) error {
			r, err := c.Broadcast(ctx, d).Get(ctx)
			if err == nil && len(r) != len(d) {
				err = fmt.Errorf("Broadcast returned %d elements, want %d", len(r), len(d))
			}
			runtime.AdoptTile(rt, r).Release()
			return err
		}
		const mib = 1 << 20 / 8
		if err := measure("allreduce1", 1, *warm, *n, allreduce); err != nil {
			return err
		}
		if err := measure("allreduce4kib", 512, *warm, *n, allreduce); err != nil {
			return err
		}
		if err := measure("barrier", 0, *warm, *n, barrier); err != nil {
			return err
		}
		if err := measure("broadcast1", 1, *warm, *n, broadcast); err != nil {
			return err
		}
		if err := measure("allreduce1mib", mib, *bigWarm, *bigN, allreduce); err != nil {
			return err
		}
		return measure("allgather1mib", mib, *bigWarm, *bigN, allgather)
	}))
}
