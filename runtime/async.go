package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/tessera-amt/tessera/parcel"
)

// Target is where an action runs: a locality of the job. Get one from
// Runtime.Locality.
type Target struct {
	rt  *Runtime
	loc uint32
}

// Locality returns the locality a call through t runs on.
func (t Target) Locality() uint32 { return t.loc }

// Async runs act with args on target and returns a future of its result.
// It returns at once; the call travels as a parcel (or, on this locality,
// runs as a local task) and the future becomes ready when the result is
// back. The task that runs the action has the task calling Async (if any)
// as its parent.
//
// A failure comes back as the future's error: an *ActionError naming the
// action and the locality, wrapping the action's own error, ErrActionPanic,
// ErrUnknownAction, or a *LocalityError when the target is gone.
func Async[A, R any](ctx context.Context, target Target, act Action[A, R], args A) *Future[R] {
	return asyncInto(ctx, target, act, args, nil)
}

// AsyncInto is Async for actions returning []float64, with the result read
// straight from the wire into dst when it has exactly the result's length
// (otherwise into fresh memory). The future's value is then dst itself.
func AsyncInto[A any](ctx context.Context, target Target, act Action[A, []float64], args A, dst []float64) *Future[[]float64] {
	if rt := target.rt; rt != nil && target.loc == rt.here {
		// A local call returns the action's own slice: copy it into dst, so
		// that the caller's memory holds the result either way.
		f := asyncInto(ctx, target, act, args, nil)
		out := newFuture[[]float64](rt.sched)
		f.onReady(func() {
			v, err := f.result()
			if err == nil && len(v) == len(dst) && len(dst) > 0 {
				copy(dst, v)
				v = dst
			}
			out.set(v, err)
		})
		return out
	}
	var bufs [][]byte
	if len(dst) > 0 {
		bufs = [][]byte{parcel.Float64Bytes(dst)}
	}
	return asyncInto(ctx, target, act, args, bufs)
}

func asyncInto[A, R any](ctx context.Context, target Target, act Action[A, R], args A, bufs [][]byte) *Future[R] {
	rt := target.rt
	if rt == nil {
		return MakeFailed[R](fmt.Errorf("runtime: Async %q: zero Target (use Runtime.Locality)", act.name))
	}
	if act.fn == nil {
		return MakeFailed[R](fmt.Errorf("runtime: Async: zero Action (use Register)"))
	}
	parent := TaskGUID(ctx)
	if target.loc == rt.here {
		f := newFuture[R](rt.sched)
		var tc []byte
		var endCall func(error)
		if rt.cfg.Spans != nil {
			tc, endCall = rt.startCallSpan(ctx, rt.here, act.span, parent)
		}
		p := rt.sched.spawn(rt.ctx, parent, act.name, 0, func(tctx context.Context) {
			var endServe func(error)
			if endCall != nil {
				tctx, endServe = rt.startServeSpan(tctx, rt.here, act.name, tc)
			}
			r, _, err := callAction(tctx, act.fn, args)
			if err != nil {
				err = &ActionError{rt.here, act.name, err}
			}
			if endCall != nil {
				endServe(err)
				endCall(err)
			}
			f.set(r, err)
		}, func(err error) {
			err = &ActionError{rt.here, act.name, err}
			if endCall != nil {
				endCall(err)
			}
			f.set(*new(R), err)
		})
		f.producer.Store(p)
		return f
	}
	if target.loc >= rt.n {
		return MakeFailed[R](&ActionError{target.loc, act.name, fmt.Errorf("no such locality (the job has %d)", rt.n)})
	}
	c := &remoteCall[R]{rt: rt, res: act.res, pc: pendingCall{dest: target.loc, action: act.name, bufs: bufs}}
	c.f.sched = rt.sched
	c.pc.to = c
	out := rt.sched.spareOut.Swap(nil)
	if out == nil {
		out = rt.outs.get()
	}
	b, chunks, err := act.args.encode(args, out.args[:0], out.chunks[:0])
	if err != nil {
		putOut(rt, out)
		c.f.set(*new(R), &ActionError{target.loc, act.name, fmt.Errorf("encoding arguments: %w", err)})
		return &c.f
	}
	out.p = parcel.Parcel{
		Header: parcel.Header{Kind: parcel.KindCall, Dest: target.loc, Action: act.name, Parent: parent, Args: b},
		Chunks: chunks,
	}
	if rt.cfg.Spans != nil {
		out.p.Header.Trace, c.end = rt.startCallSpan(ctx, target.loc, act.span, parent)
	}
	rt.call(ctx, &c.pc, &out.p)
	putOut(rt, out) // Send is done with it once it returns
	return &c.f
}

// putOut keeps out for the next call, or gives it to the pool. It drops
// what out refers to beyond its own memory and the registry's names — the
// caller's chunks and trace context — so that it keeps none of a caller's
// memory alive; the next call sets the whole parcel again.
func putOut(rt *Runtime, out *outParcel) {
	out.p.Chunks, out.p.Header.Trace = nil, nil
	out.chunks = [2][]byte{}
	if !rt.sched.spareOut.CompareAndSwap(nil, out) {
		rt.outs.put(out)
	}
}

// remoteCall is a call of an action on another locality, in one
// allocation: the future its caller holds and the entry its reply finds.
type remoteCall[R any] struct {
	f   Future[R]
	pc  pendingCall
	rt  *Runtime
	res codec[R]
	end func(error) // ends the caller's span; nil without spans
	// room holds the reply's small chunks (smallRoom.own), so that the
	// parcel they came in may take the next one (parcel.Recycler).
	room   smallRoom
	chunks [ownedChunks][]byte
}

// reply fulfils the call's future from its reply.
func (c *remoteCall[R]) reply(h *parcel.Header, chunks [][]byte, err error) {
	if c.end != nil {
		switch {
		case err != nil:
			c.end(err)
		case h.Code != parcel.CodeOK:
			c.end(errors.New(h.Error))
		default:
			c.end(nil)
		}
	}
	if err != nil {
		c.f.set(*new(R), &ActionError{c.pc.dest, c.pc.action, err})
		return
	}
	if h.Code != parcel.CodeOK {
		c.f.set(*new(R), &ActionError{c.pc.dest, c.pc.action, c.rt.reg.replyError(h.Code, h.Error, h.Args)})
		return
	}
	if len(chunks) > 0 && len(chunks) <= ownedChunks {
		chunks = c.room.own(c.chunks[:0], chunks, c.pc.bufs)
	}
	r, err := c.res.decode(h.Args, chunks)
	if err != nil {
		err = &ActionError{c.pc.dest, c.pc.action, fmt.Errorf("decoding result: %w", err)}
	}
	c.f.set(r, err)
}

// Spawn runs fn as a task on rt's locality and returns a future of its
// result. The task's context ends when the locality ends or when ctx does,
// so waits inside fn give the lane back and stop with the caller. The task
// is named after fn for observers; a panic in fn fails the future with
// ErrActionPanic.
func Spawn[R any](ctx context.Context, rt *Runtime, fn func(ctx context.Context) (R, error)) *Future[R] {
	return spawnTask(ctx, rt, "", fn)
}

// SpawnNamed is Spawn for a task with a name of its own: the region its
// work shows under in traces and profiles, such as a primitive's name
// ("dot_d") or a program's phase ("als.solve"), instead of fn's Go name.
func SpawnNamed[R any](ctx context.Context, rt *Runtime, name string, fn func(ctx context.Context) (R, error)) *Future[R] {
	return spawnTask(ctx, rt, name, fn)
}

// spawnTask is Spawn and SpawnNamed; name "" names the task after fn.
func spawnTask[R any](ctx context.Context, rt *Runtime, name string, fn func(ctx context.Context) (R, error)) *Future[R] {
	sp := &spawned[R]{fn: fn}
	sp.f.sched = rt.sched
	// A ctx that can end on its own (not the locality's, which every task
	// context already has) bounds the task too.
	if done := ctx.Done(); done != nil && done != rt.ctx.Done() {
		sp.ctx = ctx
	}
	sp.t.pc, sp.t.job = funcPC(fn), sp
	sp.f.producer.Store(&sp.t)
	rt.sched.submit(&sp.t, rt.spanBase(ctx), TaskGUID(ctx), name)
	return &sp.f
}

// spawned is a task of Spawn in one allocation: the task, the future of
// its result, and the function it runs.
type spawned[R any] struct {
	t   task
	f   Future[R]
	fn  func(ctx context.Context) (R, error)
	ctx context.Context // the caller's, when it can end on its own; else nil
}

func (sp *spawned[R]) run(tctx context.Context) {
	fn, ctx := sp.fn, sp.ctx
	sp.fn, sp.ctx = nil, nil // a finished task keeps nothing of its caller's alive
	if ctx == nil {
		r, err := callFunc(tctx, fn)
		sp.f.set(r, err)
		return
	}
	wctx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	r, err := callFunc(wctx, fn)
	sp.f.set(r, err)
}

func (sp *spawned[R]) drop(err error) {
	sp.fn, sp.ctx = nil, nil
	sp.f.set(*new(R), err)
}

// callFunc runs fn, turning a panic into an error.
func callFunc[R any](ctx context.Context, fn func(context.Context) (R, error)) (r R, err error) {
	wrapped := func(ctx context.Context, _ struct{}) (R, error) { return fn(ctx) }
	r, _, err = callAction(ctx, wrapped, struct{}{})
	return r, err
}

func funcPC(fn any) uintptr { return reflect.ValueOf(fn).Pointer() }
