package agas

import (
	"testing"

	"github.com/tessera-amt/tessera/runtime"
)

// BenchmarkResolveCached is the cost of finding where a call goes when the
// owner is in the cache: what every call to a remote object pays.
func BenchmarkResolveCached(b *testing.B) {
	reg := runtime.NewRegistry()
	s := New(reg)
	job, err := runtime.StartLocal(b.Context(), 2, runtime.Config{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer job.Close()
	gid := Create(s, job.Localities[1], &struct{}{})
	l := s.local(job.Localities[0])
	l.mu.Lock()
	l.owner(gid) // the miss that fills the cache
	l.mu.Unlock()
	b.ResetTimer()
	for range b.N {
		l.mu.Lock()
		l.owner(gid)
		l.mu.Unlock()
	}
}

// BenchmarkIsLocal is the check a tile's home makes on every fetch by name
// of the tile, to forward it if the tile moved.
func BenchmarkIsLocal(b *testing.B) {
	reg := runtime.NewRegistry()
	s := New(reg)
	job, err := runtime.StartLocal(b.Context(), 2, runtime.Config{Registry: reg})
	if err != nil {
		b.Fatal(err)
	}
	defer job.Close()
	rt := job.Localities[1]
	gid := Create(s, rt, &struct{}{})
	b.ResetTimer()
	for range b.N {
		if !s.IsLocal(rt, gid) {
			b.Fatal("the object is not local")
		}
	}
}
