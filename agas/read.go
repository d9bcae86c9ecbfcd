package agas

import (
	"context"
	"fmt"
	"reflect"

	"github.com/tessera-amt/tessera/runtime"
)

// Reader is a read-only method of a component type T whose result is bulk
// float64s, such as a block of a tile: ReadInto runs it by GID wherever the
// object lives and reads the result straight from the wire into the
// caller's memory.
//
// Unlike a Method's calls, reads are not ordered: any number run at once on
// one object, from one locality or many, so fn must only read the object.
// They still never overlap a migration or a free: a read that arrives while
// the object is leaving waits, then follows it.
type Reader[T, A any] struct {
	action runtime.Action[invocation[A], []float64]
}

// RegisterReader registers fn as the read name of components of type T,
// like RegisterMethod (program set-up on every locality, before the runtime
// starts; a registered reader also lets objects of type T migrate when *T
// implements runtime.ParcelMarshaler and runtime.ParcelUnmarshaler).
func RegisterReader[T, A any](reg *runtime.Registry, s *Service, name string, fn func(ctx context.Context, obj *T, args A) ([]float64, error)) Reader[T, A] {
	r := Reader[T, A]{}
	self := &r.action
	r.action = runtime.Register(reg, "agas.read."+name, func(ctx context.Context, inv invocation[A]) ([]float64, error) {
		return serveRead(ctx, s, *self, fn, inv)
	})
	registerType[T](s)
	return r
}

// ReadInto runs r on the object gid names, wherever it lives, and returns a
// future of its result, read into dst when dst has exactly the result's
// length (runtime.AsyncInto; the future's value is then dst itself).
//
// Where it goes is resolved as for Call: the object itself when it lives
// here, else the owner in this locality's cache (a map look-up, no
// message), else the object's home. A read that reaches a locality the
// object left is forwarded to where it went, and the caller is told, so its
// next reads go there directly.
func ReadInto[T, A any](ctx context.Context, s *Service, rt *runtime.Runtime, gid GID, r Reader[T, A], args A, dst []float64) *runtime.Future[[]float64] {
	l := s.local(rt)
	l.mu.Lock()
	to := l.owner(gid)
	l.mu.Unlock()
	return runtime.AsyncInto(ctx, rt.Locality(to), r.action, invocation[A]{GID: gid, From: rt.Here(), Arg: args}, dst)
}

// Owner returns the locality gid's object lives on as far as rt's locality
// knows, without a message: certain on the object's home and where the
// object lives, a hint elsewhere (the last owner it heard of, or the home).
// It fails, wrapping ErrFreed or ErrUnknownGID, when the home knows the
// object was freed or never made.
func (s *Service) Owner(rt *runtime.Runtime, gid GID) (uint32, error) {
	l := s.local(rt)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.objects[gid]; ok {
		return rt.Here(), nil
	}
	if to, ok := l.cache[gid]; ok && gid.Home() != rt.Here() {
		return to, nil
	}
	return l.whereIs(gid)
}

// IsLocal reports whether gid's object lives on rt's locality now. An
// object being migrated away still lives here until it has arrived.
func (s *Service) IsLocal(rt *runtime.Runtime, gid GID) bool {
	l := s.local(rt)
	l.mu.Lock()
	_, ok := l.objects[gid]
	l.mu.Unlock()
	return ok
}

func serveRead[T, A any](ctx context.Context, s *Service, act runtime.Action[invocation[A], []float64], fn func(context.Context, *T, A) ([]float64, error), inv invocation[A]) ([]float64, error) {
	rt := runtime.FromContext(ctx)
	l := s.local(rt)
	o, to, err := l.pinRead(ctx, inv.GID)
	if err != nil {
		return nil, err
	}
	if o == nil {
		l.forwarded.Add(1)
		r := runtime.Async(ctx, rt.Locality(to), act, inv)
		if inv.From == rt.Here() {
			return r.Get(ctx)
		}
		// The caller learns the owner before it has the reply, so its
		// next reads go there directly.
		h := runtime.Async(ctx, rt.Locality(inv.From), s.hint, rebindReq{GID: inv.GID, To: to})
		v, err := r.Get(ctx)
		if err != nil {
			return nil, err
		}
		return v, h.Err(ctx)
	}
	defer l.unpinRead(o)
	v, ok := o.value.(*T)
	if !ok {
		return nil, fmt.Errorf("agas: %v on locality %d is a %T, not a %v", inv.GID, rt.Here(), o.value, reflect.TypeFor[*T]())
	}
	return fn(ctx, v, inv.Arg)
}

// pinRead waits until gid's object is here and not leaving, and pins it
// for a read, whatever the calls pending on it. If the object is elsewhere
// it returns nil and where to forward.
func (l *local) pinRead(ctx context.Context, gid GID) (*object, uint32, error) {
	for {
		l.mu.Lock()
		o, to, err := l.find(gid)
		if o == nil {
			l.mu.Unlock()
			return nil, to, err
		}
		if !o.leaving {
			o.pins++
			l.mu.Unlock()
			return o, 0, nil
		}
		if err := l.await(ctx, o); err != nil {
			return nil, 0, err
		}
	}
}

// unpinRead ends a read; a migration or free waiting for it may go.
func (l *local) unpinRead(o *object) {
	l.mu.Lock()
	o.pins--
	if o.pins == 0 {
		o.changed()
	}
	l.mu.Unlock()
}

// registerType records how to rebuild a T that migrates here, if *T can
// travel.
func registerType[T any](s *Service) {
	if _, ok := any(new(T)).(migratable); ok {
		s.mu.Lock()
		s.types[typeName[T]()] = func() migratable { return any(new(T)).(migratable) }
		s.mu.Unlock()
	}
}
