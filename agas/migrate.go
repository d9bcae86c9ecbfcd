package agas

import (
	"context"
	"fmt"
	"reflect"

	"github.com/tessera-amt/tessera/runtime"
	"github.com/tinylib/msgp/msgp"
)

// Mover is implemented by components that record where they live — a
// tile's annotation names its locality, for instance. After a migration,
// Moved is called on the object at its new locality, before any call runs
// on it there.
type Mover interface {
	Moved(ctx context.Context, locality uint32)
}

// migratable is what a component type implements to be able to move: its
// state as small arguments plus raw chunks (a tile moves as its bytes).
type migratable interface {
	runtime.ParcelMarshaler
	runtime.ParcelUnmarshaler
}

// Migrate moves gid's object to locality to. It waits until no call runs on
// the object (calls that arrive meanwhile wait), moves its state, rebinds it
// at to and tells its home; calls that reach the old owner afterwards are
// forwarded, and each locality's calls still run in the order it made them.
// The object's type must implement runtime.ParcelMarshaler and
// runtime.ParcelUnmarshaler (on its pointer) and have a registered method.
func (s *Service) Migrate(ctx context.Context, rt *runtime.Runtime, gid GID, to uint32) error {
	if to >= rt.NumLocalities() {
		return fmt.Errorf("agas: migrating %v: no locality %d in a job of %d", gid, to, rt.NumLocalities())
	}
	l := s.local(rt)
	l.mu.Lock()
	at := l.owner(gid)
	l.mu.Unlock()
	return runtime.Async(ctx, rt.Locality(at), s.migrate, rebindReq{GID: gid, To: to}).Err(ctx)
}

func (s *Service) serveMigrate(ctx context.Context, req rebindReq) (struct{}, error) {
	rt := runtime.FromContext(ctx)
	l := s.local(rt)
	gid := req.GID
	o, at, err := l.drain(ctx, gid)
	if err != nil {
		return struct{}{}, err
	}
	if o == nil {
		l.forwarded.Add(1)
		return runtime.Async(ctx, rt.Locality(at), s.migrate, req).Get(ctx)
	}
	if req.To == rt.Here() {
		l.release(o)
		return struct{}{}, nil
	}
	m, ok := o.value.(migratable)
	if !ok {
		l.release(o)
		return struct{}{}, fmt.Errorf("agas: %v cannot migrate: %T does not implement runtime.ParcelMarshaler and ParcelUnmarshaler", gid, o.value)
	}
	state, chunks, err := m.MarshalParcel(nil)
	if err != nil {
		l.release(o)
		return struct{}{}, fmt.Errorf("agas: migrating %v: %w", gid, err)
	}
	l.mu.Lock()
	next := make(map[uint32]uint64, len(o.next))
	for k, v := range o.next {
		next[k] = v
	}
	l.mu.Unlock()
	ad := adoption{GID: gid, Type: typeNameOf(o.value), Refs: o.refs, Next: next, State: state, Chunks: chunks}
	if err := runtime.Async(ctx, rt.Locality(req.To), s.adopt, ad).Err(ctx); err != nil {
		l.release(o)
		return struct{}{}, fmt.Errorf("agas: migrating %v to locality %d: %w", gid, req.To, err)
	}
	l.mu.Lock()
	delete(l.objects, gid)
	l.moved[gid] = req.To
	l.cache[gid] = req.To
	if gid.Home() == rt.Here() {
		l.owners[gid] = req.To
	}
	o.changed() // waiting calls find it gone and follow it
	l.mu.Unlock()
	l.migrations.Add(1)
	if gid.Home() != rt.Here() {
		return runtime.Async(ctx, rt.Locality(gid.Home()), s.rebind, req).Get(ctx)
	}
	return struct{}{}, nil
}

// typeNameOf names the type of the component *T that v points to, as
// typeName[T] does.
func typeNameOf(v any) string {
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() + "." + t.Name()
}

func (s *Service) serveAdopt(ctx context.Context, ad adoption) (struct{}, error) {
	rt := runtime.FromContext(ctx)
	v, err := s.revive(ctx, rt, ad)
	if err != nil {
		return struct{}{}, err
	}
	l := s.local(rt)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.objects[ad.GID] = &object{value: v, next: ad.Next, refs: ad.Refs}
	delete(l.moved, ad.GID)
	delete(l.cache, ad.GID)
	if ad.GID.Home() == rt.Here() {
		l.owners[ad.GID] = rt.Here()
	}
	return struct{}{}, nil
}

// revive rebuilds an object that travelled here, and tells it where it is.
func (s *Service) revive(ctx context.Context, rt *runtime.Runtime, ad adoption) (migratable, error) {
	s.mu.Lock()
	make_ := s.types[ad.Type]
	s.mu.Unlock()
	if make_ == nil {
		return nil, fmt.Errorf("agas: locality %d cannot take an object of type %q: it has no registered method", rt.Here(), ad.Type)
	}
	v := make_()
	if err := v.UnmarshalParcel(ad.State, ad.Chunks); err != nil {
		return nil, fmt.Errorf("agas: rebuilding a %s on locality %d: %w", ad.Type, rt.Here(), err)
	}
	if mv, ok := v.(Mover); ok {
		mv.Moved(ctx, rt.Here())
	}
	return v, nil
}

// serveRebind runs at an object's home: the object now lives at req.To, or
// was freed (noOwner).
func (s *Service) serveRebind(ctx context.Context, req rebindReq) (struct{}, error) {
	l := s.local(runtime.FromContext(ctx))
	l.mu.Lock()
	defer l.mu.Unlock()
	if req.To == noOwner {
		delete(l.owners, req.GID)
		delete(l.cache, req.GID)
		delete(l.moved, req.GID) // freed: no owner any more (madeHere)
		return struct{}{}, nil
	}
	if _, here := l.objects[req.GID]; !here {
		l.owners[req.GID] = req.To
	}
	return struct{}{}, nil
}

// serveHint updates the cache of a locality whose call was forwarded.
func (s *Service) serveHint(ctx context.Context, req rebindReq) (struct{}, error) {
	l := s.local(runtime.FromContext(ctx))
	l.mu.Lock()
	if _, here := l.objects[req.GID]; !here {
		l.cache[req.GID] = req.To
	}
	l.mu.Unlock()
	return struct{}{}, nil
}

// rebindReq says where an object goes or went.
type rebindReq struct {
	GID GID
	To  uint32
}

// MarshalParcel implements runtime.ParcelMarshaler.
func (r rebindReq) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	return msgp.AppendUint32(msgp.AppendUint64(b, uint64(r.GID)), r.To), nil, nil
}

// UnmarshalParcel implements runtime.ParcelUnmarshaler.
func (r *rebindReq) UnmarshalParcel(b []byte, _ [][]byte) error {
	g, b, err := msgp.ReadUint64Bytes(b)
	if err != nil {
		return err
	}
	r.GID = GID(g)
	r.To, _, err = msgp.ReadUint32Bytes(b)
	return err
}

// adoption is an object on its way to its new locality: its type, the
// call numbers it has reached for each caller, and its state.
type adoption struct {
	GID    GID
	Type   string
	Refs   int64
	Next   map[uint32]uint64
	State  []byte
	Chunks [][]byte
}

// MarshalParcel implements runtime.ParcelMarshaler; the state's chunks
// travel as raw chunks.
func (a adoption) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	b = msgp.AppendUint64(b, uint64(a.GID))
	b = msgp.AppendString(b, a.Type)
	b = msgp.AppendInt64(b, a.Refs)
	b = msgp.AppendMapHeader(b, uint32(len(a.Next)))
	for k, v := range a.Next {
		b = msgp.AppendUint32(b, k)
		b = msgp.AppendUint64(b, v)
	}
	b = msgp.AppendBytes(b, a.State)
	return b, a.Chunks, nil
}

// UnmarshalParcel implements runtime.ParcelUnmarshaler.
func (a *adoption) UnmarshalParcel(b []byte, chunks [][]byte) error {
	g, b, err := msgp.ReadUint64Bytes(b)
	if err != nil {
		return err
	}
	a.GID = GID(g)
	if a.Type, b, err = msgp.ReadStringBytes(b); err != nil {
		return err
	}
	if a.Refs, b, err = msgp.ReadInt64Bytes(b); err != nil {
		return err
	}
	var n uint32
	if n, b, err = msgp.ReadMapHeaderBytes(b); err != nil {
		return err
	}
	a.Next = make(map[uint32]uint64, n)
	for range n {
		var k uint32
		var v uint64
		if k, b, err = msgp.ReadUint32Bytes(b); err != nil {
			return err
		}
		if v, b, err = msgp.ReadUint64Bytes(b); err != nil {
			return err
		}
		a.Next[k] = v
	}
	a.State, _, err = msgp.ReadBytesBytes(b, nil)
	a.Chunks = chunks
	return err
}
