package runtime

import (
	"context"
	"sync"
	"sync/atomic"
)

// Future is a value of type T that becomes ready later, or fails. A Future is
// fulfilled exactly once; every reader sees the same value and error.
//
// Futures come from Async, Spawn and the combinators (Then, WhenAll, WhenAny,
// Dataflow), or ready-made from MakeReady and MakeFailed. Waiting on one
// never keeps a worker lane: a task that calls Get on a future that is not
// ready gives its lane back until the value arrives.
type Future[T any] struct {
	ready atomic.Bool
	mu    sync.Mutex
	wait  chan struct{} // made by the first waiter, closed when ready
	// waiter is the task parked on f, woken through its wake channel: the
	// first task that waits for f, which costs no channel of f's.
	waiter *task
	cbs    []func() // run once, when ready
	val    T
	err    error
	sched  *scheduler // where continuations run; nil for ready-made futures

	// producer is the task whose result this is, until the future is
	// ready: a task that Gets the future before the producer started runs
	// it itself (task.helpWith).
	producer atomic.Pointer[task]
}

func newFuture[T any](s *scheduler) *Future[T] { return &Future[T]{sched: s} }

// MakeReady returns a future that holds v.
func MakeReady[T any](v T) *Future[T] {
	f := &Future[T]{val: v}
	f.ready.Store(true)
	return f
}

// MakeFailed returns a future that holds err.
func MakeFailed[T any](err error) *Future[T] {
	f := &Future[T]{err: err}
	f.ready.Store(true)
	return f
}

// set fulfils f. Only the first call has an effect; it reports whether it
// was the first.
func (f *Future[T]) set(v T, err error) bool {
	f.mu.Lock()
	if f.ready.Load() {
		f.mu.Unlock()
		return false
	}
	f.val, f.err = v, err
	f.ready.Store(true)
	if f.producer.Load() != nil { // a remote call's never has one: no store
		f.producer.Store(nil)
	}
	if f.wait != nil {
		close(f.wait)
	}
	if t := f.waiter; t != nil {
		select {
		case t.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
	cbs := f.cbs
	f.cbs = nil
	f.mu.Unlock()
	for _, cb := range cbs {
		cb()
	}
	return true
}

// onReady runs cb once f is ready: now, on this goroutine, if it already is;
// otherwise on the goroutine that fulfils f. cb must not block.
func (f *Future[T]) onReady(cb func()) {
	if !f.ready.Load() {
		f.mu.Lock()
		if !f.ready.Load() {
			f.cbs = append(f.cbs, cb)
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
	}
	cb()
}

// IsReady reports whether f holds a value or an error.
func (f *Future[T]) IsReady() bool { return f.ready.Load() }

// Get waits until f is ready and returns its value and error, or returns
// early with the context's cause when ctx ends.
//
// Called from a task — with the task's context or any context derived from
// it (WithValue, WithCancel, WithTimeout, ...) — it waits the same way
// whichever of them is passed: the task is found through the context's
// values, which survive derivation, and only the context's end is taken
// from ctx itself. When f is the result of a local task (Spawn, a local
// Async) that has not started yet, the waiter runs that task at once on
// its own lane, as a worker would once the lane was free, but without
// handing the lane over; otherwise it gives its worker lane back while it
// waits and takes one again when the value arrives or ctx ends. A wait
// whose ctx ends returns once the task has a lane again: after the task
// it runs itself, if any, or after one that holds the lane.
func (f *Future[T]) Get(ctx context.Context) (T, error) {
	if f.ready.Load() {
		return f.val, f.err
	}
	var zero T
	t := taskOf(ctx)
	if t != nil && t.direct && !f.ready.Load() {
		// A direct action runs on a parcel reader: it neither parks nor
		// runs other tasks, which might.
		return zero, ErrDirectWait // the caller's error names the action and the locality
	}
	if t != nil && !t.waiting.CompareAndSwap(false, true) {
		// Another goroutine waits with this task's context: the task's
		// lane and wake channel are that one's to give back and take
		// again. This one waits as a goroutine outside any task does.
		t = nil
	}
	if t == nil {
		return f.waitOutside(ctx)
	}
	defer t.waiting.Store(false)
	if ctx.Err() != nil {
		return zero, context.Cause(ctx)
	}
	if p := f.producer.Load(); p != nil && t.helpWith(p) {
		return f.val, f.err // p, which t ran itself, fulfilled f
	}
	// The task parks on its wake channel, as f's waiter, unless another
	// task is that already: then it waits on a channel of f's.
	f.mu.Lock()
	if f.ready.Load() {
		f.mu.Unlock()
		return f.val, f.err
	}
	park := f.waiter == nil
	if park {
		if t.wake == nil {
			t.wake = make(chan struct{}, 1)
		}
		f.waiter = t
	} else if f.wait == nil {
		f.wait = make(chan struct{})
	}
	wait := f.wait
	f.mu.Unlock()

	if t.s.awaitReady(&f.ready) {
		return f.val, f.err
	}
	t.yield(park)
	var err error
	if park {
		err = f.park(ctx, t)
	} else {
		select {
		case <-wait:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	}
	t.resume()
	if err != nil {
		return zero, err
	}
	return f.val, f.err
}

// park waits, lane-less, on t's wake channel until f is ready or ctx ends,
// and returns ctx's cause in the latter case. t is listed among the
// parked tasks before it looks at ctx: a locality that ends before the
// look is seen, one that ends after it wakes the task. A ctx that ends
// only with the locality — the task's own, or one that adds values to it
// — is not selected on: the locality's end wakes the task anyway.
func (f *Future[T]) park(ctx context.Context, t *task) error {
	done := ctx.Done()
	if done == t.Context.Done() {
		done = nil
	}
	for !f.ready.Load() {
		if ctx.Err() != nil {
			if done != nil {
				f.unpark(t)
			}
			return context.Cause(ctx)
		}
		if done == nil {
			<-t.wake
			continue
		}
		select {
		case <-t.wake:
		case <-done:
		}
	}
	return nil
}

// unpark takes t off f's waiter slot, if it is there, when t stops waiting
// before f is ready: another task may park on f, and f keeps nothing of t
// alive. A wake-up sent before then is left over in t's wake channel,
// which only makes t's next wait look again.
func (f *Future[T]) unpark(t *task) {
	f.mu.Lock()
	if f.waiter == t {
		f.waiter = nil
	}
	f.mu.Unlock()
}

// waitOutside waits for f as a goroutine outside any task does: on a
// channel of f's and on ctx.
func (f *Future[T]) waitOutside(ctx context.Context) (T, error) {
	f.mu.Lock()
	if f.ready.Load() {
		f.mu.Unlock()
		return f.val, f.err
	}
	if f.wait == nil {
		f.wait = make(chan struct{})
	}
	wait := f.wait
	f.mu.Unlock()
	select {
	case <-wait:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, context.Cause(ctx)
	}
}

// Err waits like Get and returns only the error.
func (f *Future[T]) Err(ctx context.Context) error {
	_, err := f.Get(ctx)
	return err
}

// result returns the value of a ready future.
func (f *Future[T]) result() (T, error) { return f.val, f.err }
