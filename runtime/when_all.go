package runtime

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
)

// Then runs fn with f's value as a new task once f is ready, and returns a
// future of fn's result. If f fails, fn does not run and the returned future
// fails with f's error. The new task's parent is the task calling Then, and
// it is named after it in traces and profiles ("<parent>.then", such as
// "primitives.Dot.then" or "main.then"); ThenNamed gives it a name of its
// own.
func Then[T, U any](ctx context.Context, f *Future[T], fn func(ctx context.Context, v T) (U, error)) *Future[U] {
	return then(ctx, "", f, fn)
}

// ThenNamed is Then for a continuation with a name of its own: the region
// its work shows under in traces and profiles.
func ThenNamed[T, U any](ctx context.Context, name string, f *Future[T], fn func(ctx context.Context, v T) (U, error)) *Future[U] {
	return then(ctx, name, f, fn)
}

// continuationName is the name of a continuation created by the task
// running with ctx: the task's name followed by ".then", once however deep
// continuations chain; "" (fn's Go name) outside a named task.
func continuationName(ctx context.Context) string {
	t := taskOf(ctx)
	if t == nil || t.name == "" {
		return ""
	}
	if strings.HasSuffix(t.name, thenSuffix) {
		return t.name
	}
	return t.name + thenSuffix
}

const thenSuffix = ".then"

// then is Then and ThenNamed; name "" names the task after its creator.
func then[T, U any](ctx context.Context, name string, f *Future[T], fn func(ctx context.Context, v T) (U, error)) *Future[U] {
	s := f.sched
	if s == nil {
		if t := taskOf(ctx); t != nil {
			s = t.s
		}
	}
	out := newFuture[U](s)
	parent := TaskGUID(ctx)
	pc := funcPC(fn)
	if name == "" && s != nil && s.watched() {
		// Names are only looked at when someone watches the tasks.
		name = continuationName(ctx)
	}
	f.onReady(func() {
		v, err := f.result()
		if err != nil {
			out.set(*new(U), err)
			return
		}
		run := func(tctx context.Context) {
			r, err := callFunc(tctx, func(c context.Context) (U, error) { return fn(c, v) })
			out.set(r, err)
		}
		if s == nil { // futures made outside any runtime
			go run(context.WithoutCancel(ctx))
			return
		}
		s.spawn(s.base, parent, name, pc, run, func(err error) { out.set(*new(U), err) })
	})
	return out
}

// WhenAll returns a future of the values of fs, in order, ready when all of
// them are. It fails as soon as one of them fails, with that error.
func WhenAll[T any](fs ...*Future[T]) *Future[[]T] {
	out := newFuture[[]T](firstSched(fs))
	if len(fs) == 0 {
		out.set([]T{}, nil)
		return out
	}
	var left atomic.Int64
	left.Store(int64(len(fs)))
	for _, f := range fs {
		f.onReady(func() {
			if _, err := f.result(); err != nil {
				out.set(nil, err)
				return
			}
			if left.Add(-1) == 0 {
				vals := make([]T, len(fs))
				for i, g := range fs {
					vals[i], _ = g.result()
				}
				out.set(vals, nil)
			}
		})
	}
	return out
}

// AnyResult is the value of a WhenAny future: which input was ready first
// and its value.
type AnyResult[T any] struct {
	Index int
	Value T
}

// WhenAny returns a future that is ready as soon as one of fs is: with its
// index and value, or with its error if it failed. With no inputs it is
// never ready.
func WhenAny[T any](fs ...*Future[T]) *Future[AnyResult[T]] {
	out := newFuture[AnyResult[T]](firstSched(fs))
	var once sync.Once
	for i, f := range fs {
		f.onReady(func() {
			once.Do(func() {
				v, err := f.result()
				out.set(AnyResult[T]{i, v}, err)
			})
		})
	}
	return out
}

// Dataflow runs fn with the values of fs as a task once all of them are
// ready, like Then over WhenAll. If any input fails, fn does not run.
func Dataflow[T, U any](ctx context.Context, fn func(ctx context.Context, vs []T) (U, error), fs ...*Future[T]) *Future[U] {
	return then(ctx, "", WhenAll(fs...), fn)
}

// Dataflow2 is Dataflow over two futures of different types.
func Dataflow2[A, B, U any](ctx context.Context, fn func(ctx context.Context, a A, b B) (U, error), fa *Future[A], fb *Future[B]) *Future[U] {
	s := fa.sched
	if s == nil {
		s = fb.sched
	}
	both := newFuture[struct{}](s)
	var left atomic.Int32
	left.Store(2)
	arrive := func(err error) {
		if err != nil {
			both.set(struct{}{}, err)
		} else if left.Add(-1) == 0 {
			both.set(struct{}{}, nil)
		}
	}
	fa.onReady(func() { _, err := fa.result(); arrive(err) })
	fb.onReady(func() { _, err := fb.result(); arrive(err) })
	return then(ctx, "", both, func(ctx context.Context, _ struct{}) (U, error) {
		a, _ := fa.result()
		b, _ := fb.result()
		return fn(ctx, a, b)
	})
}

func firstSched[T any](fs []*Future[T]) *scheduler {
	for _, f := range fs {
		if f.sched != nil {
			return f.sched
		}
	}
	return nil
}

// Finally returns a future ready when f is, with f's value or error, once
// fn ran: for what must follow f however it ends (count a call done, give
// something back). fn runs where f becomes ready, so it must not block.
func Finally[T any](f *Future[T], fn func()) *Future[T] {
	out := newFuture[T](f.sched)
	f.onReady(func() {
		v, err := f.result()
		fn()
		out.set(v, err)
	})
	return out
}
