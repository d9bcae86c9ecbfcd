package bench

import (
	"context"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime"
	"github.com/tessera-amt/tessera/trace"
)

// BenchmarkTracerEvent is the tracer's own cost: one lane's Enter (with the
// task's GUID and Parent GUID) and Leave, as the runtime calls them for a
// task that runs to its end. It reports ns and bytes of the event file per
// event, and allocations (none once the region is known).
func BenchmarkTracerEvent(b *testing.B) {
	dir := b.TempDir()
	tr, err := trace.NewTracer(trace.TracerConfig{Dir: dir, Locality: 0, Lanes: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	guid := uint64(1) << 44
	cpu0 := processCPU()
	for b.Loop() {
		guid++
		tr.Enter(0, "bench.task", guid, guid-1)
		tr.Leave(0, "bench.task")
	}
	cpu := processCPU() - cpu0
	if err := tr.Close(); err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, trace.ArchiveName, "0.evt"))
	if err != nil {
		b.Fatal(err)
	}
	events := 2 * float64(b.N)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
	b.ReportMetric(float64(info.Size())/events, "bytes/event")
}

// spin returns a task of n rounds of integer arithmetic: about a
// microsecond per 600 rounds on the machine of docs/benchmarks.md.
func spin(n uint64) func(context.Context) (struct{}, error) {
	return func(context.Context) (struct{}, error) {
		x := uint64(1)
		for i := range n {
			x = x*6364136223846793005 + i
		}
		if x == 42 {
			return struct{}{}, context.Canceled
		}
		return struct{}{}, nil
	}
}

// tracedRound spawns n tasks of fn from a root task and waits for them.
func tracedRound(ctx context.Context, rt *runtime.Runtime, n int, fn func(context.Context) (struct{}, error)) (time.Duration, error) {
	return runtime.Spawn(ctx, rt, func(ctx context.Context) (time.Duration, error) {
		fs := make([]*runtime.Future[struct{}], n)
		start := time.Now()
		for i := range fs {
			fs[i] = runtime.Spawn(ctx, rt, fn)
		}
		if err := runtime.WhenAll(fs...).Err(ctx); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}).Get(ctx)
}

// BenchmarkTracingTasks runs the same task-heavy rounds on two one-locality
// runtimes of the same process, alternating: one with the tracer on (OTF2
// to a temporary directory, sampler at its default 100ms) and one without.
// It reports ns per task of each and the ratio traced/untraced, in wall
// time and in the process's CPU time (which other programs on a shared
// machine do not inflate), for empty tasks (the worst case) and for tasks
// of about one and ten microseconds of arithmetic.
func BenchmarkTracingTasks(b *testing.B) {
	for _, c := range []struct {
		name  string
		tasks int
		fn    func(context.Context) (struct{}, error)
	}{{"empty", 200_000, empty}, {"1us", 200_000, spin(600)}, {"10us", 20_000, spin(6000)}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			off, err := runtime.StartLocal(ctx, 1, runtime.Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer off.Close()
			on, err := runtime.StartLocal(ctx, 1, runtime.Config{Trace: runtime.TraceConfig{Dir: b.TempDir()}})
			if err != nil {
				b.Fatal(err)
			}
			defer on.Close()
			var traced, plain, tracedCPU, plainCPU time.Duration
			for i := 0; b.Loop(); i++ {
				rts := []*runtime.Runtime{on.Localities[0], off.Localities[0]}
				if i%2 == 1 {
					rts[0], rts[1] = rts[1], rts[0]
				}
				for _, rt := range rts {
					goruntime.GC()
					cpu0 := processCPU()
					d, err := tracedRound(ctx, rt, c.tasks, c.fn)
					if err != nil {
						b.Fatal(err)
					}
					cpu := processCPU() - cpu0
					if rt == on.Localities[0] {
						traced += d
						tracedCPU += cpu
					} else {
						plain += d
						plainCPU += cpu
					}
				}
			}
			n := float64(b.N) * float64(c.tasks)
			b.ReportMetric(float64(traced.Nanoseconds())/n, "traced-ns/task")
			b.ReportMetric(float64(plain.Nanoseconds())/n, "untraced-ns/task")
			b.ReportMetric(float64(traced)/float64(plain), "ratio")
			b.ReportMetric(float64(tracedCPU.Nanoseconds())/n, "traced-cpu-ns/task")
			b.ReportMetric(float64(plainCPU.Nanoseconds())/n, "untraced-cpu-ns/task")
			b.ReportMetric(float64(tracedCPU)/float64(plainCPU), "cpu-ratio")
		})
	}
}
