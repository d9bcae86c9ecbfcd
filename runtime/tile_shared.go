package runtime

import "github.com/tessera-amt/tessera/internal/hugepage"

// sharedFloat64s returns n float64s for a tile that this locality may
// lend to others on its machine without a copy (Channel.Lend,
// TileOptions.Lendable): a segment of shared memory when another locality
// of the job, on the same machine, mapped this one's probe in the start
// barrier and n float64s take at least 4 MiB, memory as float64s gives
// otherwise. With zero false, memory given back is handed out as it was
// left, not cleared first (fresh memory is zero). The memory goes back
// with giveBack: a segment is not collected, and one never given back
// stays mapped until the process ends.
func (rt *Runtime) sharedFloat64s(n int, zero bool) []float64 {
	if 8*n >= hugepage.MinBytes {
		if b := rt.shared.Alloc(n, zero); b != nil {
			return b
		}
	}
	if zero {
		return rt.float64s(n)
	}
	return rt.uncleared(n)
}
