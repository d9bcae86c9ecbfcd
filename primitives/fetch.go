package primitives

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"github.com/tinylib/msgp/msgp"
)

// fetchArgs are the arguments of fetch_block and fetch_tile: the full name
// of an array, a block of the tile the target holds, and the locality
// asking (told the tile's GID when the tile moved).
type fetchArgs struct {
	Name  string
	Block annotate.Block
	From  uint32
}

// MarshalParcel encodes the name and the block's spans (msgp).
func (f fetchArgs) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	b = msgp.AppendString(b, f.Name)
	b = msgp.AppendInt(b, len(f.Block))
	for _, s := range f.Block {
		b = msgp.AppendInt(b, s.Start)
		b = msgp.AppendInt(b, s.Stop)
	}
	return msgp.AppendUint32(b, f.From), nil, nil
}

// UnmarshalParcel decodes what MarshalParcel produced.
func (f *fetchArgs) UnmarshalParcel(b []byte, _ [][]byte) error {
	var err error
	if f.Name, b, err = msgp.ReadStringBytes(b); err != nil {
		return fmt.Errorf("fetch_block arguments: %w", err)
	}
	var n int
	if n, b, err = msgp.ReadIntBytes(b); err != nil {
		return fmt.Errorf("fetch_block arguments: %w", err)
	}
	if n < 0 || n > 3 {
		return fmt.Errorf("fetch_block arguments: a block of %d dimensions", n)
	}
	f.Block = make(annotate.Block, n)
	for d := range f.Block {
		if f.Block[d].Start, b, err = msgp.ReadIntBytes(b); err != nil {
			return fmt.Errorf("fetch_block arguments: %w", err)
		}
		if f.Block[d].Stop, b, err = msgp.ReadIntBytes(b); err != nil {
			return fmt.Errorf("fetch_block arguments: %w", err)
		}
	}
	if f.From, _, err = msgp.ReadUint32Bytes(b); err != nil {
		return fmt.Errorf("fetch_block arguments: %w", err)
	}
	return nil
}

// fetchAction is fetch_block: it waits until the named array is published
// on this locality and returns the elements of the block, which must lie in
// the tile it holds, row-major. The result travels as one raw chunk. If
// the tile's AGAS component moved (MigrateTile), the fetch is passed on to
// where it lives through AGAS, and the asking locality is told the tile's
// GID, so that its next fetches go there.
func (acts *Actions) fetchAction(ctx context.Context, f fetchArgs) ([]float64, error) {
	rt := runtime.FromContext(ctx)
	if rt == nil {
		return nil, fmt.Errorf("fetch_block of array %s: no runtime", f.Name)
	}
	t := acts.tableOf(rt)
	a, err := t.tile(rt, f.Name).Get(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetch_block on locality %d: %w", rt.Here(), err)
	}
	if e := a.env.Load(); e != nil {
		e.name(a)
	}
	h := a.ann.Local().Halo
	if len(f.Block) != len(h) || checkBlock(a.ann.Tiling.Shape, f.Block) != nil || !h.Contains(f.Block) {
		return nil, fmt.Errorf("fetch_block on locality %d: array %s: block %v is not in the tile %v held here", rt.Here(), f.Name, f.Block, h)
	}
	if a.gid != 0 && !acts.agas.IsLocal(rt, a.gid) {
		return acts.forward(ctx, rt, a, f)
	}
	if !a.hold() {
		return nil, fmt.Errorf("fetch_block on locality %d: array %s was released by every locality", rt.Here(), describeArray(f.Name))
	}
	defer a.unhold()
	// The reply's memory: the runtime sends it, nobody gives it back.
	out := runtime.NewTile(rt, f.Block.Size(), runtime.TileOptions{Uncleared: true}).Float64s()
	copyBlock(out, f.Block, a.data, h, f.Block)
	t.ctr.bytesServed.Add(uint64(8 * len(out)))
	return out, nil
}

// forward passes a fetch of a's tile, whose component moved, on to where it
// lives, and tells the asking locality the tile's GID. a.gid is set (by
// Env.name, under the table's lock, before the caller read it).
func (acts *Actions) forward(ctx context.Context, rt *runtime.Runtime, a *arrayState, f fetchArgs) ([]float64, error) {
	acts.tableOf(rt).ctr.fetchesForwarded.Add(1)
	r := agas.ReadInto(ctx, acts.agas, rt, a.gid, acts.read, fetchArgs{Name: f.Name, Block: f.Block, From: rt.Here()}, nil)
	var learnt *runtime.Future[struct{}]
	if f.From != rt.Here() {
		// The asker learns the GID before it has the reply.
		learnt = runtime.Async(ctx, rt.Locality(f.From), acts.learn, tileGID{Name: f.Name, Tile: int(rt.Here()), GID: a.gid})
	}
	out, err := r.Get(ctx)
	if err == nil && learnt != nil {
		err = learnt.Err(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch_block on locality %d: array %s: its tile moved (AGAS %v): %w", rt.Here(), f.Name, a.gid, err)
	}
	return out, nil
}

// Fetch returns the elements of block b of the whole array, row-major,
// from whichever localities own them (the global view): the parts this
// locality owns are copied, every other tile's part comes from its
// locality's fetch_block as one raw chunk. The block needs the array's
// number of dimensions and must lie inside its shape; an empty block gives
// an empty slice. Any locality may fetch at any time while the array is
// not released.
func (a *Array) Fetch(ctx context.Context, b annotate.Block) *runtime.Future[[]float64] {
	if a == nil || a.env.Load() == nil {
		return runtime.MakeFailed[[]float64](fmt.Errorf("primitives: Fetch: the array was not made by a primitive of an Env"))
	}
	e := a.env.Load()
	if err := e.adopt("Fetch", a); err != nil {
		return runtime.MakeFailed[[]float64](err)
	}
	if err := checkBlock(a.ann.Tiling.Shape, b); err != nil {
		return runtime.MakeFailed[[]float64](e.errorf("Fetch", "array %s: %v", a.Name(), err))
	}
	b = b.Clone()
	return runtime.SpawnNamed(ctx, e.rt, "primitives.Fetch", func(ctx context.Context) ([]float64, error) {
		if err := a.pin(e, "Fetch"); err != nil {
			return nil, err
		}
		defer a.unpin()
		// The caller's once returned (runtime.AdoptTile gives it back);
		// left to the collector on a failure, as a reply may still land.
		out := runtime.NewTile(e.rt, b.Size(), runtime.TileOptions{})
		if out.Len() == 0 {
			return out.Float64s(), nil
		}
		if err := e.gatherBlock(ctx, "Fetch", a, b, out); err != nil {
			return nil, err
		}
		return out.Float64s(), nil
	})
}

// checkBlock checks that b is a block of an array of shape.
func checkBlock(shape []int, b annotate.Block) error {
	if len(b) != len(shape) {
		return fmt.Errorf("block %v has %d dimensions, want %d", b, len(b), len(shape))
	}
	for d, s := range b {
		if s.Start < 0 || s.Stop > shape[d] || s.Start > s.Stop {
			return fmt.Errorf("block %v is not inside the shape %v", b, shape)
		}
	}
	return nil
}

// gatherBlock fills out, laid over block b, with the elements of a: local
// ones copied, remote ones fetched from their owners' tiles, all at once.
// A fetch straight into out holds it (fetchTile): out released after a
// failure is not reused before the reply landed.
func (e *Env) gatherBlock(ctx context.Context, op string, a *Array, b annotate.Block, outTile *runtime.Tile) error {
	out := outTile.Float64s()
	type piece struct {
		from  int
		block annotate.Block
	}
	var remote []piece
	for i, t := range a.ann.Tiling.Tiles {
		p, ok := t.Owned.Intersect(b)
		if !ok {
			continue
		}
		if i == e.Locality() {
			copyBlock(out, b, a.data, a.ann.Local().Halo, p)
			continue
		}
		remote = append(remote, piece{i, p})
	}
	if len(remote) == 1 && remote[0].block.Equal(b) {
		_, err := e.fetchTile(ctx, a, remote[0].from, b, outTile).Get(ctx)
		return wrapFetch(e, op, err)
	}
	fs := make([]*runtime.Future[[]float64], len(remote))
	bufs := make([]*runtime.Tile, len(remote))
	// Released however this ends: a buffer whose fetch is still on its way
	// goes back once the reply landed (fetchTile holds it).
	defer func() {
		for _, t := range bufs {
			t.Release()
		}
	}()
	for k, p := range remote {
		bufs[k] = runtime.NewTile(e.rt, p.block.Size(), runtime.TileOptions{Uncleared: true})
		fs[k] = e.fetchTile(ctx, a, p.from, p.block, bufs[k])
	}
	for k, f := range fs {
		if _, err := f.Get(ctx); err != nil {
			return wrapFetch(e, op, err)
		}
		copyBlock(out, b, bufs[k].Float64s(), remote[k].block, remote[k].block)
	}
	return nil
}

// fetchTile is fetchInto into dst's memory, holding dst until the reply
// landed (runtime.UseTile): dst released meanwhile is not reused under
// the reply, and a dst released before the call fails it.
func (e *Env) fetchTile(ctx context.Context, a *Array, from int, block annotate.Block, dst *runtime.Tile) *runtime.Future[[]float64] {
	return runtime.UseTile(dst, func(b []float64) *runtime.Future[[]float64] {
		return e.fetchInto(ctx, a, from, block, b)
	})
}

func wrapFetch(e *Env, op string, err error) error {
	if err == nil {
		return nil
	}
	return e.wrap(op, err)
}

// fetchInto fetches block of tile `from` of a (inside its held block) into
// dst, which has block's size: the chunk is read straight into dst. A tile
// whose GID this locality learned (it moved) is read through AGAS from
// where it lives (agas.ReadInto: the owner from the cache, or its home);
// any other by name from its locality, which forwards the fetch if the
// tile moved (see migrate.go).
func (e *Env) fetchInto(ctx context.Context, a *Array, from int, block annotate.Block, dst []float64) *runtime.Future[[]float64] {
	args := fetchArgs{Name: a.ann.FullName(), Block: block, From: e.rt.Here()}
	// Counted until the reply is in: this locality's release of a waits
	// for it, so the tile is not dropped under the fetch.
	if !a.startFetch() {
		return runtime.MakeFailed[[]float64](e.errorf("fetch", "array %s of generation %d was released on this locality before its fetch from locality %d", a.Name(), a.ann.Generation, from))
	}
	var f *runtime.Future[[]float64]
	if gid := a.learnedGID(from); gid != 0 {
		f = agas.ReadInto(ctx, e.acts.agas, e.rt, gid, e.acts.read, args, dst)
	} else {
		f = runtime.AsyncInto(ctx, e.rt.Locality(uint32(from)), e.acts.fetch, args, dst)
	}
	f = runtime.Finally(f, a.endFetch)
	return runtime.Then(ctx, f, func(_ context.Context, v []float64) ([]float64, error) {
		if len(v) != block.Size() {
			return nil, fmt.Errorf("array %s: fetch of block %v from locality %d returned %d elements, want %d", a.Name(), block, from, len(v), block.Size())
		}
		e.tiles.ctr.bytesFetched.Add(uint64(8 * len(v)))
		e.tiles.ctr.blocksFetched.Add(1)
		return v, nil
	})
}

// copyBlock copies the elements of block sub from src, row-major over
// block sb, to dst, row-major over block db (both contain sub), one copy
// per contiguous run of the innermost dimension.
func copyBlock(dst []float64, db annotate.Block, src []float64, sb annotate.Block, sub annotate.Block) {
	if sub.Empty() {
		return
	}
	ds, ss, us := padBlock(db), padBlock(sb), padBlock(sub)
	dr, dc := ds[1].Len(), ds[2].Len()
	sr, sc := ss[1].Len(), ss[2].Len()
	n := us[2].Len()
	// Whole rows of both: one run per page.
	if us[2] == ds[2] && us[2] == ss[2] && us[1] == ds[1] && us[1] == ss[1] {
		for p := us[0].Start; p < us[0].Stop; p++ {
			do := (p - ds[0].Start) * dr * dc
			so := (p - ss[0].Start) * sr * sc
			copy(dst[do:do+dr*dc], src[so:so+sr*sc])
		}
		return
	}
	for p := us[0].Start; p < us[0].Stop; p++ {
		for r := us[1].Start; r < us[1].Stop; r++ {
			do := ((p-ds[0].Start)*dr+(r-ds[1].Start))*dc + (us[2].Start - ds[2].Start)
			so := ((p-ss[0].Start)*sr+(r-ss[1].Start))*sc + (us[2].Start - ss[2].Start)
			copy(dst[do:do+n], src[so:so+n])
		}
	}
}

// padBlock returns b padded with leading unit spans to 3-D.
func padBlock(b annotate.Block) (p [3]annotate.Span) {
	off := 3 - len(b)
	for d := range 3 {
		if d < off {
			p[d] = annotate.Span{Start: 0, Stop: 1}
		} else {
			p[d] = b[d-off]
		}
	}
	return p
}
