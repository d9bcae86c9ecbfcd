package runtime

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrTileReleased: a Tile was used after its owner released it.
var ErrTileReleased = errors.New("runtime: tile used after Release")

// tileReleased is the bit of Tile.refs set by Release; the bits below it
// count the references: the owner's until Release, plus one per Hold.
const tileReleased = 1 << 62

// Tile is float64 memory of the locality with one owner, who gives it back
// with Release. A locality keeps released memory for reuse — the next tile
// of the same length, the next parcel chunk of that size — instead of
// leaving it to the collector (up to Config.RecycleBytes): bulk transfers
// and primitives in a steady state touch no fresh page. So a Tile is a
// handle, not a slice: its memory is reached through Float64s, which
// panics once the tile is released, and goes back exactly once, however
// often Release is called.
//
// Work that uses the memory after its owner may have let go — a call
// whose reply is read into it, a send that reads from it — holds the tile
// (Hold, or UseTile around the call): Release then only marks the tile
// released, and the memory goes back when the last hold ends, never under
// a reply still on its way.
//
// A slice taken from Float64s is the tile's memory, not a copy: the owner
// must not keep it past Release; with Config.PoisonReleased, for tests,
// such a slice reads NaN once the memory went back. An owner that never
// releases its tile leaves ordinary memory to the collector (a tile of
// shared memory stays mapped until the process ends). The zero of a
// *Tile, nil, is an empty tile: Float64s returns nil and Release does
// nothing.
type Tile struct {
	data []float64
	rt   *Runtime
	refs atomic.Int64
}

// TileOptions says what memory NewTile gives. The zero value is cleared
// memory of the locality's own.
type TileOptions struct {
	// Lendable asks for memory that Channel.Lend lends without a copy to
	// the localities on this machine: a shared segment, when another
	// locality of the job on the same machine mapped this one's memory in
	// the start barrier and the tile takes at least 4 MiB; ordinary
	// memory otherwise.
	Lendable bool
	// Uncleared gives reused memory as its last owner left it, for a
	// caller that sets every element before anything reads one; fresh
	// memory is zero either way.
	Uncleared bool
}

// NewTile returns a tile of n float64s on rt's locality, owned by the
// caller: memory a released tile of that length (or at most a quarter
// longer, cut) gave back when there is some, fresh memory otherwise
// (advised for transparent huge pages from 4 MiB, as hugepage.Float64s
// does).
func NewTile(rt *Runtime, n int, o TileOptions) *Tile {
	var b []float64
	if o.Lendable {
		b = rt.sharedFloat64s(n, !o.Uncleared)
	} else if o.Uncleared {
		b = rt.uncleared(n)
	} else {
		b = rt.float64s(n)
	}
	return newTile(rt, b)
}

// AdoptTile makes v, memory the locality handed to the caller, a tile the
// caller owns, so that Release gives it back: an action's []float64
// argument, the value of a collective or of Channel.Get (memory lent by
// another locality then goes back to it), Array.Fetch's result. The
// caller hands v over: it uses the memory only through the tile from now
// on. Memory the locality did not hand out (the caller's own) must not be
// adopted.
func AdoptTile(rt *Runtime, v []float64) *Tile { return newTile(rt, v) }

func newTile(rt *Runtime, b []float64) *Tile {
	t := &Tile{data: b, rt: rt}
	t.refs.Store(1)
	return t
}

// Float64s returns the tile's memory. It panics, naming the tile, once the
// tile is released.
func (t *Tile) Float64s() []float64 {
	if t == nil {
		return nil
	}
	if t.refs.Load()&tileReleased != 0 {
		panic(t.usedAfterRelease("Float64s"))
	}
	return t.data
}

// Len returns the tile's number of float64s, also after Release.
func (t *Tile) Len() int {
	if t == nil {
		return 0
	}
	return len(t.data)
}

// Released reports whether the tile was released.
func (t *Tile) Released() bool { return t != nil && t.refs.Load()&tileReleased != 0 }

// Release says the owner is done with the tile. Its memory goes back to
// the locality — to be reused by the next tile or chunk of its size, a
// shared segment once no locality it was lent to holds it, lent memory to
// its lender — now, or when the last Hold ends. A second Release does
// nothing.
func (t *Tile) Release() {
	if t == nil {
		return
	}
	for {
		r := t.refs.Load()
		if r&tileReleased != 0 {
			return
		}
		if t.refs.CompareAndSwap(r, (r|tileReleased)-1) {
			if r == 1 {
				t.giveBack()
			}
			return
		}
	}
}

// Hold keeps the tile's memory from going back until Unhold, for work
// that uses it and may outlive the owner's interest: it reports false,
// taking nothing, when the tile is released already. Every Hold that
// reported true takes one Unhold.
func (t *Tile) Hold() bool {
	if t == nil {
		return true
	}
	for {
		r := t.refs.Load()
		if r&tileReleased != 0 {
			return false
		}
		if t.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// Unhold ends a Hold; the memory goes back if the tile was released and
// this was the last hold.
func (t *Tile) Unhold() {
	if t == nil {
		return
	}
	switch r := t.refs.Add(-1); {
	case r == tileReleased:
		t.giveBack()
	case r == 0 || r&(tileReleased-1) == tileReleased-1:
		// The owner's reference, or none at all: more Unholds than Holds.
		panic(fmt.Sprintf("runtime: locality %d: Unhold of %v without a Hold", t.here(), t))
	}
}

// UseTile runs use with t's memory, for a call that goes on using it after
// use returns — AsyncInto reading a reply into it, a send reading from it
// — and holds t until the future use returns is ready: if t is released
// meanwhile its memory stays out of the locality's reuse until then. It
// returns that future's result, ready once the hold has ended. A tile
// released already fails the future with ErrTileReleased, and use does
// not run.
func UseTile[T any](t *Tile, use func(b []float64) *Future[T]) *Future[T] {
	if !t.Hold() {
		return MakeFailed[T](fmt.Errorf("runtime: locality %d: UseTile of %v: %w", t.here(), t, ErrTileReleased))
	}
	f := use(t.data)
	if f == nil {
		t.Unhold()
		return f
	}
	// The hold ends before anything waiting for the result wakes up.
	out := newFuture[T](f.sched)
	f.onReady(func() {
		v, err := f.result()
		t.Unhold()
		out.set(v, err)
	})
	return out
}

// String names the tile by its length.
func (t *Tile) String() string {
	if t == nil {
		return "empty tile"
	}
	return fmt.Sprintf("tile of %d float64s", len(t.data))
}

func (t *Tile) here() uint32 {
	if t == nil || t.rt == nil {
		return 0
	}
	return t.rt.here
}

func (t *Tile) usedAfterRelease(op string) error {
	return fmt.Errorf("runtime: locality %d: %s of %v: %w", t.here(), op, t, ErrTileReleased)
}

// giveBack returns the memory to the locality, once: no reference is left.
func (t *Tile) giveBack() {
	if t.rt != nil {
		t.rt.giveBack(t.data)
	}
}
