package agas

import (
	"context"
	"fmt"
	"reflect"

	"github.com/tessera-amt/tessera/runtime"
	"github.com/tinylib/msgp/msgp"
)

// Method is a function of a component type T that any locality calls by
// GID with Call, wherever the object lives.
type Method[T, A, R any] struct {
	action runtime.Action[invocation[A], R]
}

// RegisterMethod registers fn as the method name of components of type T.
// Like runtime.Register, it is program set-up: every locality registers the
// same methods before the runtime starts, and it panics on a misuse. If *T
// implements runtime.ParcelMarshaler and runtime.ParcelUnmarshaler, objects
// of type T can migrate.
//
// Calls from one locality to one object run in the order that locality made
// them, one at a time, wherever the object moves meanwhile; calls from
// different localities may run at the same time, so fn must guard the
// object against that (or the program must not do it).
func RegisterMethod[T, A, R any](reg *runtime.Registry, s *Service, name string, fn func(ctx context.Context, obj *T, args A) (R, error)) Method[T, A, R] {
	m := Method[T, A, R]{}
	self := &m.action
	m.action = runtime.Register(reg, "agas.method."+name, func(ctx context.Context, inv invocation[A]) (R, error) {
		return serveMethod(ctx, s, *self, fn, inv)
	})
	registerType[T](s)
	return m
}

func typeName[T any]() string {
	t := reflect.TypeFor[T]()
	return t.PkgPath() + "." + t.Name()
}

// Call runs m on the object gid names, wherever it lives, and returns a
// future of the result. The first call from a locality to an object that
// lives elsewhere goes by way of the object's home; the reply to it teaches
// the caller where the object is, so later calls go there directly.
func Call[T, A, R any](ctx context.Context, s *Service, rt *runtime.Runtime, gid GID, m Method[T, A, R], args A) *runtime.Future[R] {
	l := s.local(rt)
	l.mu.Lock()
	seq := l.sendSeq[gid]
	l.sendSeq[gid]++
	to := l.owner(gid)
	l.mu.Unlock()
	return runtime.Async(ctx, rt.Locality(to), m.action, invocation[A]{GID: gid, From: rt.Here(), Seq: seq, Arg: args})
}

func serveMethod[T, A, R any](ctx context.Context, s *Service, act runtime.Action[invocation[A], R], fn func(context.Context, *T, A) (R, error), inv invocation[A]) (R, error) {
	rt := runtime.FromContext(ctx)
	l := s.local(rt)
	o, to, err := l.pin(ctx, inv.GID, inv.From, inv.Seq)
	if err != nil {
		return *new(R), err
	}
	if o == nil {
		// Not here (any more): pass it on, and tell the caller where the
		// object went so its next calls go there.
		l.forwarded.Add(1)
		r := runtime.Async(ctx, rt.Locality(to), act, inv)
		if inv.From != rt.Here() {
			// The caller learns before it has the reply, so its next call
			// goes to the right place.
			runtime.Async(ctx, rt.Locality(inv.From), s.hint, rebindReq{GID: inv.GID, To: to}).Err(ctx)
		}
		return r.Get(ctx)
	}
	defer l.unpin(o, inv.From)
	v, ok := o.value.(*T)
	if !ok {
		return *new(R), fmt.Errorf("agas: %v is a %T, not a %v", inv.GID, o.value, reflect.TypeFor[*T]())
	}
	return fn(ctx, v, inv.Arg)
}

// invocation is a method call as it travels: the object, the calling
// locality and its call number for that object (which keeps the calls in
// order), and the arguments, encoded as actions encode them.
type invocation[A any] struct {
	GID  GID
	From uint32
	Seq  uint64
	Arg  A
}

// MarshalParcel implements runtime.ParcelMarshaler.
func (v invocation[A]) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	c, err := runtime.NewCodec[A]()
	if err != nil {
		return b, nil, err
	}
	b = msgp.AppendUint64(b, uint64(v.GID))
	b = msgp.AppendUint32(b, v.From)
	b = msgp.AppendUint64(b, v.Seq)
	return c.Encode(v.Arg, b)
}

// UnmarshalParcel implements runtime.ParcelUnmarshaler.
func (v *invocation[A]) UnmarshalParcel(b []byte, chunks [][]byte) error {
	c, err := runtime.NewCodec[A]()
	if err != nil {
		return err
	}
	var g uint64
	if g, b, err = msgp.ReadUint64Bytes(b); err != nil {
		return err
	}
	if v.From, b, err = msgp.ReadUint32Bytes(b); err != nil {
		return err
	}
	if v.Seq, b, err = msgp.ReadUint64Bytes(b); err != nil {
		return err
	}
	v.GID = GID(g)
	v.Arg, err = c.Decode(b, chunks)
	return err
}
