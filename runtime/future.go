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
	// first task that waits with a context that ends only with the
	// locality, which costs neither a channel nor a select per wait.
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
	f.producer.Store(nil)
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
// early with the context's cause when ctx ends. Called from a task (ctx is
// the task's context, or derived from it), it gives the task's worker lane
// back while it waits — or, when f is the result of a local task (Spawn, a
// local Async) that has not started yet and ctx is the calling task's own
// context (the one its function was given), it runs that task at once on
// its own lane, as a worker would once the lane was free, but without
// handing the lane over.
func (f *Future[T]) Get(ctx context.Context) (T, error) {
	if f.ready.Load() {
		return f.val, f.err
	}
	t := taskOf(ctx)
	if t != nil && t.direct && !f.ready.Load() {
		// A direct action runs on a parcel reader: it neither parks nor
		// runs other tasks, which might.
		var zero T
		return zero, ErrDirectWait // the caller's error names the action and the locality
	}
	if t != nil {
		if !t.waiting.CompareAndSwap(false, true) {
			// Another goroutine waits with this task's context: the task's
			// lane and wake channel are that one's to give back and take
			// again. This one waits as a goroutine outside any task does.
			t = nil
		} else {
			defer t.waiting.Store(false)
		}
	}
	if p := f.producer.Load(); p != nil && t != nil && t.helpWith(p, ctx.Done()) {
		return f.val, f.err // p, which t ran itself, fulfilled f
	}
	// A task waiting with a context that ends only with the locality (its
	// own, or one that adds values) parks on its wake channel; any other
	// waiter on a channel of f's, and on its context.
	park := t != nil && ctx.Done() == t.Context.Done()
	f.mu.Lock()
	if f.ready.Load() {
		f.mu.Unlock()
		return f.val, f.err
	}
	if park && f.waiter == nil {
		if t.wake == nil {
			t.wake = make(chan struct{}, 1)
		}
		f.waiter = t
	} else {
		park = false
		if f.wait == nil {
			f.wait = make(chan struct{})
		}
	}
	wait := f.wait
	f.mu.Unlock()

	if t != nil {
		if t.s.spinReady(&f.ready) {
			return f.val, f.err
		}
		t.yield(park)
	}
	var zero T
	var err error
	if park {
		// Listed among the parked tasks before looking at ctx: a
		// locality that ends before the look is seen, one that ends
		// after it wakes the task.
		for !f.ready.Load() {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
				break
			}
			<-t.wake
		}
	} else {
		select {
		case <-wait:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	}
	if t != nil {
		t.resume()
	}
	if err != nil {
		return zero, err
	}
	return f.val, f.err
}

// Err waits like Get and returns only the error.
func (f *Future[T]) Err(ctx context.Context) error {
	_, err := f.Get(ctx)
	return err
}

// result returns the value of a ready future.
func (f *Future[T]) result() (T, error) { return f.val, f.err }
