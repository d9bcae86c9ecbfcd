// Package memory holds the memory a locality reuses and lends: Pool keeps
// released tiles and used-up parcel chunks by length for the next of the
// same size; Shared is the locality's shared-memory segments, lent to the
// localities on its machine without a copy, and its mappings of theirs.
// The runtime's owned tiles (runtime.Tile) hand memory out and take it
// back through them; nothing here knows of tiles, parcels in flight or
// the job.
package memory

import (
	"math"
	"sync"

	"github.com/tessera-amt/tessera/parcel"
)

// Pool keeps the memory of released tiles (the runtime's Tile.Release) and of used
// up parcel chunks, by length, for the chunks of parcels that arrive
// later and for new tiles (the runtime's NewTile). A chunk overwrites the memory it is
// read into, so it is not zeroed; a tile is, unless asked otherwise.
// Either way the memory is not collected, and its pages are not given
// back to the system: bulk transfers and primitives in a steady state
// touch no fresh page. On a virtual machine the first touch of a page can
// cost more than writing it many times over: on the 2-core machine of
// docs/benchmarks.md a fresh 32 MiB tile took 14-85 ms to touch, clearing
// a reused one 3.3 ms.
type Pool struct {
	mu    sync.Mutex
	limit int
	held  int
	bufs  map[int][][]float64
}

// NewPool returns a pool that keeps at most limit bytes.
func NewPool(limit int) *Pool { return &Pool{limit: limit} }

// Held returns the bytes the pool keeps, in how many lengths.
func (r *Pool) Held() (bytes, lengths int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held, len(r.bufs)
}

// Take returns held memory of n float64s, or nil: a buffer of exactly
// that length, else the shortest one at most a quarter longer, cut to n
// (the rest of it stays unused until the buffer is collected). Sizes
// that shrink step by step, such as the panels of an LU factorisation,
// then land in memory touched already.
func (r *Pool) Take(n int) []float64 {
	nbytes := 8 * n
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bufs[nbytes]) == 0 {
		best := 0
		for m := range r.bufs {
			if m > nbytes && m <= nbytes+nbytes/4 && (best == 0 || m < best) {
				best = m
			}
		}
		if best == 0 {
			return nil
		}
		nbytes = best
	}
	list := r.bufs[nbytes]
	b := list[len(list)-1]
	list[len(list)-1] = nil
	if len(list) == 1 {
		// No empty lists: a miss scans every length held.
		delete(r.bufs, nbytes)
	} else {
		r.bufs[nbytes] = list[:len(list)-1]
	}
	r.held -= nbytes
	return b[:n:n]
}

// Put keeps b for a later Take of its length, unless it is small or the
// pool is full.
func (r *Pool) Put(b []float64) {
	n := len(b) * 8
	if n <= parcel.SmallChunks {
		// Chunks this small are read into their parcel's own room, never
		// into recycled memory — and such a b may be a view of that room,
		// which would keep the whole parcel alive.
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held+n > r.limit {
		return // over the limit: let the collector have it
	}
	if r.bufs == nil {
		r.bufs = make(map[int][][]float64)
	}
	r.bufs[n] = append(r.bufs[n], b[:len(b):len(b)])
	r.held += n
}

// Poison fills b with NaN (the runtime's Config.PoisonReleased).
func Poison(b []float64) {
	nan := math.NaN()
	for i := range b {
		b[i] = nan
	}
}
