package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func startOne(t *testing.T, cfg Config) *Runtime {
	t.Helper()
	job, err := StartLocal(testCtx(t), 1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(job.Close)
	return job.Localities[0]
}

func TestReadyAndFailedFutures(t *testing.T) {
	ctx := testCtx(t)
	if v, err := MakeReady(42).Get(ctx); v != 42 || err != nil {
		t.Fatalf("MakeReady: %v %v", v, err)
	}
	boom := errors.New("boom")
	if _, err := MakeFailed[int](boom).Get(ctx); !errors.Is(err, boom) {
		t.Fatalf("MakeFailed: %v", err)
	}
	// Combinators over futures made outside any runtime still work.
	f := Then(ctx, MakeReady(2), func(ctx context.Context, v int) (int, error) { return v * 10, nil })
	if v, err := f.Get(ctx); v != 20 || err != nil {
		t.Fatalf("Then on ready future: %v %v", v, err)
	}
}

func TestGetHonoursContext(t *testing.T) {
	f := newFuture[int](nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("gave up")
	bound := testCtx(t)
	go func() { // cancel once Get waits
		waitUntil(bound, "Get waits", func() bool { _, any := awaited(f); return any })
		cancel(cause)
	}()
	if _, err := f.Get(ctx); !errors.Is(err, cause) {
		t.Fatalf("Get after cancel = %v, want the cause", err)
	}
}

func TestThenChainsAndPropagatesErrors(t *testing.T) {
	ctx := testCtx(t)
	rt := startOne(t, Config{})
	f := Spawn(ctx, rt, func(ctx context.Context) (int, error) { return 1, nil })
	for range 100 {
		f = Then(ctx, f, func(ctx context.Context, v int) (int, error) { return v + 1, nil })
	}
	if v, err := f.Get(ctx); v != 101 || err != nil {
		t.Fatalf("chain of 100: %v %v", v, err)
	}
	boom := errors.New("boom")
	ran := false
	g := Then(ctx, MakeFailed[int](boom), func(ctx context.Context, v int) (int, error) { ran = true; return 0, nil })
	if _, err := g.Get(ctx); !errors.Is(err, boom) || ran {
		t.Fatalf("Then after failure: err %v, continuation ran %v", err, ran)
	}
	p := Then(ctx, MakeReady(1), func(ctx context.Context, v int) (int, error) { panic("no") })
	if _, err := p.Get(ctx); !errors.Is(err, ErrActionPanic) {
		t.Fatalf("panicking continuation: %v", err)
	}
}

func TestWhenAllWhenAnyDataflow(t *testing.T) {
	ctx := testCtx(t)
	rt := startOne(t, Config{})
	var fs []*Future[int]
	for i := range 50 {
		fs = append(fs, Spawn(ctx, rt, func(ctx context.Context) (int, error) { return i * i, nil }))
	}
	vs, err := WhenAll(fs...).Get(ctx)
	if err != nil || len(vs) != 50 {
		t.Fatalf("WhenAll: %v %v", vs, err)
	}
	for i, v := range vs {
		if v != i*i {
			t.Fatalf("WhenAll[%d] = %d", i, v)
		}
	}
	if vs, err := WhenAll[int]().Get(ctx); err != nil || len(vs) != 0 {
		t.Fatalf("WhenAll of nothing: %v %v", vs, err)
	}
	boom := errors.New("boom")
	never := newFuture[int](nil)
	if _, err := WhenAll(never, MakeFailed[int](boom)).Get(ctx); !errors.Is(err, boom) {
		t.Fatalf("WhenAll with a failure: %v", err)
	}

	slow := newFuture[string](nil)
	fast := Spawn(ctx, rt, func(ctx context.Context) (string, error) { return "fast", nil })
	r, err := WhenAny(slow, fast).Get(ctx)
	if err != nil || r.Index != 1 || r.Value != "fast" {
		t.Fatalf("WhenAny: %+v %v", r, err)
	}

	sum := Dataflow(ctx, func(ctx context.Context, vs []int) (int, error) {
		s := 0
		for _, v := range vs {
			s += v
		}
		return s, nil
	}, fs...)
	if v, err := sum.Get(ctx); v != 40425 || err != nil {
		t.Fatalf("Dataflow sum: %v %v", v, err)
	}
	d2 := Dataflow2(ctx, func(ctx context.Context, a int, b string) (string, error) {
		return fmt.Sprint(a, b), nil
	}, MakeReady(7), fast)
	if v, err := d2.Get(ctx); v != "7fast" || err != nil {
		t.Fatalf("Dataflow2: %v %v", v, err)
	}
}

// recorder is a TaskObserver that keeps what it saw.
type recorder struct {
	mu                  sync.Mutex
	starts              map[uint64]TaskInfo
	stops               map[uint64]TaskInfo
	yields, resumes     int
	running, maxRunning int
}

func newRecorder() *recorder {
	return &recorder{starts: map[uint64]TaskInfo{}, stops: map[uint64]TaskInfo{}}
}

func (r *recorder) TaskStart(i TaskInfo) {
	r.mu.Lock()
	r.starts[i.GUID] = i
	r.running++
	r.maxRunning = max(r.maxRunning, r.running)
	r.mu.Unlock()
}
func (r *recorder) TaskStop(i TaskInfo) {
	r.mu.Lock()
	r.stops[i.GUID] = i
	r.running--
	r.mu.Unlock()
}
func (r *recorder) TaskYield(i TaskInfo) {
	r.mu.Lock()
	r.yields++
	r.running--
	r.mu.Unlock()
}
func (r *recorder) TaskResume(i TaskInfo) {
	r.mu.Lock()
	r.resumes++
	r.running++
	r.maxRunning = max(r.maxRunning, r.running)
	r.mu.Unlock()
}

// A task that waits gives its lane back: with one lane, a parent that waits
// for its children must let them run, and no more than one task ever
// computes at a time.
func TestBlockedTaskGivesLaneBack(t *testing.T) {
	ctx := testCtx(t)
	rec := newRecorder()
	rt := startOne(t, Config{Lanes: 1, Observer: rec})
	parent := Spawn(ctx, rt, func(ctx context.Context) (int, error) {
		var kids []*Future[int]
		for i := range 20 {
			kids = append(kids, Spawn(ctx, rt, func(ctx context.Context) (int, error) { return i, nil }))
		}
		total := 0
		for _, k := range kids {
			v, err := k.Get(ctx)
			if err != nil {
				return 0, err
			}
			total += v
		}
		return total, nil
	})
	v, err := parent.Get(ctx)
	if err != nil || v != 190 {
		t.Fatalf("parent: %v %v", v, err)
	}
	rt.Finalize(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.maxRunning != 1 {
		t.Errorf("%d tasks ran at once on one lane", rec.maxRunning)
	}
	if rec.yields == 0 || rec.yields != rec.resumes {
		t.Errorf("yields %d, resumes %d", rec.yields, rec.resumes)
	}
	var parentGUID uint64
	for g, i := range rec.starts {
		if i.Parent == 0 {
			parentGUID = g
		}
	}
	kids := 0
	for g, i := range rec.starts {
		if _, ok := rec.stops[g]; !ok {
			t.Errorf("task %x started, never stopped", g)
		}
		if i.Parent == parentGUID && parentGUID != 0 {
			kids++
			if i.Lane != 0 {
				t.Errorf("task on lane %d with one lane", i.Lane)
			}
		}
		if GUIDLocality(g) != 0 {
			t.Errorf("GUID %x does not carry locality 0", g)
		}
	}
	if kids != 20 {
		t.Errorf("%d children recorded with the parent's GUID, want 20", kids)
	}
}

// Parent GUIDs travel with parcels: an action's task names the remote task
// that called it, and tasks are named after the action.
func TestParentGUIDAcrossLocalities(t *testing.T) {
	ctx := testCtx(t)
	recs := []*recorder{newRecorder(), newRecorder()}
	reg := NewRegistry()
	echo := Register(reg, "test.echo", func(ctx context.Context, v int) (uint64, error) { return TaskGUID(ctx), nil })
	job, err := startObserved(ctx, recs, reg)
	if err != nil {
		t.Fatal(err)
	}
	var callerGUID uint64
	f := Spawn(ctx, job.Localities[0], func(ctx context.Context) (uint64, error) {
		callerGUID = TaskGUID(ctx)
		return Async(ctx, job.Localities[0].Locality(1), echo, 1).Get(ctx)
	})
	remoteGUID, err := f.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	job.Close()
	recs[1].mu.Lock()
	info, ok := recs[1].starts[remoteGUID]
	recs[1].mu.Unlock()
	if !ok {
		t.Fatalf("locality 1 never saw task %x", remoteGUID)
	}
	if info.Parent != callerGUID || info.Name != "test.echo" || info.Locality != 1 || GUIDLocality(remoteGUID) != 1 {
		t.Fatalf("remote task %+v, want parent %x, name test.echo, locality 1", info, callerGUID)
	}
}

func startObserved(ctx context.Context, recs []*recorder, reg *Registry) (*LocalJob, error) {
	// Each locality gets its own observer: start them one config at a time.
	job, err := StartLocal(ctx, len(recs), Config{Registry: reg, Observer: multiObserver(recs)})
	return job, err
}

// multiObserver sends each task to the recorder of its locality.
type multiObserver []*recorder

func (m multiObserver) TaskStart(i TaskInfo)  { m[i.Locality].TaskStart(i) }
func (m multiObserver) TaskStop(i TaskInfo)   { m[i.Locality].TaskStop(i) }
func (m multiObserver) TaskYield(i TaskInfo)  { m[i.Locality].TaskYield(i) }
func (m multiObserver) TaskResume(i TaskInfo) { m[i.Locality].TaskResume(i) }

// Shutting a locality down leaves nobody waiting: a task blocked on a future
// that will never be fulfilled returns, queued work fails with ErrShutdown,
// and new work fails at once.
func TestShutdownReleasesWaiters(t *testing.T) {
	ctx := testCtx(t)
	rt := startOne(t, Config{Lanes: 1})
	never := newFuture[int](nil)
	blocked := Spawn(ctx, rt, func(ctx context.Context) (int, error) { return never.Get(ctx) })
	for rt.sched.yields.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// Occupy the only lane so the next task stays queued.
	hold := make(chan struct{})
	Spawn(ctx, rt, func(ctx context.Context) (int, error) { <-hold; return 0, nil })
	queued := Spawn(ctx, rt, func(ctx context.Context) (int, error) { return 1, nil })
	rt.shutdown(ErrShutdown)
	close(hold)
	if _, err := blocked.Get(ctx); !errors.Is(err, ErrShutdown) {
		t.Errorf("task blocked at shutdown: %v, want ErrShutdown", err)
	}
	if _, err := queued.Get(ctx); !errors.Is(err, ErrShutdown) {
		t.Errorf("task queued at shutdown: %v, want ErrShutdown", err)
	}
	late := Spawn(ctx, rt, func(ctx context.Context) (int, error) { return 2, nil })
	if _, err := late.Get(ctx); !errors.Is(err, ErrShutdown) {
		t.Errorf("task spawned after shutdown: %v, want ErrShutdown", err)
	}
}

// Tasks that wait with their own context, which ends only with the
// locality, park on their wake channels: a fulfilled future wakes its
// waiter, and the locality's end wakes every other parked one — two on one
// future (the second waits on the future's channel), one on another.
func TestShutdownReleasesParkedWaiters(t *testing.T) {
	ctx := testCtx(t)
	rt := startOne(t, Config{Lanes: 1})
	never, other, soon := newFuture[int](nil), newFuture[int](nil), newFuture[int](nil)
	bg := context.Background() // the tasks' functions get the tasks themselves
	waits := []*Future[int]{
		Spawn(bg, rt, func(ctx context.Context) (int, error) { return never.Get(ctx) }),
		Spawn(bg, rt, func(ctx context.Context) (int, error) { return never.Get(ctx) }),
		Spawn(bg, rt, func(ctx context.Context) (int, error) { return other.Get(ctx) }),
	}
	woken := Spawn(bg, rt, func(ctx context.Context) (int, error) { return soon.Get(ctx) })
	for rt.sched.yields.Load() < 4 {
		time.Sleep(time.Millisecond)
	}
	soon.set(7, nil)
	if v, err := woken.Get(ctx); v != 7 || err != nil {
		t.Fatalf("parked task woken by its future: %v, %v", v, err)
	}
	rt.shutdown(ErrShutdown)
	for i, f := range waits {
		if _, err := f.Get(ctx); !errors.Is(err, ErrShutdown) {
			t.Errorf("task %d parked at shutdown: %v, want ErrShutdown", i, err)
		}
	}
	rt.sched.mu.Lock()
	defer rt.sched.mu.Unlock()
	if rt.sched.parked != nil {
		t.Error("tasks still listed as parked after they returned")
	}
}

// Goroutines of one task that wait with its context, each for a future of
// its own, all return once their futures are fulfilled, in any order: only
// one of them at a time parks on the task's wake channel, whose wake-ups
// the others would otherwise take.
func TestGoroutinesOfOneTaskWait(t *testing.T) {
	ctx := testCtx(t)
	rt := startOne(t, Config{Lanes: 2})
	const n = 16
	futures := make([]*Future[int], n)
	for i := range futures {
		futures[i] = newFuture[int](nil)
	}
	done := Spawn(context.Background(), rt, func(tctx context.Context) (int, error) {
		var wg sync.WaitGroup
		sum := 0
		var mu sync.Mutex
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := futures[i].Get(tctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				sum += v
				mu.Unlock()
			}()
		}
		wg.Wait()
		return sum, nil
	})
	// Every goroutine waits before any future comes; one of them parks.
	var parked int
	err := waitUntil(ctx, "every goroutine waits", func() bool {
		parked = 0
		for _, f := range futures {
			p, any := awaited(f)
			if !any {
				return false
			}
			if p {
				parked++
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if parked != 1 {
		t.Fatalf("%d goroutines of one task park on its wake channel, want 1", parked)
	}
	for round := range 3 {
		for i := n - 1 - round; i >= 0; i -= 3 {
			futures[i].set(i, nil)
		}
	}
	if got, err := done.Get(ctx); err != nil || got != n*(n-1)/2 {
		t.Fatalf("sum %d, %v; want %d", got, err, n*(n-1)/2)
	}
}

// A task from SpawnNamed reaches observers under its name; one from Spawn
// under its function's.
func TestSpawnNamedNamesTheTask(t *testing.T) {
	ctx := testCtx(t)
	rec := newRecorder()
	rt := startOne(t, Config{Lanes: 1, Observer: rec})
	named := SpawnNamed(ctx, rt, "phase.solve", func(ctx context.Context) (int, error) { return 1, nil })
	plain := Spawn(ctx, rt, func(ctx context.Context) (int, error) { return 2, nil })
	if _, err := WhenAll(named, plain).Get(ctx); err != nil {
		t.Fatal(err)
	}
	rt.Finalize(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var names []string
	for _, i := range rec.stops {
		names = append(names, i.Name)
	}
	if !slices.Contains(names, "phase.solve") || !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "TestSpawnNamedNamesTheTask.func2") }) {
		t.Errorf("task names %q: want phase.solve and the plain task's function", names)
	}
}

// A task that waits for a local task not started yet runs it itself, on its
// own lane and goroutine, before tasks queued earlier; observers see the
// waiter step aside and come back. It does the same when it waits with a
// context derived from its own that may end first: how a task waits does
// not depend on which of its contexts it passes.
func TestGetRunsTheTaskItWaitsFor(t *testing.T) {
	ctx := testCtx(t)
	rec := newRecorder()
	rt := startOne(t, Config{Lanes: 1, Observer: rec})
	type result struct {
		order   []string
		sameG   bool
		yielded int
	}
	got, err := Spawn(ctx, rt, func(ctx context.Context) (result, error) {
		var mu sync.Mutex
		var order []string
		note := func(s string) {
			mu.Lock()
			order = append(order, s)
			mu.Unlock()
		}
		gid := goroutineID()
		first := Spawn(ctx, rt, func(context.Context) (int, error) { note("first"); return 1, nil })
		var sameG bool
		second := Spawn(ctx, rt, func(context.Context) (int, error) { note("second"); sameG = goroutineID() == gid; return 2, nil })
		rec.mu.Lock()
		yields := rec.yields
		rec.mu.Unlock()
		if v, err := second.Get(ctx); err != nil || v != 2 {
			return result{}, fmt.Errorf("second: %v %v", v, err)
		}
		rec.mu.Lock()
		yielded := rec.yields - yields
		rec.mu.Unlock()
		// With a context that can end on its own, the waiter runs the
		// task too, before first, still queued.
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var thirdSameG bool
		third := Spawn(ctx, rt, func(context.Context) (int, error) {
			note("third")
			thirdSameG = goroutineID() == gid
			return 3, nil
		})
		if _, err := third.Get(wctx); err != nil {
			return result{}, err
		}
		sameG = sameG && thirdSameG
		if _, err := first.Get(ctx); err != nil {
			return result{}, err
		}
		return result{order: order, sameG: sameG, yielded: yielded}, nil
	}).Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"second", "third", "first"}; !slices.Equal(got.order, want) {
		t.Errorf("tasks ran in the order %q, want %q", got.order, want)
	}
	if !got.sameG {
		t.Error("an awaited task ran on another goroutine than its waiter")
	}
	if got.yielded != 1 {
		t.Errorf("the waiter stepped aside %d times while the awaited task ran, want 1", got.yielded)
	}
	rt.Finalize(ctx)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.maxRunning != 1 || rec.yields != rec.resumes {
		t.Errorf("at most %d tasks at once on one lane; yields %d, resumes %d", rec.maxRunning, rec.yields, rec.resumes)
	}
}

// goroutineID returns the calling goroutine's id, from its stack header.
func goroutineID() string {
	b := make([]byte, 64)
	b = b[:goruntime.Stack(b, false)]
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// A chain of tasks each waiting for the next, far longer than a waiter
// runs tasks inside its own wait, completes: past maxNested the waits park
// as before.
func TestLongChainOfWaits(t *testing.T) {
	ctx := testCtx(t)
	rt := startOne(t, Config{Lanes: 1})
	var link func(ctx context.Context, n int) (int, error)
	link = func(ctx context.Context, n int) (int, error) {
		if n == 0 {
			return 0, nil
		}
		v, err := Spawn(ctx, rt, func(ctx context.Context) (int, error) { return link(ctx, n-1) }).Get(ctx)
		return v + 1, err
	}
	const n = 10 * maxNested
	if v, err := Spawn(ctx, rt, func(ctx context.Context) (int, error) { return link(ctx, n) }).Get(ctx); err != nil || v != n {
		t.Fatalf("chain of %d: %v, %v", n, v, err)
	}
}
