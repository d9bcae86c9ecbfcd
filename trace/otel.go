package trace

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// SpanKind says what a span stands for.
type SpanKind uint8

// The kinds of span.
const (
	SpanInternal SpanKind = iota // work inside one locality, such as a primitive
	SpanClient                   // an action call sent: "call <action>"
	SpanServer                   // an action call served: "<action>"
)

// SpanStart describes a span the runtime starts.
type SpanStart struct {
	Name     string
	Kind     SpanKind
	Locality uint32 // the locality the span runs on
	Peer     uint32 // client: the called locality; server: the caller; internal: unused
	Task     uint64 // client: the calling task's GUID; server and internal: the running task's (0: none)
}

// SpanHook is how the runtime reports spans and carries their context
// between localities. The runtime calls it only when one is configured, so
// no hook costs nothing on the action path.
type SpanHook interface {
	// Start starts a span as a child of the span in ctx (if any) and
	// returns ctx carrying it, and the function that ends it with the
	// operation's error (nil: success).
	Start(ctx context.Context, s SpanStart) (context.Context, func(error))
	// Inject returns the span context in ctx as bytes for a parcel header,
	// or nil when ctx has none.
	Inject(ctx context.Context) []byte
	// Extract returns ctx with the span context Inject encoded as the
	// parent of the spans started from it. Bytes it does not understand
	// leave ctx as it is.
	Extract(ctx context.Context, carrier []byte) context.Context
}

// OTelSpans is a SpanHook over an OpenTelemetry TracerProvider: spans are
// OpenTelemetry spans with the attributes tessera.locality, tessera.peer
// (client and server spans) and tessera.task (the task GUID, when
// non-zero), and the trace id, span id and trace flags travel in the
// parcel header, so that one trace spans every locality a call reaches.
// The trace state does not travel.
type OTelSpans struct {
	tracer oteltrace.Tracer
	opts   [SpanServer + 1][]oteltrace.SpanStartOption // by kind
}

// NewOTelSpans returns the hook that reports spans to tp; nil tp means the
// global provider, which is a no-op unless the program set one.
func NewOTelSpans(tp oteltrace.TracerProvider) *OTelSpans {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	o := &OTelSpans{tracer: tp.Tracer("github.com/tessera-amt/tessera")}
	o.opts[SpanInternal] = []oteltrace.SpanStartOption{oteltrace.WithSpanKind(oteltrace.SpanKindInternal)}
	o.opts[SpanClient] = []oteltrace.SpanStartOption{oteltrace.WithSpanKind(oteltrace.SpanKindClient)}
	o.opts[SpanServer] = []oteltrace.SpanStartOption{oteltrace.WithSpanKind(oteltrace.SpanKindServer)}
	return o
}

// Start implements SpanHook. The attributes are set once the span exists,
// and only on a span that records: a span the sampler dropped, or one of
// the no-op provider, costs no more than the context that carries it.
func (o *OTelSpans) Start(ctx context.Context, s SpanStart) (context.Context, func(error)) {
	kind := s.Kind
	if kind > SpanServer {
		kind = SpanInternal
	}
	ctx, span := o.tracer.Start(ctx, s.Name, o.opts[kind]...)
	if !span.IsRecording() {
		return ctx, endNothing
	}
	attrs := make([]attribute.KeyValue, 1, 3)
	attrs[0] = attribute.Int64("tessera.locality", int64(s.Locality))
	if kind != SpanInternal {
		attrs = append(attrs, attribute.Int64("tessera.peer", int64(s.Peer)))
	}
	if s.Task != 0 {
		// A GUID uses all 64 bits; attributes have no unsigned integer.
		attrs = append(attrs, attribute.String("tessera.task", strconv.FormatUint(s.Task, 10)))
	}
	span.SetAttributes(attrs...)
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// The carrier: a format byte (0), the trace id (16 bytes), the span id (8)
// and the trace flags (1).
const (
	carrierFormat = 0
	carrierLen    = 1 + 16 + 8 + 1
)

// Inject implements SpanHook.
func (o *OTelSpans) Inject(ctx context.Context) []byte {
	sc := oteltrace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	b := make([]byte, carrierLen)
	b[0] = carrierFormat
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[1:17], tid[:])
	copy(b[17:25], sid[:])
	b[25] = byte(sc.TraceFlags())
	return b
}

// Extract implements SpanHook.
func (o *OTelSpans) Extract(ctx context.Context, carrier []byte) context.Context {
	if len(carrier) != carrierLen || carrier[0] != carrierFormat {
		return ctx
	}
	var cfg oteltrace.SpanContextConfig
	copy(cfg.TraceID[:], carrier[1:17])
	copy(cfg.SpanID[:], carrier[17:25])
	cfg.TraceFlags = oteltrace.TraceFlags(carrier[25])
	cfg.Remote = true
	sc := oteltrace.NewSpanContext(cfg)
	if !sc.IsValid() {
		return ctx
	}
	return oteltrace.ContextWithRemoteSpanContext(ctx, sc)
}

func endNothing(error) {}
