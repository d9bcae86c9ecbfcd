//go:build linux

package runtime

import (
	"bytes"
	"context"
	"testing"
)

// BenchmarkRoundTripSHMDirectStepped: a direct round trip of 64 bytes
// between two localities of this process over the shared-memory port in
// poll mode, with one goroutine doing every step itself: the call, locality
// 1's Poll (which reads the call, runs the action and writes the reply),
// locality 0's Poll (which reads the reply). Nothing waits, spins or
// switches goroutines in between, so the figure is the processor's work
// per round trip on both sides together, without the waits and the
// transfers of cache lines between cores that the end-to-end figure holds;
// under an instruction counter (callgrind) it is deterministic. Run it
// with -cpu 1, so that the ring readers take no turn while it runs.
func BenchmarkRoundTripSHMDirectStepped(b *testing.B) {
	reg := NewRegistry()
	echo := RegisterDirect(reg, "bench.echo-direct-stepped", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
	rts := startTCPWith(b, 2, Config{Lanes: 1, Registry: reg, Progress: ProgressPoll, Transport: ParcelportSHM})
	p0, ok0 := rts[0].port.(ringPoller)
	p1, ok1 := rts[1].port.(ringPoller)
	if !ok0 || !ok1 {
		b.Fatalf("locality ports are %T and %T, want ports whose rings a task polls", rts[0].port, rts[1].port)
	}
	ctx := context.Background()
	msg := make([]byte, 64)
	for i := range msg {
		msg[i] = byte(i)
	}
	round := func() {
		f := Async(ctx, rts[0].Locality(1), echo, msg)
		for !f.ready.Load() {
			p1.Poll()
			p0.Poll()
		}
		r, err := f.Get(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if !bytes.Equal(r, msg) {
			b.Fatalf("locality 1 echoed %v, want %v", r, msg)
		}
	}
	for range 200 {
		round()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		round()
	}
	b.StopTimer()
	finalizeAll(b, rts)
}
