package primitives

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/runtime"
	"github.com/tinylib/msgp/msgp"
)

// Tiles as AGAS components, and their migration.
//
// A tile named in AGAS (Env.name) is a tileComponent: the bytes that
// answer other localities' fetches. On its home, the locality whose tile it
// is in the annotation, the component shares the Array's memory. The
// fetch_tile reader (agas.ReadInto) serves a block of it wherever it lives.
//
// A fetch of tile k from locality j resolves where the tile lives:
//
//   - j knows the tile's GID (it learned it when the tile had moved): AGAS
//     resolves it, from j's cache (a map look-up) or through the GID's
//     home, and the fetch goes to the owner as agas.ReadInto; a locality
//     the tile has left forwards it and tells j the new owner.
//   - j does not know it — every tile that never moved: the fetch goes by
//     the array's name to locality k, the tile's home, which answers from
//     its memory when the component is there. If the component left, the
//     home forwards the fetch through AGAS and tells j the GID (tile_gid),
//     so j's next fetches resolve as above.
//
// Either way the reply's bytes are read straight into the caller's slice.

// tileComponent is a tile as an AGAS component: what a fetch of one of its
// blocks needs, and its bytes, which travel as one raw chunk.
type tileComponent struct {
	Name  string         // the array's full name, for errors
	Tile  int            // its index in the tiling
	Shape []int          // the whole array's
	Held  annotate.Block // the block Data holds, row-major
	Data  []float64

	arr *arrayState // on the home, the Array whose memory Data is; nil after a move
}

// MarshalParcel implements runtime.ParcelMarshaler: the description in
// msgp, the bytes as one chunk.
func (c *tileComponent) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	b = msgp.AppendString(b, c.Name)
	b = msgp.AppendInt(b, c.Tile)
	b = msgp.AppendArrayHeader(b, uint32(len(c.Shape)))
	for _, d := range c.Shape {
		b = msgp.AppendInt(b, d)
	}
	b = msgp.AppendArrayHeader(b, uint32(len(c.Held)))
	for _, s := range c.Held {
		b = msgp.AppendInt(b, s.Start)
		b = msgp.AppendInt(b, s.Stop)
	}
	return b, [][]byte{parcel.Float64Bytes(c.Data)}, nil
}

// UnmarshalParcel implements runtime.ParcelUnmarshaler; the bytes are
// copied out of the chunk, which belongs to the parcel.
func (c *tileComponent) UnmarshalParcel(b []byte, chunks [][]byte) error {
	var err error
	if c.Name, b, err = msgp.ReadStringBytes(b); err != nil {
		return fmt.Errorf("tile component: %w", err)
	}
	if c.Tile, b, err = msgp.ReadIntBytes(b); err != nil {
		return fmt.Errorf("tile component of array %s: %w", c.Name, err)
	}
	var n uint32
	if n, b, err = msgp.ReadArrayHeaderBytes(b); err != nil || n > 3 {
		return fmt.Errorf("tile component of array %s: a shape of %d dimensions (%v)", c.Name, n, err)
	}
	c.Shape = make([]int, n)
	for d := range c.Shape {
		if c.Shape[d], b, err = msgp.ReadIntBytes(b); err != nil {
			return fmt.Errorf("tile component of array %s: %w", c.Name, err)
		}
	}
	if n, b, err = msgp.ReadArrayHeaderBytes(b); err != nil || n > 3 {
		return fmt.Errorf("tile component of array %s: a block of %d dimensions (%v)", c.Name, n, err)
	}
	c.Held = make(annotate.Block, n)
	for d := range c.Held {
		if c.Held[d].Start, b, err = msgp.ReadIntBytes(b); err != nil {
			return fmt.Errorf("tile component of array %s: %w", c.Name, err)
		}
		if c.Held[d].Stop, b, err = msgp.ReadIntBytes(b); err != nil {
			return fmt.Errorf("tile component of array %s: %w", c.Name, err)
		}
	}
	if len(chunks) != 1 || len(chunks[0]) != 8*c.Held.Size() {
		return fmt.Errorf("tile component of array %s: tile %d holds %v, %d elements, but its bytes did not come whole", c.Name, c.Tile, c.Held, c.Held.Size())
	}
	c.Data = make([]float64, c.Held.Size())
	copy(parcel.Float64Bytes(c.Data), chunks[0])
	return nil
}

// readTile is the fetch_tile reader: the elements of block f.Block of the
// tile, row-major, in memory of the serving locality's runtime.
func (acts *Actions) readTile(ctx context.Context, c *tileComponent, f fetchArgs) ([]float64, error) {
	rt := runtime.FromContext(ctx)
	if len(f.Block) != len(c.Held) || checkBlock(c.Shape, f.Block) != nil || !c.Held.Contains(f.Block) {
		return nil, fmt.Errorf("fetch_tile on locality %d: array %s: block %v is not in tile %d %v held here", rt.Here(), c.Name, f.Block, c.Tile, c.Held)
	}
	if c.arr != nil {
		// The home's component is the Array's memory: keep it from
		// going back to the runtime while it is copied.
		if !c.arr.hold() {
			return nil, fmt.Errorf("fetch_tile on locality %d: array %s was released by every locality", rt.Here(), describeArray(c.Name))
		}
		defer c.arr.unhold()
	}
	// The reply's memory: the runtime sends it, nobody gives it back.
	out := runtime.NewTile(rt, f.Block.Size(), runtime.TileOptions{Uncleared: true}).Float64s()
	copyBlock(out, f.Block, c.Data, c.Held, f.Block)
	acts.tableOf(rt).ctr.bytesServed.Add(uint64(8 * len(out)))
	return out, nil
}

// MigrateTile moves tile `tile` of array a — its AGAS component, the bytes
// that serve every other locality's fetches of it — to locality dest, and
// returns once it is there. Any locality may call it, at any time while a
// is not released, also while primitives fetch from a: fetches in flight
// wait for the move and follow it, and later fetches from every locality
// resolve to dest through AGAS. Moving a tile back to its home, or again
// elsewhere, works the same way.
//
// The annotation is unchanged on every locality: it describes the tiling,
// and tile i stays locality i's part, which locality i's primitives
// compute with and which its Array's local view (Local, Dense, View)
// shows. Arrays never change, so that view keeps its memory after a move:
// a move relocates where the tile is served from (AGAS knows where, ask
// TileLocality), not the owner's copy.
func MigrateTile(ctx context.Context, a *Array, tile, dest int) error {
	const op = "MigrateTile"
	if a == nil || a.env.Load() == nil {
		return fmt.Errorf("primitives: %s: the array was not made by a primitive of an Env", op)
	}
	e := a.env.Load()
	if tile < 0 || tile >= len(a.ann.Tiling.Tiles) {
		return e.errorf(op, "array %s of generation %d has no tile %d: it has %d, one per locality", a.ann.Name, a.ann.Generation, tile, len(a.ann.Tiling.Tiles))
	}
	if dest < 0 || dest >= e.Size() {
		return e.errorf(op, "tile %d of array %s of generation %d: no locality %d in a job of %d", tile, a.ann.Name, a.ann.Generation, dest, e.Size())
	}
	if err := e.adopt(op, a); err != nil {
		return err
	}
	if tile == e.Locality() {
		err := e.migrateOwn(ctx, a.arrayState, dest)
		goruntime.KeepAlive(a) // released only after the move
		return err
	}
	err := runtime.Async(ctx, e.rt.Locality(uint32(tile)), e.acts.migrate, tileMove{Name: a.ann.FullName(), Dest: dest}).Err(ctx)
	goruntime.KeepAlive(a)
	if err != nil {
		return e.wrap(op, fmt.Errorf("tile %d of array %s of generation %d to locality %d: %w", tile, a.ann.Name, a.ann.Generation, dest, err))
	}
	return nil
}

// migrateOwn moves this locality's tile of a to dest.
func (e *Env) migrateOwn(ctx context.Context, a *arrayState, dest int) error {
	const op = "MigrateTile"
	e.name(a)
	released := e.errorf(op, "tile %d of array %s (%s of generation %d) was released", e.Locality(), a.ann.FullName(), a.ann.Name, a.ann.Generation)
	// The home's component is the Array's memory: keep it while it travels.
	if !a.hold() {
		return released
	}
	defer a.unhold()
	if a.gid == 0 { // released before anything named it
		return released
	}
	if err := e.acts.agas.Migrate(ctx, e.rt, a.gid, uint32(dest)); err != nil {
		return e.wrap(op, fmt.Errorf("tile %d of array %s of generation %d to locality %d: %w", e.Locality(), a.ann.Name, a.ann.Generation, dest, err))
	}
	return nil
}

// migrateAction is the tile_migrate action, run on the tile's home:
// MigrateTile of its tile of the array named m.Name.
func (acts *Actions) migrateAction(ctx context.Context, m tileMove) (struct{}, error) {
	rt := runtime.FromContext(ctx)
	a, err := acts.tableOf(rt).tile(rt, m.Name).Get(ctx)
	if err != nil {
		return struct{}{}, fmt.Errorf("tile_migrate on locality %d: %w", rt.Here(), err)
	}
	e := a.env.Load()
	if e == nil {
		return struct{}{}, fmt.Errorf("tile_migrate on locality %d: array %s has no Env", rt.Here(), m.Name)
	}
	return struct{}{}, e.migrateOwn(ctx, a, m.Dest)
}

// TileLocality returns the locality that serves fetches of tile `tile` of
// a now: the tile's own locality unless the tile was migrated (MigrateTile).
// It asks the tile's home unless this locality is the home.
func TileLocality(ctx context.Context, a *Array, tile int) (int, error) {
	const op = "TileLocality"
	if a == nil || a.env.Load() == nil {
		return 0, fmt.Errorf("primitives: %s: the array was not made by a primitive of an Env", op)
	}
	e := a.env.Load()
	if tile < 0 || tile >= len(a.ann.Tiling.Tiles) {
		return 0, e.errorf(op, "array %s of generation %d has no tile %d: it has %d, one per locality", a.ann.Name, a.ann.Generation, tile, len(a.ann.Tiling.Tiles))
	}
	if tile != e.Locality() {
		at, err := runtime.Async(ctx, e.rt.Locality(uint32(tile)), e.acts.where, a.ann.FullName()).Get(ctx)
		goruntime.KeepAlive(a) // not released before the home answered
		return at, err
	}
	e.tiles.mu.Lock()
	gid := a.gid
	e.tiles.mu.Unlock()
	return e.acts.whereIs(e.rt, gid)
}

// whereAction is the tile_where action, run on a tile's home: where the
// home's tile of the array named full is served from.
func (acts *Actions) whereAction(ctx context.Context, full string) (int, error) {
	rt := runtime.FromContext(ctx)
	a, err := acts.tableOf(rt).tile(rt, full).Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("tile_where on locality %d: %w", rt.Here(), err)
	}
	t := acts.tableOf(rt)
	t.mu.Lock()
	gid := a.gid
	t.mu.Unlock()
	return acts.whereIs(rt, gid)
}

// whereIs is where the home's tile component gid lives, as the home knows
// for certain: here when it was never named (it cannot have moved).
func (acts *Actions) whereIs(rt *runtime.Runtime, gid agas.GID) (int, error) {
	if gid == 0 {
		return int(rt.Here()), nil
	}
	at, err := acts.agas.Owner(rt, gid)
	return int(at), err
}

// tileMove is the argument of tile_migrate.
type tileMove struct {
	Name string
	Dest int
}

// MarshalParcel implements runtime.ParcelMarshaler.
func (m tileMove) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	return msgp.AppendInt(msgp.AppendString(b, m.Name), m.Dest), nil, nil
}

// UnmarshalParcel implements runtime.ParcelUnmarshaler.
func (m *tileMove) UnmarshalParcel(b []byte, _ [][]byte) error {
	var err error
	if m.Name, b, err = msgp.ReadStringBytes(b); err != nil {
		return fmt.Errorf("tile_migrate arguments: %w", err)
	}
	if m.Dest, _, err = msgp.ReadIntBytes(b); err != nil {
		return fmt.Errorf("tile_migrate arguments: %w", err)
	}
	return nil
}

// tileGID is the argument of tile_gid: the tile of the array named Name
// is the AGAS component GID.
type tileGID struct {
	Name string
	Tile int
	GID  agas.GID
}

// MarshalParcel implements runtime.ParcelMarshaler.
func (g tileGID) MarshalParcel(b []byte) ([]byte, [][]byte, error) {
	b = msgp.AppendString(b, g.Name)
	b = msgp.AppendInt(b, g.Tile)
	return msgp.AppendUint64(b, uint64(g.GID)), nil, nil
}

// UnmarshalParcel implements runtime.ParcelUnmarshaler.
func (g *tileGID) UnmarshalParcel(b []byte, _ [][]byte) error {
	var err error
	if g.Name, b, err = msgp.ReadStringBytes(b); err != nil {
		return fmt.Errorf("tile_gid arguments: %w", err)
	}
	if g.Tile, b, err = msgp.ReadIntBytes(b); err != nil {
		return fmt.Errorf("tile_gid arguments: %w", err)
	}
	var v uint64
	v, _, err = msgp.ReadUint64Bytes(b)
	g.GID = agas.GID(v)
	if err != nil {
		return fmt.Errorf("tile_gid arguments: %w", err)
	}
	return nil
}

// gidAction is the tile_gid action: a tile's home tells this locality the
// GID of a tile that moved, so its fetches resolve through AGAS.
func (acts *Actions) gidAction(ctx context.Context, g tileGID) (struct{}, error) {
	rt := runtime.FromContext(ctx)
	t := acts.tableOf(rt)
	t.mu.Lock()
	en := t.entries[g.Name]
	t.mu.Unlock()
	if en != nil && en.a != nil {
		en.a.learnGID(g.Tile, g.GID)
	}
	return struct{}{}, nil
}

// learnedGID returns the GID of tile `tile` of a if this locality learned
// it (the tile moved), else 0. Most arrays have none: one atomic load.
func (a *arrayState) learnedGID(tile int) agas.GID {
	g := a.gids.Load()
	if g == nil {
		return 0
	}
	return g.get(tile)
}

// learnGID records that tile `tile` of a is the AGAS component gid.
func (a *arrayState) learnGID(tile int, gid agas.GID) {
	for {
		if g := a.gids.Load(); g != nil {
			g.set(tile, gid)
			return
		}
		a.gids.CompareAndSwap(nil, &tileGIDs{})
	}
}

// tileGIDs are the GIDs of other localities' tiles of an array that this
// locality learned: the tiles that moved.
type tileGIDs struct {
	mu sync.Mutex
	m  map[int]agas.GID
}

func (g *tileGIDs) get(tile int) agas.GID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[tile]
}

func (g *tileGIDs) set(tile int, gid agas.GID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = make(map[int]agas.GID)
	}
	g.m[tile] = gid
}
