package agas

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"

	"github.com/tessera-amt/tessera/runtime"
)

// ErrNameTaken is wrapped by the error of registering a name that is taken.
var ErrNameTaken = errors.New("agas: name taken")

// ErrNoName is wrapped by the error of unregistering a name nobody holds.
var ErrNoName = errors.New("agas: name not registered")

// Name returns the name a basename and sequence number stand for.
func Name(base string, seq uint32) string { return fmt.Sprintf("/%s/%d", base, seq) }

// home is the locality that keeps name.
func home(rt *runtime.Runtime, name string) runtime.Target {
	h := fnv.New32a()
	h.Write([]byte(name))
	return rt.Locality(h.Sum32() % rt.NumLocalities())
}

// RegisterWithBasename registers gid under /base/seq. The future fails,
// wrapping ErrNameTaken, if the name is taken.
func (s *Service) RegisterWithBasename(ctx context.Context, rt *runtime.Runtime, base string, gid GID, seq uint32) *runtime.Future[struct{}] {
	name := Name(base, seq)
	return runtime.Async(ctx, home(rt, name), s.register, nameEntry{Name: name, GID: gid})
}

// FindFromBasename returns a future of the GID registered under /base/seq,
// which becomes ready when the name is registered, now or later.
func (s *Service) FindFromBasename(ctx context.Context, rt *runtime.Runtime, base string, seq uint32) *runtime.Future[GID] {
	name := Name(base, seq)
	return runtime.Async(ctx, home(rt, name), s.find, name)
}

// FindAll returns a future of the GIDs registered under /base/0 to
// /base/(n-1), ready when all of them are registered.
func (s *Service) FindAll(ctx context.Context, rt *runtime.Runtime, base string, n uint32) *runtime.Future[[]GID] {
	fs := make([]*runtime.Future[GID], n)
	for i := range n {
		fs[i] = s.FindFromBasename(ctx, rt, base, i)
	}
	return runtime.WhenAll(fs...)
}

// Unregister removes /base/seq and returns the GID it named. The future
// fails, wrapping ErrNoName, if nothing is registered there.
func (s *Service) Unregister(ctx context.Context, rt *runtime.Runtime, base string, seq uint32) *runtime.Future[GID] {
	name := Name(base, seq)
	return runtime.Async(ctx, home(rt, name), s.unregister, name)
}

func (s *Service) serveRegister(ctx context.Context, e nameEntry) (struct{}, error) {
	if e.GID == 0 {
		return struct{}{}, fmt.Errorf("agas: registering %s: the zero GID names no object", e.Name)
	}
	t := s.local(runtime.FromContext(ctx)).names
	t.mu.Lock()
	if old, ok := t.names[e.Name]; ok {
		t.mu.Unlock()
		return struct{}{}, fmt.Errorf("%w: %s is registered to %v, cannot register %v", ErrNameTaken, e.Name, old, e.GID)
	}
	t.names[e.Name] = e.GID
	waiters := t.waiters[e.Name]
	delete(t.waiters, e.Name)
	t.mu.Unlock()
	for _, fulfil := range waiters {
		fulfil(e.GID, nil)
	}
	return struct{}{}, nil
}

func (s *Service) serveFind(ctx context.Context, name string) (GID, error) {
	rt := runtime.FromContext(ctx)
	t := s.local(rt).names
	t.mu.Lock()
	if g, ok := t.names[name]; ok {
		t.mu.Unlock()
		return g, nil
	}
	// Not yet: wait for the registration. The task gives its lane back
	// while it waits, and the locality's end releases it.
	f, fulfil := runtime.NewPromise[GID](rt)
	t.waiters[name] = append(t.waiters[name], fulfil)
	t.mu.Unlock()
	return f.Get(ctx)
}

func (s *Service) serveUnregister(ctx context.Context, name string) (GID, error) {
	t := s.local(runtime.FromContext(ctx)).names
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.names[name]
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrNoName, name)
	}
	delete(t.names, name)
	return g, nil
}

// nameTable is the part of the namespace a locality is home for.
type nameTable struct {
	mu      sync.Mutex
	names   map[string]GID
	waiters map[string][]func(GID, error) bool // finds that came first
}
