package primitives

import (
	"sync"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas/blas64"
)

// graphStep is the scratch memory of one step of a tileGraph: the tiles
// received for the step's kernels and the copies they pack, given back to
// the locality (runtime.Tile.Release) once every task the step added is
// done. The next steps' tiles of those sizes then land in memory the
// process touched already: a fresh page costs a fault of several
// microseconds on a virtual machine, about what a 256-wide tile's
// multiply-add costs per page it reads.
type graphStep struct {
	mu    sync.Mutex
	tiles []*runtime.Tile
	// pending counts the step's tasks not done, plus one while the step
	// is being built; at zero the tiles go back.
	pending int
}

// beginStep opens a step and makes it the graph's current one: the
// tasks and receives the graph adds while it is current belong to it, and
// so do the tiles they keep.
func (g *tileGraph) beginStep() *graphStep {
	g.cur = &graphStep{pending: 1}
	return g.cur
}

// endStep says no more tasks join s: its tiles go back once those it has
// are done.
func (g *tileGraph) endStep(s *graphStep) {
	if g.cur == s {
		g.cur = nil
	}
	s.done()
}

// track counts f as a task of step s (none: nothing to count).
func track[T any](s *graphStep, f *runtime.Future[T]) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.pending++
	s.mu.Unlock()
	runtime.Finally(f, s.done)
}

// done ends one of the step's tasks, or its building.
func (s *graphStep) done() {
	s.mu.Lock()
	s.pending--
	var free []*runtime.Tile
	if s.pending == 0 {
		free, s.tiles = s.tiles, nil
	}
	s.mu.Unlock()
	for _, t := range free {
		t.Release()
	}
}

// keep gives t back when the step's tasks are done (now if they are; no
// step: t is left to the collector).
func (s *graphStep) keep(t *runtime.Tile) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.pending > 0 {
		s.tiles = append(s.tiles, t)
		t = nil
	}
	s.mu.Unlock()
	t.Release()
}

// scratch returns an uncleared tile of rows x cols for a task of step s
// to fill, kept until the step is done.
func (g *tileGraph) scratch(s *graphStep, rows, cols int) blas64.General {
	t := runtime.NewTile(g.e.rt, rows*cols, runtime.TileOptions{Uncleared: true})
	data := t.Float64s()
	s.keep(t)
	return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: data}
}
