package runtime

import (
	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/runtime/internal/memory"
)

// defaultRecycleBytes bounds the memory a locality keeps for reuse.
const defaultRecycleBytes = 256 << 20

// giveBack takes back memory the locality handed out, for reuse: the
// chunks of parcels that arrive later, of b's size or a little less
// (memory.Pool.Take), are read into it, and new tiles of such lengths
// take it. Slices of at most
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
	if rt.shared.Give(b, rt.cfg.PoisonReleased) {
		return
	}
	if rt.cfg.PoisonReleased && 8*len(b) > parcel.SmallChunks {
		// Smaller ones may be a view of a parcel's room, and are not kept.
		memory.Poison(b)
	}
	rt.recycle.Put(b)
}

// float64s returns n zeroed float64s (NewTile): memory given back
// (giveBack) when the locality holds a slice of that length or a little
// longer (memory.Pool.Take), fresh memory otherwise (advised for
// transparent huge pages from 4 MiB, as hugepage.Float64s does).
func (rt *Runtime) float64s(n int) []float64 {
	if 8*n > parcel.SmallChunks {
		if b := rt.recycle.Take(n); b != nil {
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
		if b := rt.recycle.Take(n); b != nil {
			return b
		}
	}
	return hugepage.Float64s(n)
}
