package primitives

import "github.com/tessera-amt/tessera/runtime"

// ownTileToSet returns memory for a tile whose every element the caller
// sets before anything reads one, of the locality's own rather than a
// shared segment: fresh memory of 4 MiB or more is advised onto
// transparent huge pages (a shared segment takes 4 KiB pages, a fault each
// on first write), so the tiles of ReadZarr and ZScore, which stream
// gigabytes through fresh memory, fault 512 times less. Such a tile is
// sent as chunks rather than lent when another locality on the machine
// reads it.
func (e *Env) ownTileToSet(n int) []float64 {
	return runtime.NewTile(e.rt, n, runtime.TileOptions{Uncleared: true}).Float64s()
}
