package primitives

import (
	"sync/atomic"

	"github.com/tessera-amt/tessera/trace"
)

// Counters are one locality's figures of array traffic and array memory,
// since its first Env was made (Env.Counters).
type Counters struct {
	// BytesFetched is the bytes of remote blocks this locality received
	// (Fetch, Retile, Dot); BlocksFetched counts those blocks.
	BytesFetched, BlocksFetched uint64
	// BytesServed is the bytes of tiles this locality sent to others'
	// fetches: its own tiles, and tiles migrated here (MigrateTile).
	BytesServed uint64
	// FetchesForwarded counts fetches of this locality's tiles that
	// arrived after the tile had migrated and were passed on to where it
	// lives (the asking locality then fetches from there directly).
	FetchesForwarded uint64
	// LiveArrayBytes is the memory of the tiles of this locality's arrays
	// made and not yet dropped (released by every locality: Array.Release
	// or the handle unreachable); PeakArrayBytes is its highest value.
	LiveArrayBytes, PeakArrayBytes int64
	// LiveArrays counts those arrays; AGASNames counts the names of their
	// tiles registered in AGAS (/array/<name>/<generation>/<locality>, the
	// arrays something fetched from) and not yet removed.
	LiveArrays, AGASNames int64
}

// counters are the Env's atomic counters behind Counters.
type counters struct {
	bytesFetched, blocksFetched, bytesServed, fetchesForwarded atomic.Uint64
	live, peak, arrays, named                                  atomic.Int64
}

// Counters returns a snapshot of the Env's counters.
func (e *Env) Counters() Counters {
	return Counters{
		BytesFetched:     e.tiles.ctr.bytesFetched.Load(),
		BlocksFetched:    e.tiles.ctr.blocksFetched.Load(),
		BytesServed:      e.tiles.ctr.bytesServed.Load(),
		FetchesForwarded: e.tiles.ctr.fetchesForwarded.Load(),
		LiveArrayBytes:   e.tiles.ctr.live.Load(),
		PeakArrayBytes:   e.tiles.ctr.peak.Load(),
		LiveArrays:       e.tiles.ctr.arrays.Load(),
		AGASNames:        e.tiles.ctr.named.Load(),
	}
}

// track adds bytes (negative when memory is released) to LiveArrayBytes
// and raises PeakArrayBytes to the new value if it is higher.
func (e *Env) track(bytes int64) {
	live := e.tiles.ctr.live.Add(bytes)
	for {
		p := e.tiles.ctr.peak.Load()
		if live <= p || e.tiles.ctr.peak.CompareAndSwap(p, live) {
			return
		}
	}
}

// counterSource feeds one locality's array counters into its metrics
// (runtime.Runtime.AddCounterSource: the Prometheus collector's
// tessera_arrays_live, tessera_array_bytes_live and
// tessera_array_agas_names); its tile table adds it when made.
type counterSource struct{ t *tileTable }

// FillCounters implements trace.CounterSource.
func (c counterSource) FillCounters(snap *trace.Snapshot) {
	snap.Arrays = &trace.ArrayCounters{Live: c.t.ctr.arrays.Load(), LiveBytes: c.t.ctr.live.Load(), AGASNames: c.t.ctr.named.Load()}
}
