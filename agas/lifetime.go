package agas

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/runtime"
	"github.com/tinylib/msgp/msgp"
)

// Object lifetime. An object lives until it is freed, in one of two ways:
//
//   - Free destroys it at once (after the calls running on it end).
//   - Reference counting: Create gives the creator one reference. A
//     locality that keeps the GID for later takes its own with AddRef and
//     gives it back with Release when done; Release of the last reference
//     frees the object. A GID handed to a call that only uses it during the
//     call needs no reference: the caller's keeps the object alive.
//
// The count lives with the object (it migrates with it), so AddRef and
// Release travel like calls. Using a GID after its object was freed is an
// error wrapping ErrFreed on the caller's future. A freed object leaves
// nothing behind on its home: an object the home made and no longer has
// an owner for is the freed one, so a long job's freeing costs no memory.

// AddRef takes one more reference to gid's object.
func (s *Service) AddRef(ctx context.Context, rt *runtime.Runtime, gid GID) error {
	return s.sendRef(ctx, rt, refReq{GID: gid, Delta: 1})
}

// Release gives back a reference to gid's object; the last one frees it.
func (s *Service) Release(ctx context.Context, rt *runtime.Runtime, gid GID) error {
	return s.sendRef(ctx, rt, refReq{GID: gid, Delta: -1})
}

func (s *Service) sendRef(ctx context.Context, rt *runtime.Runtime, req refReq) error {
	l := s.local(rt)
	l.mu.Lock()
	to := l.owner(req.GID)
	l.mu.Unlock()
	return runtime.Async(ctx, rt.Locality(to), s.ref, req).Err(ctx)
}

func (s *Service) serveRef(ctx context.Context, req refReq) (struct{}, error) {
	rt := runtime.FromContext(ctx)
	l := s.local(rt)
	for {
		l.mu.Lock()
		o, to, err := l.find(req.GID)
		if o == nil {
			l.mu.Unlock()
			if err != nil {
				return struct{}{}, err
			}
			l.forwarded.Add(1)
			return runtime.Async(ctx, rt.Locality(to), s.ref, req).Get(ctx)
		}
		if o.leaving {
			if err := l.await(ctx, o); err != nil {
				return struct{}{}, err
			}
			continue
		}
		if o.refs+req.Delta < 0 {
			l.mu.Unlock()
			return struct{}{}, fmt.Errorf("agas: %v released more often than referenced", req.GID)
		}
		o.refs += req.Delta
		last := o.refs == 0
		l.mu.Unlock()
		if last {
			return s.serveFree(ctx, req.GID)
		}
		return struct{}{}, nil
	}
}

// refReq changes an object's reference count.
type refReq struct {
	GID   GID
	Delta int64
}

// MarshalParcel implements runtime.ParcelMarshaler.
func (r refReq) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	return msgp.AppendInt64(msgp.AppendUint64(b, uint64(r.GID)), r.Delta), nil, nil
}

// UnmarshalParcel implements runtime.ParcelUnmarshaler.
func (r *refReq) UnmarshalParcel(b []byte, _ [][]byte) error {
	g, b, err := msgp.ReadUint64Bytes(b)
	if err != nil {
		return err
	}
	r.GID = GID(g)
	r.Delta, _, err = msgp.ReadInt64Bytes(b)
	return err
}
