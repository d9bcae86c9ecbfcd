package primitives

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Tiles in AGAS and their lifetime.
//
// Every array an Env makes is published on its locality when it is made:
// its tile goes into the locality's tile table, a map by the array's full
// name "name/generation" that fetch_block serves from (a fetch that
// arrives before the array is made waits for it without keeping a worker
// lane). That is a local map insert: making an array sends nothing.
//
// An array something fetches from is also named in AGAS, once: its tile
// becomes an AGAS component (a tileComponent, see migrate.go: it can
// migrate, and fetches follow it) registered under
// /array/<name>/<generation>/<locality> (basename "array/" + full name,
// sequence number the locality), when a primitive that fetches from it
// (Fetch, Retile, VDot, Dot, the slices) first takes it on a locality, or
// when its locality first serves a fetch_block of it. The registration is
// a future nobody waits for. Arrays nothing fetches from — most
// intermediate results — never touch AGAS: registering and unregistering a
// name costs parcels to the name's home locality, measured at several
// times the cost of a small element-wise primitive
// (BenchmarkMakeAndRelease).
//
// An array lives until every locality has released it: by Array.Release,
// or by the cleanup of its handle once the program cannot reach it (the
// table, the component and the actions hold the arrayState, never the
// handle). Each locality's release tells the others with one small parcel
// (array_release), sent once none of its fetches from the array is on its
// way, and a tile is dropped — out of the table, its AGAS name
// unregistered and its component freed, LiveArrayBytes lowered — once its
// locality has released it and heard from all the others. So a locality
// that releases early still serves the fetches of slower ones.
//
// A primitive's result owns its tile's memory as a runtime.Tile, which a
// dropped array releases: the memory goes back to its runtime, and the
// next tile of the same size a primitive makes reuses it (runtime.NewTile):
// a loop that drops its results touches no fresh memory (unless it looked
// at their memory, see reclaim). Every primitive pins the arrays it reads
// (Array.pin) and a fetch_block holds the tile it copies from
// (arrayState.hold), so memory goes back only once nothing reads it, even
// when a program releases an array too early. The tiles of NewArray are the caller's memory and never go
// back.

// tileTable is one locality's published tiles, shared by the actions that
// serve them and the locality's Env. It exists from the first use on its
// runtime by either side, since a fetch may arrive before the owner made
// its Env.
type tileTable struct {
	mu      sync.Mutex
	entries map[string]*tileEntry // by full name
	ctr     counters
}

// tileEntry is one array's tile on this locality, or the releases of other
// localities heard before this locality made it.
type tileEntry struct {
	a        *arrayState                     // nil until made here
	released bool                            // by this locality
	others   int                             // releases heard from other localities
	waiters  []func(*arrayState, error) bool // fetches that came before a
}

func newTileTable() *tileTable {
	return &tileTable{entries: make(map[string]*tileEntry)}
}

// tableOf returns rt's tile table, creating it on first use.
func (acts *Actions) tableOf(rt *runtime.Runtime) *tileTable {
	acts.mu.Lock()
	defer acts.mu.Unlock()
	t := acts.tables[rt]
	if t == nil {
		t = newTileTable()
		acts.tables[rt] = t
		rt.AddCounterSource(counterSource{t})
	}
	return t
}

// tile returns a future of the array named full, ready once it is
// published in t (now or later). Waiting on it gives the worker lane back,
// so fetches that arrive before the array is made hold no lane.
func (t *tileTable) tile(rt *runtime.Runtime, full string) *runtime.Future[*arrayState] {
	t.mu.Lock()
	defer t.mu.Unlock()
	en := t.entries[full]
	if en != nil && en.a != nil {
		return runtime.MakeReady(en.a)
	}
	if en == nil {
		en = &tileEntry{}
		t.entries[full] = en
	}
	f, fulfil := runtime.NewPromise[*arrayState](rt)
	en.waiters = append(en.waiters, fulfil)
	return f
}

// newArray makes the Array of ann over data and publishes it (the tile
// table, LiveArrayBytes). Every primitive makes its results with it, over
// memory from Env.tile or Env.tileToSet, which the array takes over as a
// runtime.Tile: released, so back to the runtime, once the array is
// dropped. It fails when an array of the same full name is live on this
// locality.
func (e *Env) newArray(op string, ann annotate.Annotation, data []float64) (*Array, error) {
	s := &arrayState{ann: ann, data: data, mem: runtime.AdoptTile(e.rt, data)}
	if err := e.publish(op, s); err != nil {
		return nil, err
	}
	return e.handle(s), nil
}

// handle returns the program's handle on the published array s: once the
// handle is unreachable, the collector runs s's release, as Release does.
// The cleanup runs on its own goroutine, as a release may wait to send
// its parcels.
func (e *Env) handle(s *arrayState) *Array {
	a := &Array{s}
	goruntime.AddCleanup(a, func(s *arrayState) { go s.release() }, s)
	return a
}

// publish puts a's tile into this locality's table and fulfils the fetches
// that waited for it.
func (e *Env) publish(op string, a *arrayState) error {
	full := a.ann.FullName()
	t := e.tiles
	t.mu.Lock()
	en := t.entries[full]
	if en != nil && en.a == a {
		t.mu.Unlock()
		return nil
	}
	if en != nil && en.a != nil {
		t.mu.Unlock()
		return e.errorf(op, "array %s: the name is in use on this locality (release that array or choose another name)", full)
	}
	if en == nil {
		en = &tileEntry{}
		t.entries[full] = en
	}
	a.env.Store(e)
	en.a = a
	waiters := en.waiters
	en.waiters = nil
	t.mu.Unlock()
	for _, w := range waiters {
		w(a, nil)
	}
	e.track(int64(8 * len(a.data)))
	t.ctr.arrays.Add(1)
	return nil
}

// adopt checks that x can be fetched from: live, published by e, and
// named in AGAS. Primitives that fetch from an array adopt it on every
// locality; fetch_block names the tile it serves too.
func (e *Env) adopt(op string, x *Array) error {
	if err := x.live(e, op); err != nil {
		return err
	}
	if owner := x.env.Load(); owner != e {
		return e.errorf(op, "array %s of generation %d belongs to another Env", x.Name(), x.ann.Generation)
	}
	e.name(x.arrayState)
	return nil
}

// name registers a's tile in AGAS, once: a tileComponent over a's memory
// (agas.Create, local) named /array/<name>/<generation>/<locality> (a
// future nobody waits for).
func (e *Env) name(a *arrayState) {
	t := e.tiles
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.named != nil || a.dropped.Load() {
		return
	}
	h := a.ann.Local().Halo
	a.gid = agas.Create(e.acts.agas, e.rt, &tileComponent{
		Name: a.ann.FullName(), Tile: e.Locality(), Shape: a.ann.Tiling.Shape, Held: h, Data: a.data, arr: a,
	})
	reg := e.acts.agas.RegisterWithBasename(context.Background(), e.rt, "array/"+a.ann.FullName(), a.gid, uint32(e.Locality()))
	// Counted once registered (Counters.AGASNames), before the drop,
	// which waits for a.named, takes the name away.
	a.named = runtime.Then(context.Background(), reg, func(context.Context, struct{}) (struct{}, error) {
		t.ctr.named.Add(1)
		return struct{}{}, nil
	})
}

// Release says this locality is done with the array now: every
// primitive that reads it has its result ready here. It is optional: an
// array whose handle no code of this locality can reach any more is
// released the same way by the collector (see the package documentation,
// Lifetime); Release only makes it prompt, and makes the tile's memory
// reusable at once by the tiles primitives make next, so slices from
// Local, Dense and View must not be used after it. Every locality releases
// an array (SPMD: explicitly or by dropping it); the tile is dropped once
// all have, so a slow locality's fetches are still served. It does not
// block. Later fetches and primitives on the array fail, naming it; a
// second Release does nothing.
func (a *Array) Release() {
	if a == nil || a.arrayState == nil {
		return
	}
	a.byRelease.Store(true)
	a.release()
}

// release marks the array released on this locality — Release, or the
// cleanup of its unreachable handle, which no primitive pins (pin keeps
// the handle reachable) — and announces it once no fetch of this
// locality from the array is on its way (endFetch announces otherwise).
// Only the first release of an array does anything.
func (a *arrayState) release() {
	if !a.released.CompareAndSwap(false, true) {
		return
	}
	if a.fetching.Load() == 0 {
		a.announce()
	}
}

// startFetch counts a fetch of this locality from one of the array's
// tiles; it reports false, counting nothing, once the array is released
// here: a later fetch could reach a tile already dropped.
func (a *arrayState) startFetch() bool {
	// Counted before the check: a release after the check sees it.
	a.fetching.Add(1)
	if a.released.Load() {
		a.endFetch()
		return false
	}
	return true
}

// endFetch ends a fetch counted by startFetch, once its reply (or error)
// is in: the last one announces a release made meanwhile, on its own
// goroutine (it runs where a future becomes ready, and sending may wait).
func (a *arrayState) endFetch() {
	if a.fetching.Add(-1) == 0 && a.released.Load() && !a.announced.Load() {
		go a.announce()
	}
}

// announce tells every locality, this one included, that this locality is
// done with the array, once: a small array_release parcel to each other
// locality.
func (a *arrayState) announce() {
	e := a.env.Load()
	if e == nil || !a.announced.CompareAndSwap(false, true) {
		return
	}
	select {
	case <-e.rt.Done():
		return // the runtime ended: nobody serves or fetches any more
	default:
	}
	full := a.ann.FullName()
	for l := range e.Size() {
		if l != e.Locality() {
			runtime.Async(context.Background(), e.rt.Locality(uint32(l)), e.acts.release, full)
		}
	}
	e.acts.released(e.rt, full, true)
}

// released records a release of the array named full on rt's locality, by
// this locality (here) or another, and drops the tile once every locality
// released it.
func (acts *Actions) released(rt *runtime.Runtime, full string, here bool) {
	t := acts.tableOf(rt)
	t.mu.Lock()
	en := t.entries[full]
	if en == nil {
		en = &tileEntry{}
		t.entries[full] = en
	}
	if here {
		en.released = true
	} else {
		en.others++
	}
	if !en.released || en.others < int(rt.NumLocalities())-1 {
		t.mu.Unlock()
		return
	}
	delete(t.entries, full)
	var named *runtime.Future[struct{}]
	if en.a != nil {
		named = en.a.named
		en.a.dropped.Store(true) // under the lock: name sees it
	}
	t.mu.Unlock()
	for _, w := range en.waiters {
		w(nil, fmt.Errorf("array %s was released by every locality before locality %d made it", describeArray(full), rt.Here()))
	}
	a := en.a
	if a == nil {
		return
	}
	e := a.env.Load()
	e.track(-int64(8 * len(a.data)))
	t.ctr.arrays.Add(-1)
	if a.pins.Load() == 0 {
		a.reclaim()
	}
	if named == nil {
		return
	}
	// The name goes once its registration is done; then the component.
	runtime.Then(context.Background(), named, func(ctx context.Context, _ struct{}) (struct{}, error) {
		if _, err := acts.agas.Unregister(ctx, rt, "array/"+full, uint32(e.Locality())).Get(ctx); err != nil {
			return struct{}{}, err
		}
		t.ctr.named.Add(-1)
		return struct{}{}, acts.agas.Free(ctx, rt, a.gid)
	})
}

// describeArray names the array of full name "name/generation" in errors:
// "array name of generation g".
func describeArray(full string) string {
	i := strings.LastIndexByte(full, '/')
	if i < 0 {
		return full
	}
	return full[:i] + " of generation " + full[i+1:]
}

// releaseAction is the array_release action: another locality released the
// array of this full name.
func (acts *Actions) releaseAction(ctx context.Context, full string) (struct{}, error) {
	rt := runtime.FromContext(ctx)
	if rt == nil {
		return struct{}{}, fmt.Errorf("array_release of %s: no runtime", full)
	}
	acts.released(rt, full, false)
	return struct{}{}, nil
}

// published reports whether the array's tile is in this locality's tile
// table: made and not yet dropped.
func (a *arrayState) published() bool {
	e := a.env.Load()
	if e == nil {
		return false
	}
	t := e.tiles
	t.mu.Lock()
	defer t.mu.Unlock()
	en := t.entries[a.ann.FullName()]
	return en != nil && en.a == a
}

// AGASName returns the symbolic name the array's tile on locality is
// registered under once something fetches from the array:
// /array/<name>/<generation>/<locality>.
func (a *Array) AGASName(locality int) string {
	return agas.Name("array/"+a.ann.FullName(), uint32(locality))
}

// derive takes the number of a derived result now, when its primitive is
// called (in program order, the same on every locality).
func (e *Env) derive() uint64 { return e.names.Add(1) }

// derivedAnnotation is the annotation of the k-th derived result (derive)
// of the inputs xs, laid out as xs[0]: the first input's base name (its
// name without a "~<number>" suffix) with the suffix "~k", so results are
// unique per Env and the same on every locality, and the generation one
// more than the highest of the inputs'.
func derivedAnnotation(k uint64, xs ...*Array) annotate.Annotation {
	ann := xs[0].ann.Clone()
	for _, x := range xs[1:] {
		ann.Generation = max(ann.Generation, x.ann.Generation)
	}
	ann.Generation++
	ann.Name = baseName(ann.Name) + "~" + strconv.FormatUint(k, 10)
	return ann
}

// baseName strips a derived result's "~<number>" suffix.
func baseName(name string) string {
	i := strings.LastIndexByte(name, '~')
	if i <= 0 || i == len(name)-1 {
		return name
	}
	for _, c := range name[i+1:] {
		if c < '0' || c > '9' {
			return name
		}
	}
	return name[:i]
}

// pin reports an error when a is nil or was released on this locality;
// otherwise it keeps a's tile from going back to the runtime until the
// caller calls unpin. A primitive pins the arrays it reads for as long as
// it reads them, which keeps the handle reachable until unpin: its cleanup
// cannot release the array under the primitive.
func (a *Array) pin(e *Env, op string) error {
	if a == nil || a.arrayState == nil {
		return e.errorf(op, "nil array")
	}
	// Counted before the check: a release after the check sees the pin
	// (release marks the array released before it looks at the pins).
	a.pins.Add(1)
	if err := a.live(e, op); err != nil {
		a.unhold()
		return err
	}
	if a.ann.Tiling.Cyclic != nil && !readsCyclic(op) {
		a.unhold()
		return e.errorf(op, "array %s is block-cyclic, which %s does not read: Retile it to a row, column or sym tiling first", a.Name(), op)
	}
	if a.donated.Load() && !a.consumed.CompareAndSwap(false, true) {
		a.unhold()
		return e.errorf(op, "array %s of generation %d was donated (Donate) to another primitive already", a.Name(), a.ann.Generation)
	}
	return nil
}

// readsCyclic says whether the primitive op reads block-cyclic arrays,
// whose tiles hold their blocks in ScaLAPACK's local order; every other
// primitive addresses tiles in global row-major order and refuses them
// (pin).
func readsCyclic(op string) bool {
	switch op {
	case "Retile", "Cholesky", "LU", "SolveLU", "SolveTriangular", "QR", "ApplyQT", "TSQR", "LeastSquares", "SVDTall", "TruncatedSVD":
		return true
	}
	return false
}

// unpin ends a pin, keeping the handle reachable until then; a donated
// array is released once the primitive that took it has read it.
func (a *Array) unpin() {
	if a.donated.Load() {
		a.Release()
	}
	a.unhold()
	goruntime.KeepAlive(a)
}

// pinBoth pins x and y (see pin), or neither.
func pinBoth(e *Env, op string, x, y *Array) error {
	if err := x.pin(e, op); err != nil {
		return err
	}
	if err := y.pin(e, op); err != nil {
		x.unpin()
		return err
	}
	return nil
}

// hold keeps a's tile from going back to the runtime until unhold, unless
// it was dropped already (false). A fetch_block holds the tile it serves:
// the array may be released on this locality and still be fetched from.
func (a *arrayState) hold() bool {
	a.pins.Add(1)
	if a.dropped.Load() {
		a.unhold()
		return false
	}
	return true
}

// unhold ends a pin or a hold: the last one gives a dropped tile's
// memory back.
func (a *arrayState) unhold() {
	if a.pins.Add(-1) == 0 && a.dropped.Load() {
		a.reclaim()
	}
}

// tile returns n zeroed float64s for the tile of an array a primitive
// makes: lendable memory, which Cannon's product lends to the localities
// on this machine without a copy (runtime.TileOptions.Lendable). The
// primitive hands it to newArray, whose array owns it from then on; until
// then it is the primitive's alone.
func (e *Env) tile(n int) []float64 {
	return runtime.NewTile(e.rt, n, runtime.TileOptions{Lendable: true}).Float64s()
}

// tileToSet is tile for a primitive that sets every element of the tile
// before anything reads it: memory reused from a dropped array comes as it
// was left (runtime.TileOptions.Uncleared).
func (e *Env) tileToSet(n int) []float64 {
	return runtime.NewTile(e.rt, n, runtime.TileOptions{Lendable: true, Uncleared: true}).Float64s()
}

// ownTileToSet is tileToSet in the locality's own memory, advised onto
// huge pages, for a tile written in full at once: a shared segment faults
// its 4 KiB pages in one by one, which costs more than the work on a tile
// that is written once (TSQR's Q, its working copy of the input). Other
// localities on the machine then get a copy of it, not a loan.
func (e *Env) ownTileToSet(n int) []float64 {
	return runtime.NewTile(e.rt, n, runtime.TileOptions{Uncleared: true}).Float64s()
}

// reclaim releases the tile of a dropped array, once, when a primitive
// made it: its memory goes back to the runtime for reuse — unless the
// program may still hold a slice of it: Local, Dense or View handed it
// out and the array was not released by Release but found unreachable.
// That memory is left to the collector (a shared-memory tile stays
// mapped until the process ends).
func (a *arrayState) reclaim() {
	if a.mem == nil || !a.reclaimed.CompareAndSwap(false, true) {
		return
	}
	if a.exposed.Load() && !a.byRelease.Load() {
		return
	}
	if h := a.heir.Load(); h != nil {
		(*h)(a.mem)
		return
	}
	a.mem.Release()
}

// live reports an error when the array was released on this locality.
func (a *Array) live(e *Env, op string) error {
	if a == nil || a.arrayState == nil {
		return e.errorf(op, "nil array")
	}
	if a.released.Load() {
		return e.errorf(op, "array %s of generation %d was released", a.Name(), a.ann.Generation)
	}
	return nil
}
