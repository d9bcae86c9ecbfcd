package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

type testKey struct{}

// derivations are the ways a task derives a context from its own.
var derivations = []struct {
	name   string
	derive func(ctx context.Context) (context.Context, context.CancelFunc)
}{
	{"own", func(ctx context.Context) (context.Context, context.CancelFunc) { return ctx, func() {} }},
	{"WithValue", func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithValue(ctx, testKey{}, 1), func() {}
	}},
	{"WithCancel", context.WithCancel},
	{"WithTimeout", func(ctx context.Context) (context.Context, context.CancelFunc) {
		return context.WithTimeout(ctx, time.Hour)
	}},
	{"WithValue(WithTimeout)", func(ctx context.Context) (context.Context, context.CancelFunc) {
		tctx, cancel := context.WithTimeout(ctx, time.Hour)
		return context.WithValue(tctx, testKey{}, 1), cancel
	}},
}

// parkedHere reports whether t is listed among s's parked tasks.
func (s *scheduler) parkedHere(t *task) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := s.parked; p != nil; p = p.nextParked {
		if p == t {
			return true
		}
	}
	return false
}

// A task that waits on a future through any context derived from its own
// gives its only lane to a queued task — the one that fulfils the future —
// and waits parked on its wake channel, as with its own context.
func TestWaitWithDerivedContextYieldsLane(t *testing.T) {
	for _, d := range derivations {
		t.Run(d.name, func(t *testing.T) {
			ctx := testCtx(t)
			rec := newRecorder()
			rt := startOne(t, Config{Lanes: 1, Observer: rec})
			v, err := Spawn(ctx, rt, func(ctx context.Context) (int, error) {
				me := taskOf(ctx)
				p, fulfil := NewPromise[int](rt)
				var parked bool
				// Queued: the waiter holds the only lane.
				Spawn(ctx, rt, func(context.Context) (struct{}, error) {
					parked = rt.sched.parkedHere(me)
					fulfil(7, nil)
					return struct{}{}, nil
				})
				dctx, cancel := d.derive(ctx)
				defer cancel()
				if FromContext(dctx) != rt || TaskGUID(dctx) != me.guid {
					return 0, errors.New("the derived context does not lead to the task and its locality")
				}
				v, err := p.Get(dctx)
				if err == nil && !parked {
					err = errors.New("the waiter was not parked while the other task ran")
				}
				return v, err
			}).Get(ctx)
			if err != nil || v != 7 {
				t.Fatalf("wait through %s: %v, %v", d.name, v, err)
			}
			rt.Finalize(ctx)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if rec.yields != 1 || rec.resumes != 1 || rec.maxRunning != 1 {
				t.Errorf("yields %d, resumes %d, at most %d tasks at once; want 1, 1, 1", rec.yields, rec.resumes, rec.maxRunning)
			}
		})
	}
}

// A wait through a derived context that ends returns its cause, the
// waiter having given its lane away meanwhile, and leaves the future free
// for other waiters: a deadline that passes, a cancellation by the task
// that got the lane.
func TestWaitWithDerivedContextEnds(t *testing.T) {
	cause := errors.New("no longer needed")
	cases := []struct {
		name string
		wait func(ctx context.Context, f *Future[int], other func(func())) error
	}{
		{"deadline", func(ctx context.Context, f *Future[int], other func(func())) error {
			ran := make(chan struct{})
			other(func() { close(ran) })
			dctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			_, err := f.Get(dctx)
			select {
			case <-ran:
			default:
				return errors.New("the queued task did not run during the wait")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("got %v, want the deadline", err)
			}
			return nil
		}},
		{"cancel", func(ctx context.Context, f *Future[int], other func(func())) error {
			cctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			other(func() { cancel(cause) })
			if _, err := f.Get(context.WithValue(cctx, testKey{}, 1)); !errors.Is(err, cause) {
				return fmt.Errorf("got %v, want the cause", err)
			}
			return nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t)
			rt := startOne(t, Config{Lanes: 1})
			never := newFuture[int](rt.sched)
			err := Spawn(ctx, rt, func(ctx context.Context) (struct{}, error) {
				other := func(fn func()) {
					Spawn(ctx, rt, func(context.Context) (struct{}, error) { fn(); return struct{}{}, nil })
				}
				return struct{}{}, c.wait(ctx, never, other)
			}).Err(ctx)
			if err != nil {
				t.Fatal(err)
			}
			never.mu.Lock()
			waiter := never.waiter
			never.mu.Unlock()
			if waiter != nil {
				t.Error("the future still names the waiter that gave up")
			}
			rt.sched.mu.Lock()
			defer rt.sched.mu.Unlock()
			if rt.sched.parked != nil {
				t.Error("a task is still listed as parked")
			}
		})
	}
}
