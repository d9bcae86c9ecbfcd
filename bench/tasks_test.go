package bench

import (
	"context"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime"
)

// tasksPerRound is how many empty tasks one round spawns and awaits.
const tasksPerRound = 1_000_000

func empty(context.Context) (struct{}, error) { return struct{}{}, nil }

// spawnRound spawns tasksPerRound empty tasks with runtime.Spawn from a root
// task — as a Tessera program's body would — and waits for all of them
// with WhenAll. It returns the time from the first Spawn until WhenAll is
// ready.
func spawnRound(ctx context.Context, rt *runtime.Runtime) (time.Duration, error) {
	return runtime.Spawn(ctx, rt, func(ctx context.Context) (time.Duration, error) {
		fs := make([]*runtime.Future[struct{}], tasksPerRound)
		start := time.Now()
		for i := range fs {
			fs[i] = runtime.Spawn(ctx, rt, empty)
		}
		if err := runtime.WhenAll(fs...).Err(ctx); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}).Get(ctx)
}

// goroutineRound is the baseline: a goroutine per task and a channel per
// result, each received in turn.
func goroutineRound() time.Duration {
	chs := make([]chan struct{}, tasksPerRound)
	start := time.Now()
	for i := range chs {
		ch := make(chan struct{}, 1)
		chs[i] = ch
		go func() {
			v, _ := empty(context.Background())
			ch <- v
		}()
	}
	for _, ch := range chs {
		<-ch
	}
	return time.Since(start)
}

// BenchmarkTasks measures, in the same process and alternating, one round of
// 1,000,000 Spawned tasks on a one-locality runtime and one round of
// 1,000,000 goroutines. It reports ns per task of each and their ratio
// (target: tessera/goroutine <= 2). Each iteration is one round of both.
func BenchmarkTasks(b *testing.B) {
	ctx := context.Background()
	job, err := runtime.StartLocal(ctx, 1, runtime.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[0]

	var tess, raw time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// Each round starts from a collected heap: the garbage of one must
		// not be charged to the next. Alternate which goes first.
		rounds := []func() error{
			func() error {
				goruntime.GC()
				d, err := spawnRound(ctx, rt)
				tess += d
				return err
			},
			func() error {
				goruntime.GC()
				raw += goroutineRound()
				return nil
			},
		}
		if i%2 == 1 {
			rounds[0], rounds[1] = rounds[1], rounds[0]
		}
		for _, r := range rounds {
			if err := r(); err != nil {
				b.Fatal(err)
			}
		}
	}
	n := float64(b.N) * tasksPerRound
	b.ReportMetric(float64(tess.Nanoseconds())/n, "tessera-ns/task")
	b.ReportMetric(float64(raw.Nanoseconds())/n, "goroutine-ns/task")
	b.ReportMetric(float64(tess)/float64(raw), "ratio")
}
