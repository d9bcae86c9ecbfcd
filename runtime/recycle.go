package runtime

import (
	"math"
	"sync"

	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/parcel"
)

// DefaultRecycleBytes bounds the memory a locality keeps for reuse.
const DefaultRecycleBytes = 256 << 20

// recycler keeps the memory of released tiles (Tile.Release) and of used
// up parcel chunks, by exact length, for the chunks of parcels that arrive
// later and for new tiles (NewTile). A chunk overwrites the memory it is
// read into, so it is not zeroed; a tile is, unless asked otherwise.
// Either way the memory is not collected, and its pages are not given
// back to the system: bulk transfers and primitives in a steady state
// touch no fresh page. On a virtual machine the first touch of a page can
// cost more than writing it many times over: on the 2-core machine of
// docs/benchmarks.md a fresh 32 MiB tile took 14-85 ms to touch, clearing
// a reused one 3.3 ms.
type recycler struct {
	mu    sync.Mutex
	limit int
	held  int
	bufs  map[int][][]float64
}

// take returns held memory of exactly n float64s, or nil.
func (r *recycler) take(n int) []float64 {
	nbytes := 8 * n
	r.mu.Lock()
	defer r.mu.Unlock()
	list := r.bufs[nbytes]
	if len(list) == 0 {
		return nil
	}
	b := list[len(list)-1]
	list[len(list)-1] = nil
	r.bufs[nbytes] = list[:len(list)-1]
	r.held -= nbytes
	return b
}

func (r *recycler) put(b []float64) {
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

// giveBack takes back memory the locality handed out, for reuse: the
// chunks of parcels that arrive later, of exactly b's size, are read into
// it, and new tiles of its length take it. Slices of at most
// parcel.SmallChunks bytes are not kept: such chunks are read into their
// parcel's own memory. At most Config.RecycleBytes are kept.
//
// Shared memory goes back where it came from: a lendable tile's segment
// to this locality's segments, reused once no locality it was lent to
// holds it; a value another locality lent (Channel.Lend) to that
// locality.
//
// Nothing may use b afterwards: Tile.Release calls it once the tile's
// last reference is gone.
func (rt *Runtime) giveBack(b []float64) {
	if rt.shared.give(b, rt.cfg.PoisonReleased) {
		return
	}
	if rt.cfg.PoisonReleased && 8*len(b) > parcel.SmallChunks {
		// Smaller ones may be a view of a parcel's room, and are not kept.
		poison(b)
	}
	rt.recycle.put(b)
}

// poison fills b with NaN (Config.PoisonReleased).
func poison(b []float64) {
	nan := math.NaN()
	for i := range b {
		b[i] = nan
	}
}

// float64s returns n zeroed float64s (NewTile): memory given back
// (giveBack) when the locality holds a slice of exactly that length,
// fresh memory otherwise (advised for transparent huge pages from 4 MiB,
// as hugepage.Float64s does).
func (rt *Runtime) float64s(n int) []float64 {
	if 8*n > parcel.SmallChunks {
		if b := rt.recycle.take(n); b != nil {
			clear(b)
			return b
		}
	}
	return hugepage.Float64s(n)
}

// uncleared is float64s for memory its caller overwrites whole before
// anyone reads it (a collective's result, TileOptions.Uncleared):
// recycled memory is not cleared.
func (rt *Runtime) uncleared(n int) []float64 {
	if 8*n > parcel.SmallChunks {
		if b := rt.recycle.take(n); b != nil {
			return b
		}
	}
	return hugepage.Float64s(n)
}
