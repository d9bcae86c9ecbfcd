package primitives

import "sync/atomic"

// Counters are one locality's figures of array traffic and array memory,
// since its Env was made (Env.Counters).
type Counters struct {
	// BytesFetched is the bytes of remote blocks this locality received
	// (Fetch, Retile, Dot); BlocksFetched counts those blocks.
	BytesFetched, BlocksFetched uint64
	// BytesServed is the bytes of its tiles this locality sent to others'
	// fetches.
	BytesServed uint64
	// LiveArrayBytes is the memory of the tiles of this locality's arrays
	// made and not yet released (Array.Release); PeakArrayBytes is its
	// highest value.
	LiveArrayBytes, PeakArrayBytes int64
}

// counters are the Env's atomic counters behind Counters.
type counters struct {
	bytesFetched, blocksFetched, bytesServed atomic.Uint64
	live, peak                               atomic.Int64
}

// Counters returns a snapshot of the Env's counters.
func (e *Env) Counters() Counters {
	return Counters{
		BytesFetched:   e.ctr.bytesFetched.Load(),
		BlocksFetched:  e.ctr.blocksFetched.Load(),
		BytesServed:    e.ctr.bytesServed.Load(),
		LiveArrayBytes: e.ctr.live.Load(),
		PeakArrayBytes: e.ctr.peak.Load(),
	}
}

// track adds bytes (negative when memory is released) to LiveArrayBytes
// and raises PeakArrayBytes to the new value if it is higher.
func (e *Env) track(bytes int64) {
	live := e.ctr.live.Add(bytes)
	for {
		p := e.ctr.peak.Load()
		if live <= p || e.ctr.peak.CompareAndSwap(p, live) {
			return
		}
	}
}
