//go:build linux

package runtime

import (
	"bytes"
	"context"
	"fmt"
	goruntime "runtime"
	gometrics "runtime/metrics"
	"slices"
	"sync"
	"testing"
)

// TestSHMReusedParcelsKeepValues: over the shared-memory port, whose ring
// readers read each parcel into the memory of the one before when the
// runtime keeps nothing of it (parcel.Recycler), the arguments a plain
// action keeps, the arguments a direct action sees while it runs (and
// copies to keep them: RegisterDirect), and the results a caller keeps
// hold what was sent — an echo's result too, a view of its argument's
// memory on the serving side: small ones (read into the parcel's own
// room, then copied into the call's), larger ones (Buffer memory), []byte
// and []float64, after many more calls went through the same parcel
// memory.
func TestSHMReusedParcelsKeepValues(t *testing.T) {
	for _, mode := range []Progress{ProgressBlock, ProgressPoll} {
		t.Run(mode.String(), func(t *testing.T) {
			reg := NewRegistry()
			var mu sync.Mutex
			var keptBytes, seenDirect [][]byte
			var keptFloats [][]float64
			echo := Register(reg, "test.keep-bytes", func(ctx context.Context, b []byte) ([]byte, error) {
				mu.Lock()
				keptBytes = append(keptBytes, b) // no copy: a plain action's arguments are its own
				mu.Unlock()
				return b, nil
			})
			echoDirect := RegisterDirect(reg, "test.echo-bytes-direct", func(ctx context.Context, b []byte) ([]byte, error) {
				mu.Lock()
				seenDirect = append(seenDirect, bytes.Clone(b))
				mu.Unlock()
				return b, nil // a view of the call's memory, sent before it is reused
			})
			scale := RegisterDirect(reg, "test.keep-floats", func(ctx context.Context, f []float64) ([]float64, error) {
				mu.Lock()
				keptFloats = append(keptFloats, slices.Clone(f)) // kept past the return: copied
				mu.Unlock()
				out := make([]float64, len(f))
				for i, v := range f {
					out[i] = 2 * v
				}
				return out, nil
			})
			rts := startTCPWith(t, 2, Config{Lanes: 1, Registry: reg, Progress: mode, Transport: ParcelportSHM})
			ctx := context.Background()
			const calls = 300
			sizes := []int{1, 7, 8, 33, 64, 65, 200}
			wantBytes := make([][]byte, calls)
			gotBytes := make([][]byte, calls)
			gotDirect := make([][]byte, calls)
			wantFloats := make([][]float64, calls)
			gotFloats := make([][]float64, calls)
			err := Spawn(ctx, rts[0], func(ctx context.Context) (struct{}, error) {
				for i := range calls {
					n := sizes[i%len(sizes)]
					b := make([]byte, n)
					for j := range b {
						b[j] = byte(i*31 + j)
					}
					wantBytes[i] = bytes.Clone(b)
					r, err := Async(ctx, rts[0].Locality(1), echo, b).Get(ctx)
					if err != nil {
						return struct{}{}, err
					}
					gotBytes[i] = r
					rd, err := Async(ctx, rts[0].Locality(1), echoDirect, b).Get(ctx)
					if err != nil {
						return struct{}{}, err
					}
					gotDirect[i] = rd
					f := make([]float64, (n+7)/8)
					for j := range f {
						f[j] = float64(i) + float64(j)/8
					}
					wantFloats[i] = append([]float64(nil), f...)
					rf, err := Async(ctx, rts[0].Locality(1), scale, f).Get(ctx)
					if err != nil {
						return struct{}{}, err
					}
					gotFloats[i] = rf
				}
				return struct{}{}, nil
			}).Err(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !rts[0].port.(interface{ SharedMemory(uint32) bool }).SharedMemory(1) {
				t.Fatal("locality 0 does not talk to 1 through shared memory: the test tested tcp")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(keptBytes) != calls || len(seenDirect) != calls || len(keptFloats) != calls {
				t.Fatalf("the actions ran %d, %d and %d times, want %d each", len(keptBytes), len(seenDirect), len(keptFloats), calls)
			}
			for i := range calls {
				if !bytes.Equal(keptBytes[i], wantBytes[i]) {
					t.Errorf("call %d: the argument the action kept on locality 1 is %v, was sent as %v", i, keptBytes[i], wantBytes[i])
				}
				if !bytes.Equal(seenDirect[i], wantBytes[i]) {
					t.Errorf("call %d: the direct action saw %v on locality 1, was sent %v", i, seenDirect[i], wantBytes[i])
				}
				if !bytes.Equal(gotBytes[i], wantBytes[i]) {
					t.Errorf("call %d: the result kept on locality 0 is %v, want %v", i, gotBytes[i], wantBytes[i])
				}
				if !bytes.Equal(gotDirect[i], wantBytes[i]) {
					t.Errorf("call %d: the direct echo's result kept on locality 0 is %v, want %v", i, gotDirect[i], wantBytes[i])
				}
				if fmt.Sprint(keptFloats[i]) != fmt.Sprint(wantFloats[i]) {
					t.Errorf("call %d: the []float64 argument kept on locality 1 is %v, was sent as %v", i, keptFloats[i], wantFloats[i])
				}
				for j, v := range gotFloats[i] {
					if v != 2*wantFloats[i][j] {
						t.Errorf("call %d: result[%d] kept on locality 0 is %v, want %v", i, j, v, 2*wantFloats[i][j])
						break
					}
				}
			}
			finalizeAll(t, rts)
		})
	}
}

// TestSHMDirectRoundTripAllocs: a round trip of a direct action echoing
// 64 bytes over the shared-memory port allocates the caller's future
// (with room for the small chunk) and nothing else — not the parcels, not
// the callee's serving of the call, which the action's next call reuses
// — on both localities together. Heartbeats and the start's leftovers
// allocate now and then, hence the margin.
func TestSHMDirectRoundTripAllocs(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector allocates on its own; the count is meant without it")
	}
	reg := NewRegistry()
	echo := RegisterDirect(reg, "test.echo-direct", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
	rts := startTCPWith(t, 2, Config{Lanes: 1, Registry: reg, Progress: ProgressPoll, Transport: ParcelportSHM})
	ctx := context.Background()
	msg := make([]byte, 64)
	const calls = 3000
	var perCall float64
	err := Spawn(ctx, rts[0], func(ctx context.Context) (struct{}, error) {
		for range 200 {
			if _, err := Async(ctx, rts[0].Locality(1), echo, msg).Get(ctx); err != nil {
				return struct{}{}, err
			}
		}
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		for range calls {
			if _, err := Async(ctx, rts[0].Locality(1), echo, msg).Get(ctx); err != nil {
				return struct{}{}, err
			}
		}
		goruntime.ReadMemStats(&after)
		perCall = float64(after.Mallocs-before.Mallocs) / calls
		return struct{}{}, nil
	}).Err(ctx)
	if err != nil {
		t.Fatal(err)
	}
	finalizeAll(t, rts)
	t.Logf("%.2f allocations per round trip", perCall)
	if perCall > 1.2 {
		t.Errorf("%.2f allocations per direct round trip over shm, want 1 (the future)", perCall)
	}
}

// BenchmarkRoundTripSHMDirectSchedules: BenchmarkRoundTripSHMDirect in
// poll mode, also reporting the goroutines the Go scheduler started
// running per round trip (both localities, one process: sched/op, from
// runtime/metrics) — the hand-offs between ring readers, lanes and
// waiting tasks that the wall-clock figure hides on a loaded machine.
// Run it with -cpu 1 for one processor, as tessera run gives each
// locality when they fill the cores.
func BenchmarkRoundTripSHMDirectSchedules(b *testing.B) {
	reg := NewRegistry()
	echo := RegisterDirect(reg, "bench.echo-direct-sched", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
	rts := startTCPWith(b, 2, Config{Lanes: 1, Registry: reg, Progress: ProgressPoll, Transport: ParcelportSHM})
	ctx := context.Background()
	msg := make([]byte, 64)
	sample := []gometrics.Sample{{Name: "/sched/latencies:seconds"}}
	schedules := func() uint64 {
		gometrics.Read(sample)
		var n uint64
		for _, c := range sample[0].Value.Float64Histogram().Counts {
			n += c
		}
		return n
	}
	err := Spawn(ctx, rts[0], func(ctx context.Context) (struct{}, error) {
		for range 200 {
			if _, err := Async(ctx, rts[0].Locality(1), echo, msg).Get(ctx); err != nil {
				return struct{}{}, err
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		before := schedules()
		for range b.N {
			if _, err := Async(ctx, rts[0].Locality(1), echo, msg).Get(ctx); err != nil {
				return struct{}{}, err
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(schedules()-before)/float64(b.N), "sched/op")
		return struct{}{}, nil
	}).Err(ctx)
	if err != nil {
		b.Fatal(err)
	}
	finalizeAll(b, rts)
}
