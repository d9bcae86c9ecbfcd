package runtime

import (
	"context"
	"errors"
	"testing"

	"github.com/tessera-amt/tessera/trace"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// spanJob starts 2 localities in this process reporting their spans to a
// recorder, with actions that call each other across both.
type spanActions struct {
	leaf   Action[int, int]
	middle Action[int, int]
	fail   Action[int, int]
}

func spanJob(t *testing.T) (*LocalJob, spanActions, *tracetest.SpanRecorder, oteltrace.Tracer) {
	t.Helper()
	rts, a, rec, tracer := spanLocalities(t, false)
	return &LocalJob{Localities: rts}, a, rec, tracer
}

// spanLocalities starts the 2 localities over Inproc, or over TCP on the
// loopback when tcp is set.
func spanLocalities(t *testing.T, tcp bool) ([]*Runtime, spanActions, *tracetest.SpanRecorder, oteltrace.Tracer) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reg := NewRegistry()
	var a spanActions
	a.leaf = Register(reg, "spans.leaf", func(ctx context.Context, x int) (int, error) { return x + 1, nil })
	a.middle = Register(reg, "spans.middle", func(ctx context.Context, x int) (int, error) {
		// Back to locality 0, from inside the served action.
		return Async(ctx, FromContext(ctx).Locality(0), a.leaf, x*10).Get(ctx)
	})
	a.fail = Register(reg, "spans.fail", func(ctx context.Context, x int) (int, error) { return 0, errors.New("no tile 7 here") })
	cfg := Config{Registry: reg, Spans: trace.NewOTelSpans(tp)}
	if tcp {
		return startTCPWith(t, 2, cfg), a, rec, tp.Tracer("test")
	}
	job, err := StartLocal(testCtx(t), 2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(job.Close)
	return job.Localities, a, rec, tp.Tracer("test")
}

type spanIndex map[string]sdktrace.ReadOnlySpan

func indexSpans(t *testing.T, rec *tracetest.SpanRecorder) spanIndex {
	t.Helper()
	idx := spanIndex{}
	for _, s := range rec.Ended() {
		if idx[s.Name()] != nil {
			t.Fatalf("two spans named %q", s.Name())
		}
		idx[s.Name()] = s
	}
	return idx
}

func (idx spanIndex) get(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	s := idx[name]
	if s == nil {
		names := []string{}
		for n := range idx {
			names = append(names, n)
		}
		t.Fatalf("no span %q among %q", name, names)
	}
	return s
}

func intAttr(s sdktrace.ReadOnlySpan, key string) int64 {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.AsInt64()
		}
	}
	return -1
}

// A call from 0 to 1 whose action calls back to 0: the four action spans
// and the program's root span form one trace across both localities, each
// server span the child of its client span.
func TestSpansFormOneTraceAcrossLocalities(t *testing.T) {
	t.Run("inproc", func(t *testing.T) { testOneTrace(t, false) })
	t.Run("tcp", func(t *testing.T) { testOneTrace(t, true) })
}

func testOneTrace(t *testing.T, tcp bool) {
	rts, a, rec, tracer := spanLocalities(t, tcp)
	ctx, root := tracer.Start(testCtx(t), "root")
	v, err := Async(ctx, rts[0].Locality(1), a.middle, 4).Get(ctx)
	root.End()
	if err != nil || v != 41 {
		t.Fatalf("middle(4) = %d, %v; want 41", v, err)
	}
	idx := indexSpans(t, rec)
	rootSpan := idx.get(t, "root")
	chain := []struct {
		name         string
		kind         oteltrace.SpanKind
		locality     int64
		peer         int64
		parent, kids string
	}{
		{"call spans.middle", oteltrace.SpanKindClient, 0, 1, "root", ""},
		{"spans.middle", oteltrace.SpanKindServer, 1, 0, "call spans.middle", ""},
		{"call spans.leaf", oteltrace.SpanKindClient, 1, 0, "spans.middle", ""},
		{"spans.leaf", oteltrace.SpanKindServer, 0, 1, "call spans.leaf", ""},
	}
	for _, c := range chain {
		s := idx.get(t, c.name)
		if s.SpanContext().TraceID() != rootSpan.SpanContext().TraceID() {
			t.Errorf("%q is in trace %v, root in %v", c.name, s.SpanContext().TraceID(), rootSpan.SpanContext().TraceID())
		}
		if p := idx.get(t, c.parent); s.Parent().SpanID() != p.SpanContext().SpanID() {
			t.Errorf("%q has parent %v, want %q (%v)", c.name, s.Parent().SpanID(), c.parent, p.SpanContext().SpanID())
		}
		if s.SpanKind() != c.kind || intAttr(s, "tessera.locality") != c.locality || intAttr(s, "tessera.peer") != c.peer {
			t.Errorf("%q: kind %v, locality %d, peer %d; want %v, %d, %d", c.name, s.SpanKind(),
				intAttr(s, "tessera.locality"), intAttr(s, "tessera.peer"), c.kind, c.locality, c.peer)
		}
		if s.Status().Code == codes.Error {
			t.Errorf("%q failed: %v", c.name, s.Status())
		}
	}
	if n := len(rec.Ended()); n != 5 {
		t.Errorf("%d spans, want 5", n)
	}
}

// A failing action marks both of its spans as errors; a call to the own
// locality has its two spans too.
func TestSpansOfFailedAndLocalCalls(t *testing.T) {
	job, a, rec, _ := spanJob(t)
	ctx := testCtx(t)
	rt0 := job.Localities[0]
	if _, err := Async(ctx, rt0.Locality(1), a.fail, 1).Get(ctx); err == nil {
		t.Fatal("spans.fail succeeded")
	}
	idx := indexSpans(t, rec)
	for _, name := range []string{"call spans.fail", "spans.fail"} {
		if s := idx.get(t, name); s.Status().Code != codes.Error {
			t.Errorf("%q: status %v, want an error", name, s.Status())
		}
	}
	rec.Reset()
	if v, err := Async(ctx, rt0.Locality(0), a.leaf, 1).Get(ctx); err != nil || v != 2 {
		t.Fatalf("local leaf(1) = %d, %v", v, err)
	}
	idx = indexSpans(t, rec)
	client, server := idx.get(t, "call spans.leaf"), idx.get(t, "spans.leaf")
	if server.Parent().SpanID() != client.SpanContext().SpanID() || server.SpanContext().TraceID() != client.SpanContext().TraceID() {
		t.Errorf("local call: server span's parent %v, client span %v", server.Parent(), client.SpanContext())
	}
}

// StartSpan makes an internal span around a primitive's work; tasks it
// spawns and calls they make are its children.
func TestStartSpanAndSpawnCarryTheSpan(t *testing.T) {
	job, a, rec, _ := spanJob(t)
	ctx := testCtx(t)
	rt0 := job.Localities[0]
	pctx, end := rt0.StartSpan(ctx, "primitive.sum")
	v, err := Spawn(pctx, rt0, func(ctx context.Context) (int, error) {
		return Async(ctx, rt0.Locality(1), a.leaf, 1).Get(ctx)
	}).Get(ctx)
	end(err)
	if err != nil || v != 2 {
		t.Fatalf("leaf(1) = %d, %v", v, err)
	}
	idx := indexSpans(t, rec)
	prim, call := idx.get(t, "primitive.sum"), idx.get(t, "call spans.leaf")
	if prim.SpanKind() != oteltrace.SpanKindInternal || intAttr(prim, "tessera.locality") != 0 {
		t.Errorf("primitive span: kind %v, locality %d", prim.SpanKind(), intAttr(prim, "tessera.locality"))
	}
	if call.Parent().SpanID() != prim.SpanContext().SpanID() || call.SpanContext().TraceID() != prim.SpanContext().TraceID() {
		t.Errorf("call from the spawned task has parent %v, want the primitive's span %v", call.Parent(), prim.SpanContext())
	}
}

// Without a hook StartSpan hands back ctx and allocates nothing.
func TestStartSpanWithoutHookIsFree(t *testing.T) {
	job, err := StartLocal(testCtx(t), 1, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[0]
	ctx := testCtx(t)
	allocs := testing.AllocsPerRun(100, func() {
		c, end := rt.StartSpan(ctx, "x")
		end(nil)
		if c != ctx {
			t.Fatal("StartSpan without a hook changed ctx")
		}
	})
	if allocs != 0 {
		t.Fatalf("StartSpan without a hook: %v allocations", allocs)
	}
	if rt.spanBase(ctx) != rt.ctx {
		t.Fatal("Spawn's base context without a hook is not the locality's")
	}
}
