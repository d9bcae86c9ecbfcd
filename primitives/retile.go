package primitives

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Retile returns a laid out by l (retile_d): any tiling kind or explicit
// tiles, with or without an overlap. Each locality fills its new tile from
// the pieces of annotate.Plan that go to it: the elements it owned in a are
// copied locally, every other piece is fetched from the locality owning it
// in a (fetch_block, one raw chunk per piece). Only the intersecting blocks
// move; nothing is gathered. The result is named like an element-wise
// result (a's base name with "~k", generation + 1) unless l.Name is set;
// a target tiling of another shape, another tile count or tiles that do
// not cover the array once fails the future.
func Retile(ctx context.Context, e *Env, a *runtime.Future[*Array], l Layout) *runtime.Future[*Array] {
	const op = "Retile"
	k := e.derive()
	return runtime.Then(ctx, a, func(ctx context.Context, x *Array) (*Array, error) {
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		if err := e.adopt(op, x); err != nil {
			return nil, err
		}
		t, err := e.tiling(op, x.ann.Tiling.Shape, l)
		if err != nil {
			return nil, fmt.Errorf("%w (retiling array %s)", err, x.Name())
		}
		pieces, err := annotate.Plan(x.ann.Tiling, t)
		if err != nil {
			return nil, e.errorf(op, "array %s: %v", x.Name(), err)
		}
		ann := derivedAnnotation(k, x)
		ann.Tiling = t
		if l.Name != "" {
			ann.Name = l.Name
		}
		here := e.Locality()
		h := t.Tiles[here].Halo
		data := e.tile(h.Size())
		fill := e.fillPieces
		if x.ann.Tiling.Cyclic != nil || t.Cyclic != nil {
			// Pieces in global indices, stored elsewhere on each side.
			fill = func(ctx context.Context, x *Array, pieces []annotate.Piece, _ annotate.Block, data []float64) error {
				return e.fillCyclic(ctx, x, pieces, t, data)
			}
		}
		if err := fill(ctx, x, pieces, h, data); err != nil {
			return nil, e.wrap(op, err)
		}
		return e.newArray(op, ann, data)
	})
}

// fillPieces fills data, row-major over block h, with the pieces of a plan
// that go to this locality: local pieces copied from x's tile, the others
// fetched from their owners, straight into data when the piece is
// contiguous there.
func (e *Env) fillPieces(ctx context.Context, x *Array, pieces []annotate.Piece, h annotate.Block, data []float64) error {
	here := e.Locality()
	type pending struct {
		f       *runtime.Future[[]float64]
		block   annotate.Block
		scatter bool // fetched into a buffer to copy into data
	}
	var fs []pending
	var bufs []*runtime.Tile
	// Released however this ends: a buffer whose fetch is still on its way
	// goes back once the reply landed (fetchTile holds it).
	defer func() {
		for _, t := range bufs {
			t.Release()
		}
	}()
	// Remote pieces first, so they travel while the local ones are copied.
	for _, p := range pieces {
		if p.To != here || p.Local() {
			continue
		}
		if off, ok := contiguousIn(h, p.Block); ok {
			fs = append(fs, pending{f: e.fetchInto(ctx, x, p.From, p.Block, data[off:off+p.Block.Size()]), block: p.Block})
			continue
		}
		buf := runtime.NewTile(e.rt, p.Block.Size(), runtime.TileOptions{Uncleared: true})
		bufs = append(bufs, buf)
		fs = append(fs, pending{f: e.fetchTile(ctx, x, p.From, p.Block, buf), block: p.Block, scatter: true})
	}
	for _, p := range pieces {
		if p.To == here && p.Local() {
			copyBlock(data, h, x.data, x.ann.Local().Halo, p.Block)
		}
	}
	for _, p := range fs {
		buf, err := p.f.Get(ctx)
		if err != nil {
			return fmt.Errorf("array %s: %w", x.Name(), err)
		}
		if p.scatter {
			copyBlock(data, h, buf, p.block, p.block)
		}
	}
	return nil
}

// contiguousIn reports whether block b is one contiguous run of the
// row-major data over block h (which contains it), and its offset there.
func contiguousIn(h, b annotate.Block) (int, bool) {
	hp, bp := padBlock(h), padBlock(b)
	// Inner dimensions whole, after the first one that is cut.
	cut := false
	for d := 2; d >= 0; d-- {
		if cut && bp[d].Len() != 1 {
			return 0, false
		}
		if bp[d] != hp[d] {
			cut = true
		}
	}
	off := ((bp[0].Start-hp[0].Start)*hp[1].Len()+(bp[1].Start-hp[1].Start))*hp[2].Len() + (bp[2].Start - hp[2].Start)
	return off, true
}
