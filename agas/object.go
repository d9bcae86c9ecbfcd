package agas

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/runtime"
)

// Errors about GIDs. They keep their identity across localities.
var (
	ErrFreed      = errors.New("agas: object freed")
	ErrUnknownGID = errors.New("agas: unknown GID")
)

// noOwner, as the new owner in a rebind, says the object was freed.
const noOwner = math.MaxUint32

// object is a component living on this locality.
type object struct {
	value   any
	pins    int               // calls running on it now
	leaving bool              // being migrated or freed: new calls wait
	refs    int64             // references held (see lifetime.go)
	next    map[uint32]uint64 // per sending locality, the number of its next call to apply
	waiters []func(struct{}, error) bool
}

// await unlocks l.mu, which the caller holds, and waits for o's next
// change — a call ending, a migration ending — without holding a lane.
func (l *local) await(ctx context.Context, o *object) error {
	f, fulfil := runtime.NewPromise[struct{}](l.rt)
	o.waiters = append(o.waiters, fulfil)
	l.mu.Unlock()
	return f.Err(ctx)
}

// find returns gid's object, or, if it is not here, where to forward.
// l.mu is held.
func (l *local) find(gid GID) (*object, uint32, error) {
	if o := l.objects[gid]; o != nil {
		return o, 0, nil
	}
	to, err := l.whereIs(gid)
	return nil, to, err
}

// changed wakes everyone waiting on o; l.mu is held.
func (o *object) changed() {
	for _, w := range o.waiters {
		w(struct{}{}, nil)
	}
	o.waiters = nil
}

// Create makes v a component on rt's locality and returns its GID, usable
// from every locality. The object lives here until it is migrated or freed.
func Create[T any](s *Service, rt *runtime.Runtime, v *T) GID {
	return s.local(rt).add(v)
}

// CreateOn makes v a component on locality on, its home, and returns its
// GID. v travels there as a migrating object does: its type must implement
// runtime.ParcelMarshaler and ParcelUnmarshaler and have a registered
// method.
func CreateOn[T any](ctx context.Context, s *Service, rt *runtime.Runtime, on uint32, v *T) (GID, error) {
	if on == rt.Here() {
		return Create(s, rt, v), nil
	}
	if on >= rt.NumLocalities() {
		return 0, fmt.Errorf("agas: creating a %s on locality %d: no such locality in a job of %d", typeName[T](), on, rt.NumLocalities())
	}
	m, ok := any(v).(migratable)
	if !ok {
		return 0, fmt.Errorf("agas: creating a %s on locality %d: it cannot travel (implement runtime.ParcelMarshaler and ParcelUnmarshaler)", typeName[T](), on)
	}
	state, chunks, err := m.MarshalParcel(nil)
	if err != nil {
		return 0, fmt.Errorf("agas: creating a %s on locality %d: %w", typeName[T](), on, err)
	}
	return runtime.Async(ctx, rt.Locality(on), s.create, adoption{Type: typeName[T](), State: state, Chunks: chunks}).Get(ctx)
}

func (s *Service) serveCreate(ctx context.Context, ad adoption) (GID, error) {
	rt := runtime.FromContext(ctx)
	v, err := s.revive(ctx, rt, ad)
	if err != nil {
		return 0, err
	}
	return s.local(rt).add(v), nil
}

// add makes v a component here with a new GID.
func (l *local) add(v any) GID {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	gid := MakeGID(l.rt.Here(), l.seq)
	l.objects[gid] = &object{value: v, next: make(map[uint32]uint64), refs: 1}
	l.owners[gid] = l.rt.Here()
	return gid
}

// madeHere reports whether gid is an object this locality created: its
// home is here and its number was handed out. Such an object without an
// entry in owners was freed, so the home keeps nothing per freed object.
// l.mu is held.
func (l *local) madeHere(gid GID) bool {
	return gid.Home() == l.rt.Here() && gid.Seq() >= 1 && gid.Seq() <= l.seq
}

// whereIs says where a call for gid, which does not live here, should go.
// The home knows for certain: the owner it was told of, or that the object
// was freed or never made. Elsewhere, a locality the object left points
// where it went; any other asks the home. l.mu is held.
func (l *local) whereIs(gid GID) (uint32, error) {
	if gid.Home() == l.rt.Here() {
		if owner, ok := l.owners[gid]; ok && owner != l.rt.Here() {
			return owner, nil
		}
		if _, ok := l.owners[gid]; !ok && l.madeHere(gid) {
			return 0, fmt.Errorf("%w: %v", ErrFreed, gid)
		}
		if _, ok := l.owners[gid]; ok {
			// Its home rebound it here but it has not arrived: it is on
			// its way back, so ask where it left from.
			if to, ok := l.moved[gid]; ok {
				return to, nil
			}
		}
		return 0, fmt.Errorf("%w: %v was never created", ErrUnknownGID, gid)
	}
	if to, ok := l.moved[gid]; ok {
		return to, nil
	}
	if gid.Home() >= l.rt.NumLocalities() {
		return 0, fmt.Errorf("%w %v: no locality %d in this job", ErrUnknownGID, gid, gid.Home())
	}
	return gid.Home(), nil
}

// owner is where a call from here to gid goes first. l.mu is held.
func (l *local) owner(gid GID) uint32 {
	l.resolutions.Add(1)
	if _, ok := l.objects[gid]; ok {
		l.cacheHits.Add(1)
		return l.rt.Here()
	}
	if to, ok := l.cache[gid]; ok {
		l.cacheHits.Add(1)
		return to
	}
	l.cacheMisses.Add(1)
	if to, err := l.whereIs(gid); err == nil {
		l.cache[gid] = to // corrected by a hint if the object is elsewhere
		return to
	}
	return l.rt.Here() // the call fails here with whereIs's error
}

// pin waits until gid's object is here and free to run the call numbered
// seq from locality from, and pins it. If the object is elsewhere it returns
// nil and where to forward.
func (l *local) pin(ctx context.Context, gid GID, from uint32, seq uint64) (*object, uint32, error) {
	for {
		l.mu.Lock()
		o, to, err := l.find(gid)
		if o == nil {
			l.mu.Unlock()
			return nil, to, err
		}
		if !o.leaving && o.next[from] == seq {
			o.pins++
			l.mu.Unlock()
			return o, 0, nil
		}
		if err := l.await(ctx, o); err != nil {
			return nil, 0, err
		}
	}
}

// unpin ends a call and lets the sender's next call go.
func (l *local) unpin(o *object, from uint32) {
	l.mu.Lock()
	o.pins--
	o.next[from]++
	o.changed()
	l.mu.Unlock()
}

// drain claims gid's object for leaving (a migration or a free): new calls
// wait, and drain waits until no call runs on it. If another migration or
// free has it, drain waits for that to end first. It returns nil and where
// to forward if the object is elsewhere.
func (l *local) drain(ctx context.Context, gid GID) (*object, uint32, error) {
	claimed := false
	for {
		l.mu.Lock()
		o, to, err := l.find(gid)
		if o == nil {
			l.mu.Unlock()
			return nil, to, err
		}
		if !claimed && !o.leaving {
			o.leaving, claimed = true, true
		}
		if claimed && o.pins == 0 {
			l.mu.Unlock()
			return o, 0, nil
		}
		if err := l.await(ctx, o); err != nil {
			if claimed {
				l.release(o)
			}
			return nil, 0, err
		}
	}
}

// release gives up a claim from drain: calls may run again.
func (l *local) release(o *object) {
	l.mu.Lock()
	o.leaving = false
	o.changed()
	l.mu.Unlock()
}

// Free destroys gid's object once no call runs on it. Later calls fail
// with ErrFreed.
func (s *Service) Free(ctx context.Context, rt *runtime.Runtime, gid GID) error {
	l := s.local(rt)
	l.mu.Lock()
	to := l.owner(gid)
	l.mu.Unlock()
	return runtime.Async(ctx, rt.Locality(to), s.free, gid).Err(ctx)
}

func (s *Service) serveFree(ctx context.Context, gid GID) (struct{}, error) {
	rt := runtime.FromContext(ctx)
	l := s.local(rt)
	o, to, err := l.drain(ctx, gid)
	if err != nil {
		return struct{}{}, err
	}
	if o == nil {
		l.forwarded.Add(1)
		return runtime.Async(ctx, rt.Locality(to), s.free, gid).Get(ctx)
	}
	l.mu.Lock()
	delete(l.objects, gid)
	if gid.Home() == rt.Here() {
		delete(l.owners, gid) // freed: made here and no owner (madeHere)
	} else {
		l.moved[gid] = gid.Home() // the home says it is freed
	}
	o.changed()
	l.mu.Unlock()
	if gid.Home() != rt.Here() {
		return runtime.Async(ctx, rt.Locality(gid.Home()), s.rebind, rebindReq{GID: gid, To: noOwner}).Get(ctx)
	}
	return struct{}{}, nil
}
