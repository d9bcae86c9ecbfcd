package runtime

import (
	"sync"

	"github.com/tessera-amt/tessera/parcel"
)

// DefaultRecycleBytes bounds the memory a locality keeps for reuse.
const DefaultRecycleBytes = 256 << 20

// recycler keeps memory handed back with Runtime.Recycle, by exact length,
// for the chunks of parcels that arrive later. Reused memory is overwritten
// by the read, so it is neither zeroed nor collected: bulk transfers in a
// steady state allocate nothing.
type recycler struct {
	mu    sync.Mutex
	limit int
	held  int
	bufs  map[int][][]float64
}

func (r *recycler) get(nbytes int) []byte {
	if nbytes%8 != 0 {
		return nil
	}
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
	return parcel.Float64Bytes(b)
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

// Recycle hands b back to the locality: the chunks of parcels that arrive
// later, of exactly b's size, are read into it instead of into new memory.
// Slices of at most parcel.SmallChunks bytes are not kept: such chunks are
// read into their parcel's own memory.
// An action that is done with a large []float64 argument recycles it so a
// stream of calls allocates nothing. The caller must not touch b afterwards
// — not even through another slice of the same memory. At most
// Config.RecycleBytes are kept.
func (rt *Runtime) Recycle(b []float64) { rt.recycle.put(b) }
