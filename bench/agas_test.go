package bench

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/runtime"
)

// tcpJob starts n localities in this process, joined over loopback TCP as
// separate processes would be.
func tcpJob(b *testing.B, n int, reg *runtime.Registry) []*runtime.Runtime {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	rts := make([]*runtime.Runtime, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cfg := runtime.Config{
			Locality: uint32(i), NumLocalities: uint32(n), RootAddr: ln.Addr().String(),
			ListenHost: "127.0.0.1", Secret: []byte("agas-benchmark-secret-32-bytes!!"), Registry: reg,
		}
		if i == 0 {
			cfg.Listener = ln
		}
		wg.Add(1)
		go func() { defer wg.Done(); rts[i], errs[i] = runtime.Start(ctx, cfg) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		var wg sync.WaitGroup
		for _, rt := range rts {
			wg.Add(1)
			go func() { defer wg.Done(); rt.Finalize(ctx) }()
		}
		wg.Wait()
	})
	return rts
}

type box struct{ N int64 }

// BenchmarkAGASCall compares a call through a GID (owner cached) with the
// same call through a locality id, between two localities over TCP.
func BenchmarkAGASCall(b *testing.B) {
	reg := runtime.NewRegistry()
	s := agas.New(reg)
	viaGID := agas.RegisterMethod(reg, s, "bench.box.inc", func(ctx context.Context, x *box, d int64) (int64, error) {
		x.N += d
		return x.N, nil
	})
	var plainBox box
	viaLocality := runtime.Register(reg, "bench.inc", func(ctx context.Context, d int64) (int64, error) {
		plainBox.N += d
		return plainBox.N, nil
	})
	rts := tcpJob(b, 2, reg)
	ctx := context.Background()
	gid := agas.Create(s, rts[1], &box{})
	const calls = 5000
	// The two kinds of call alternate one by one, so that the machine's
	// drift (a shared 2-core host) falls on both alike.
	round := func(gidFirst bool) (gidNs, locNs float64) {
		g := func() error { return agas.Call(ctx, s, rts[0], gid, viaGID, 1).Err(ctx) }
		l := func() error { return runtime.Async(ctx, rts[0].Locality(1), viaLocality, 1).Err(ctx) }
		first, second := g, l
		if !gidFirst {
			first, second = l, g
		}
		var t1, t2 time.Duration
		for range calls {
			start := time.Now()
			if err := first(); err != nil {
				b.Fatal(err)
			}
			mid := time.Now()
			if err := second(); err != nil {
				b.Fatal(err)
			}
			t1 += mid.Sub(start)
			t2 += time.Since(mid)
		}
		if !gidFirst {
			t1, t2 = t2, t1
		}
		return float64(t1.Nanoseconds()) / calls, float64(t2.Nanoseconds()) / calls
	}
	round(true) // warm up, fill the cache
	var gs, ls float64
	b.ResetTimer()
	for i := range b.N {
		g, l := round(i%2 == 0)
		gs += g
		ls += l
	}
	b.ReportMetric(gs/float64(b.N), "gid-ns/call")
	b.ReportMetric(ls/float64(b.N), "locality-ns/call")
	b.ReportMetric(gs/ls, "ratio")
}

// tile is a migratable component holding bulk data, as array tiles will.
type tile struct{ Data []float64 }

func (t *tile) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	return b, [][]byte{parcel.Float64Bytes(t.Data)}, nil
}

func (t *tile) UnmarshalParcel(_ []byte, chunks [][]byte) error {
	t.Data = parcel.BytesFloat64(chunks[0])
	if t.Data == nil && len(chunks[0]) > 0 { // not aligned: copy
		t.Data = make([]float64, len(chunks[0])/8)
		copy(parcel.Float64Bytes(t.Data), chunks[0])
	}
	return nil
}

// BenchmarkAGASMigrate64MiB compares migrating a 64 MiB tile between two
// localities over TCP with sending 64 MiB as an action argument.
func BenchmarkAGASMigrate64MiB(b *testing.B) {
	reg := runtime.NewRegistry()
	s := agas.New(reg)
	agas.RegisterMethod(reg, s, "bench.tile.len", func(ctx context.Context, t *tile, _ struct{}) (int, error) {
		return len(t.Data), nil
	})
	sink := runtime.Register(reg, "bench.sink64", func(ctx context.Context, v []float64) (int, error) {
		return len(v), nil
	})
	rts := tcpJob(b, 2, reg)
	ctx := context.Background()
	const elems = 8 << 20 // 64 MiB
	gid := agas.Create(s, rts[0], &tile{Data: make([]float64, elems)})
	payload := make([]float64, elems)
	where := uint32(0)
	migrate := func() float64 {
		where = 1 - where
		start := time.Now()
		if err := s.Migrate(ctx, rts[0], gid, where); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	send := func() float64 {
		start := time.Now()
		if err := runtime.Async(ctx, rts[0].Locality(1), sink, payload).Err(ctx); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(start).Microseconds()) / 1000
	}
	migrate()
	send()
	var ms, ss float64
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			ms += migrate()
			ss += send()
		} else {
			ss += send()
			ms += migrate()
		}
	}
	b.ReportMetric(ms/float64(b.N), "migrate-ms")
	b.ReportMetric(ss/float64(b.N), "send-ms")
	b.ReportMetric(ms/ss, "ratio")
}
