//go:build linux

package runtime

import (
	"context"
	"testing"
)

// BenchmarkRoundTripSHMDirect: one call of a direct action echoing 64
// bytes, waited for before the next, between two localities of this
// process over the shared-memory port, blocking and polling. -benchmem
// counts the allocations of both localities per round trip; the figure to
// compare with Open MPI's vader ping-pong is the end-to-end one
// (bench/pingpong -test rtt-direct), since in one process both localities
// share one scheduler.
func BenchmarkRoundTripSHMDirect(b *testing.B) {
	for _, mode := range []Progress{ProgressBlock, ProgressPoll} {
		b.Run(mode.String(), func(b *testing.B) {
			reg := NewRegistry()
			echo := RegisterDirect(reg, "bench.echo-direct", func(ctx context.Context, b []byte) ([]byte, error) { return b, nil })
			rts := startTCPWith(b, 2, Config{Lanes: 1, Registry: reg, Progress: mode, Transport: ParcelportSHM})
			benchEcho(b, rts, echo)
		})
	}
}
