package bench

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime"
	"github.com/tessera-amt/tessera/trace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discardSpans is an exporter that drops what it is given: the spans are
// made and handed over, as to a real exporter, but not sent anywhere.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkSpansRoundTrip measures the action round trip (64 bytes each
// way) between two localities in this process over loopback TCP, in three
// jobs side by side: without a span hook (off), with trace.NewOTelSpans
// over the global OpenTelemetry provider, a no-op (noop), and over an SDK
// provider that samples every span and hands it to a batch processor (on).
// The calls of the three jobs alternate one by one, the order rotating
// every round, so that the drift of a shared host falls on all alike. It
// reports wall and CPU time (the process's, which other programs do not
// inflate) per call of each, their ratios to off, and the allocations per
// call of each (both localities, counted over 2,000 calls after the timed
// rounds).
func BenchmarkSpansRoundTrip(b *testing.B) {
	reg := runtime.NewRegistry()
	echo := runtime.Register(reg, "bench.echo", func(ctx context.Context, p []byte) ([]byte, error) { return p, nil })
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(discardSpans{}))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	hooks := []trace.SpanHook{nil, trace.NewOTelSpans(nil), trace.NewOTelSpans(tp)}
	names := []string{"off", "noop", "on"}
	jobs := make([][]*runtime.Runtime, len(hooks))
	for i, h := range hooks {
		jobs[i] = tcpJobWith(b, 2, runtime.Config{Registry: reg, Spans: h})
	}
	ctx := context.Background()
	payload := make([]byte, 64)
	call := func(j int) {
		if _, err := runtime.Async(ctx, jobs[j][0].Locality(1), echo, payload).Get(ctx); err != nil {
			b.Fatal(err)
		}
	}
	const calls = 5000
	wall := make([]time.Duration, len(jobs))
	cpu := make([]time.Duration, len(jobs))
	round := func(first int) {
		for range calls {
			for k := range jobs {
				j := (first + k) % len(jobs)
				w0, c0 := time.Now(), processCPU()
				call(j)
				cpu[j] += processCPU() - c0
				wall[j] += time.Since(w0)
			}
		}
	}
	round(0) // warm up
	clear(wall)
	clear(cpu)
	b.ResetTimer()
	for i := range b.N {
		round(i % len(jobs))
	}
	b.StopTimer()
	n := float64(b.N * calls)
	for j, name := range names {
		b.ReportMetric(float64(wall[j].Nanoseconds())/n, name+"-ns/call")
		b.ReportMetric(float64(cpu[j].Nanoseconds())/n, name+"-cpu-ns/call")
		b.ReportMetric(testing.AllocsPerRun(2000, func() { call(j) }), name+"-allocs/call")
	}
	b.ReportMetric(float64(wall[1])/float64(wall[0]), "noop/off")
	b.ReportMetric(float64(wall[2])/float64(wall[0]), "on/off")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-noop/off")
	b.ReportMetric(float64(cpu[2])/float64(cpu[0]), "cpu-on/off")
}

// tcpJobWith starts n localities in this process with copies of base,
// joined over loopback TCP as separate processes would be.
func tcpJobWith(b *testing.B, n int, base runtime.Config) []*runtime.Runtime {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rts := make([]*runtime.Runtime, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cfg := base
		cfg.Locality, cfg.NumLocalities, cfg.RootAddr, cfg.ListenHost = uint32(i), uint32(n), ln.Addr().String(), "127.0.0.1"
		cfg.Secret = []byte("spans-benchmark-secret-32-bytes!")
		if i == 0 {
			cfg.Listener = ln
		}
		wg.Add(1)
		go func() { defer wg.Done(); rts[i], errs[i] = runtime.Start(ctx, cfg) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		var wg sync.WaitGroup
		for _, rt := range rts {
			wg.Add(1)
			go func() { defer wg.Done(); rt.Finalize(ctx) }()
		}
		wg.Wait()
	})
	return rts
}
