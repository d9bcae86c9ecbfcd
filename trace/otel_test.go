package trace

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

func TestOTelSpansCarryTheContextAsBytes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	o := NewOTelSpans(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	ctx := context.Background()
	if b := o.Inject(ctx); b != nil {
		t.Fatalf("Inject without a span: %x", b)
	}
	cctx, endCall := o.Start(ctx, SpanStart{Name: "call tile.add", Kind: SpanClient, Locality: 0, Peer: 3, Task: 42})
	carrier := o.Inject(cctx)
	if len(carrier) != carrierLen {
		t.Fatalf("carrier of %d bytes, want %d", len(carrier), carrierLen)
	}
	sctx, endServe := o.Start(o.Extract(context.Background(), carrier), SpanStart{Name: "tile.add", Kind: SpanServer, Locality: 3, Peer: 0})
	_ = sctx
	endServe(errors.New("tile 7 is not here"))
	endCall(nil)

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2", len(spans))
	}
	server, client := spans[0], spans[1]
	if server.SpanContext().TraceID() != client.SpanContext().TraceID() || server.Parent().SpanID() != client.SpanContext().SpanID() {
		t.Fatalf("server span %v has parent %v, client span is %v", server.SpanContext(), server.Parent(), client.SpanContext())
	}
	if client.SpanKind() != oteltrace.SpanKindClient || server.SpanKind() != oteltrace.SpanKindServer {
		t.Errorf("kinds: client %v, server %v", client.SpanKind(), server.SpanKind())
	}
	if server.Status().Code != codes.Error || server.Status().Description != "tile 7 is not here" || client.Status().Code == codes.Error {
		t.Errorf("status: server %+v, client %+v", server.Status(), client.Status())
	}
	attrs := map[string]string{}
	for _, kv := range client.Attributes() {
		attrs[string(kv.Key)] = kv.Value.Emit()
	}
	if attrs["tessera.locality"] != "0" || attrs["tessera.peer"] != "3" || attrs["tessera.task"] != "42" {
		t.Errorf("client attributes %v", attrs)
	}

	// Bytes it does not understand leave the context alone.
	for _, bad := range [][]byte{nil, {1}, append([]byte{9}, carrier[1:]...), make([]byte, carrierLen)} {
		if sc := oteltrace.SpanContextFromContext(o.Extract(ctx, bad)); sc.IsValid() {
			t.Errorf("Extract(%x) gave %v", bad, sc)
		}
	}
}

// Without a provider the hook uses the global one, a no-op by default:
// nothing travels.
func TestOTelSpansDefaultIsNoop(t *testing.T) {
	o := NewOTelSpans(nil)
	ctx, end := o.Start(context.Background(), SpanStart{Name: "x"})
	defer end(nil)
	if b := o.Inject(ctx); b != nil {
		t.Fatalf("no-op provider injected %x", b)
	}
}
