package runtime

import (
	"context"

	"github.com/tessera-amt/tessera/trace"
)

// Spans. With Config.Spans set (trace.NewOTelSpans over a TracerProvider),
// every action call makes two spans: "call <action>" on the caller, from
// the send to the reply, and "<action>" on the callee while the action
// runs, its child: the caller's trace context travels in the parcel
// header, so one trace covers every locality a chain of calls reaches.
// The action's ctx carries its span, so the calls it makes are its
// children; Spawn carries the caller's span to the new task. Without a
// hook each of these places costs one nil check and allocates nothing.

// StartSpan starts a span named name on rt's locality, a child of the span
// in ctx, and returns ctx carrying it and the function that ends it with
// the operation's error (nil: success). Primitives and programs use it to
// appear in the trace around the calls they make. Without Config.Spans it
// returns ctx itself and a function that does nothing, and allocates
// nothing.
func (rt *Runtime) StartSpan(ctx context.Context, name string) (context.Context, func(error)) {
	h := rt.cfg.Spans
	if h == nil {
		return ctx, endNothing
	}
	return h.Start(ctx, trace.SpanStart{Name: name, Kind: trace.SpanInternal, Locality: rt.here, Task: TaskGUID(ctx)})
}

func endNothing(error) {}

// startCallSpan starts the client span (named name: "call <action>") of a
// call from the task parent to dest, and returns the trace context to send
// with it and the function that ends it. Only with a hook.
func (rt *Runtime) startCallSpan(ctx context.Context, dest uint32, name string, parent uint64) ([]byte, func(error)) {
	h := rt.cfg.Spans
	cctx, end := h.Start(ctx, trace.SpanStart{Name: name, Kind: trace.SpanClient, Locality: rt.here, Peer: dest, Task: parent})
	return h.Inject(cctx), end
}

// startServeSpan starts, inside the task tctx that runs it, the server span
// of a call of action from source whose caller sent the trace context tc.
// Only with a hook.
func (rt *Runtime) startServeSpan(tctx context.Context, source uint32, action string, tc []byte) (context.Context, func(error)) {
	h := rt.cfg.Spans
	return h.Start(h.Extract(tctx, tc), trace.SpanStart{Name: action, Kind: trace.SpanServer, Locality: rt.here, Peer: source, Task: TaskGUID(tctx)})
}

// spanBase is the base context of a task spawned from ctx: the locality's,
// carrying the span in ctx when a hook is set.
func (rt *Runtime) spanBase(ctx context.Context) context.Context {
	h := rt.cfg.Spans
	if h == nil {
		return rt.ctx
	}
	return h.Extract(rt.ctx, h.Inject(ctx))
}
