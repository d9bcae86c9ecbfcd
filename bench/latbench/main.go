// Command latbench measures how the latency of an action grows with the
// number of localities: an SPMD program started with `tessera run -n N
// latbench`.
//
//	fan    locality 0 calls a 64-byte echo action on localities 1..N-1 in
//	       turn, one call in flight; the others only serve
//	ring   every locality calls its right neighbour at the same time, one
//	       call in flight each
//
// Each measurement warms up with -warmup calls per caller, then times -n.
// Locality 0 prints
//
//	BenchmarkLat/fan 3000 31.2 us/rtt
//	BenchmarkLat/ring 3000 48.0 us/rtt
//
// with the mean microseconds per round trip (for ring, the slowest
// locality's mean).
package main

import (
	"context"
	"flag"
	"github.com/tessera-amt/tessera/bench/internal/benchline"
	"os"
	"time"

	"github.com/tessera-amt/tessera/runtime"
)

func main() {
	n := flag.Int("n", 5000, "timed round trips per caller")
	warm := flag.Int("warmup", 500, "round trips per caller before timing")
	flag.Parse()
	reg := runtime.NewRegistry()
	echo := runtime.Register(reg, "latbench.echo", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
	os.Exit(runtime.Main(runtime.Config{Registry: reg}, func(ctx context.Context, rt *runtime.Runtime) error {
		comm, err := runtime.NewCommunicator(rt, "latbench", nil, 0)
		if err != nil {
			return err
		}
		defer comm.Close()
		here, size := rt.Here(), rt.NumLocalities()
		msg := make([]byte, 64)
		calls := func(count int, target func(i int) uint32) error {
			for i := range count {
				if _, err := runtime.Async(ctx, rt.Locality(target(i)), echo, msg).Get(ctx); err != nil {
					return err
				}
			}
			return nil
		}
		// fan: locality 0 calls every other locality in turn.
		fanTarget := func(i int) uint32 { return 1 + uint32(i)%(size-1) }
		var fan float64
		if err := comm.Barrier(ctx).Err(ctx); err != nil {
			return err
		}
		if here == 0 && size > 1 {
			if err := calls(*warm, fanTarget); err != nil {
				return err
			}
			start := time.Now()
			if err := calls(*n, fanTarget); err != nil {
				return err
			}
			fan = float64(time.Since(start).Microseconds()) / float64(*n)
		}
		// ring: everyone calls its right neighbour at once.
		right := func(int) uint32 { return (here + 1) % size }
		if err := comm.Barrier(ctx).Err(ctx); err != nil {
			return err
		}
		if err := calls(*warm, right); err != nil {
			return err
		}
		if err := comm.Barrier(ctx).Err(ctx); err != nil {
			return err
		}
		start := time.Now()
		if err := calls(*n, right); err != nil {
			return err
		}
		mine := float64(time.Since(start).Microseconds()) / float64(*n)
		worst, err := comm.AllReduce(ctx, []float64{mine}, runtime.ReduceMax).Get(ctx)
		if err != nil {
			return err
		}
		if here == 0 {
			if size > 1 {
				benchline.Print(os.Stdout, "Lat/fan", *n, benchline.Metric{Value: fan, Unit: "us/rtt"})
			}
			benchline.Print(os.Stdout, "Lat/ring", *n, benchline.Metric{Value: worst[0], Unit: "us/rtt"})
		}
		return nil
	}))
}
