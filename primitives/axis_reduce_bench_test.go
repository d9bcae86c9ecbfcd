package primitives

import (
	"context"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/runtime"
)

// BenchmarkNormalizeColumns times the column normalisation (x -
// x.mean(0)) / x.std(0) of a row-tiled 200,000 x 64 array on 2 localities
// in this process: two reductions along the split axis (one AllGather of
// 64 partials each) and two broadcasts against the replicated results,
// which move nothing (bytes-fetched/op reports it). ns/op is locality 0's
// time per normalisation, set-up excluded.
func BenchmarkNormalizeColumns(b *testing.B) {
	const rows, cols = 200_000, 64
	ctx := context.Background()
	reg := runtime.NewRegistry()
	acts := Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, 2, runtime.Config{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	var took time.Duration
	var fetched uint64
	n := b.N
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		x := Random(ctx, e, []int{rows, cols}, Layout{}, 1)
		if _, err := x.Get(ctx); err != nil {
			return err
		}
		before := e.Counters().BytesFetched
		start := time.Now()
		for range n {
			y, err := Div(ctx, e, Sub(ctx, e, x, MeanAxis(ctx, e, x, 0, false)), StdAxis(ctx, e, x, 0, false)).Get(ctx)
			if err != nil {
				return err
			}
			y.Release()
		}
		if e.Locality() == 0 {
			took = time.Since(start)
			fetched = e.Counters().BytesFetched - before
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(took.Nanoseconds())/float64(n), "ns/op")
	b.ReportMetric(float64(fetched)/float64(n), "bytes-fetched/op")
	b.ReportMetric(1e3*float64(rows*cols*8)/(float64(took.Nanoseconds())/float64(n)), "MB/s")
}
