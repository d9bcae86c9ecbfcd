package primitives

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/runtime"
)

// Actions are the primitives' actions and the AGAS service their tiles are
// named in. A program registers them once, before its runtime starts
// (Register), and passes them to NewEnv.
type Actions struct {
	agas    *agas.Service
	fetch   runtime.Action[fetchArgs, []float64]  // fetch_block
	release runtime.Action[string, struct{}]      // array_release
	read    agas.Reader[tileComponent, fetchArgs] // fetch_tile
	migrate runtime.Action[tileMove, struct{}]    // tile_migrate
	learn   runtime.Action[tileGID, struct{}]     // tile_gid
	where   runtime.Action[string, int]           // tile_where

	mu     sync.Mutex
	tables map[*runtime.Runtime]*tileTable // each locality's tiles
}

// Register adds the primitives' actions to reg, on every locality, before
// the runtime starts: fetch_block (a block of a tile, Array.Fetch),
// array_release (Array.Release), and for tiles as AGAS components the
// reader fetch_tile and the actions tile_migrate (MigrateTile), tile_gid
// and tile_where (TileLocality). s is the program's AGAS service on the
// same registry (agas.New(reg)); the tiles of arrays are named in it.
// Register also sets the BLAS of the build for gonum's blas64 and lapack64
// (BLAS): OpenBLAS with -tags openblas. Calling it again on the same
// registry returns the same Actions (one per registry, as agas.New); with
// another AGAS service it panics, naming the mismatch.
func Register(reg *runtime.Registry, s *agas.Service) *Actions {
	acts := runtime.Shared(reg, "primitives", func() *Actions { return register(reg, s) })
	if acts.agas != s {
		panic("primitives.Register: the registry's primitives already use another AGAS service; pass agas.New(reg), which is the same for every call")
	}
	return acts
}

// register makes the Actions and registers their actions.
func register(reg *runtime.Registry, s *agas.Service) *Actions {
	useBLAS()
	acts := &Actions{agas: s, tables: make(map[*runtime.Runtime]*tileTable)}
	acts.fetch = runtime.Register(reg, "fetch_block", acts.fetchAction)
	acts.release = runtime.Register(reg, "array_release", acts.releaseAction)
	acts.read = agas.RegisterReader(reg, s, "fetch_tile", acts.readTile)
	acts.migrate = runtime.Register(reg, "tile_migrate", acts.migrateAction)
	acts.learn = runtime.Register(reg, "tile_gid", acts.gidAction)
	acts.where = runtime.Register(reg, "tile_where", acts.whereAction)
	return acts
}

// CommunicatorName is the basename of the communicator an Env creates; it
// is in use on a locality until Env.Close.
const CommunicatorName = "tessera.primitives"

// Env is one locality's context for distributed arrays: the runtime and the
// one Communicator (over all localities) that every array collective uses.
// Every locality of the job creates its Env with NewEnv and then calls the
// same primitives in the same order (SPMD), so that the collectives the
// primitives reserve pair up across localities.
type Env struct {
	rt    *runtime.Runtime
	acts  *Actions
	comm  *runtime.Communicator
	names atomic.Uint64 // arrays named so far, for default and derived names
	tiles *tileTable    // this locality's published tiles and counters
}

// NewEnv creates this locality's Env on rt, whose registry holds acts
// (Register). Every locality of the job must call it; one Env per locality
// may exist at a time (the communicator's basename, CommunicatorName, is
// taken until Close).
func NewEnv(rt *runtime.Runtime, acts *Actions) (*Env, error) {
	if acts == nil {
		return nil, fmt.Errorf("primitives: NewEnv on locality %d: no Actions (primitives.Register before the runtime starts)", rt.Here())
	}
	c, err := runtime.NewCommunicator(rt, CommunicatorName, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("primitives: NewEnv: %w", err)
	}
	return &Env{rt: rt, acts: acts, comm: c, tiles: acts.tableOf(rt)}, nil
}

// Close releases the communicator. Collectives already issued finish;
// primitives called later that need one fail. The locality's tiles are
// still served to other localities' fetches until every locality released
// their arrays (or the runtime ends).
func (e *Env) Close() { e.comm.Close() }

// Runtime returns the runtime the Env was created on.
func (e *Env) Runtime() *runtime.Runtime { return e.rt }

// Locality returns this locality's index: the tile of every array it holds.
func (e *Env) Locality() int { return int(e.rt.Here()) }

// Size returns the number of localities: the number of tiles of every
// array.
func (e *Env) Size() int { return int(e.rt.NumLocalities()) }

// newName returns a default array name "<op>_<k>", k counting the arrays
// named by this Env. Primitives are called in the same order on every
// locality, so the names agree.
func (e *Env) newName(op string) string {
	return op + "_" + strconv.FormatUint(e.names.Add(1), 10)
}

// errorf builds a primitive's error: it names the primitive and the
// locality.
func (e *Env) errorf(op, format string, args ...any) error {
	return fmt.Errorf("primitives: %s on locality %d: %s", op, e.Locality(), fmt.Sprintf(format, args...))
}

// wrap names the primitive and the locality in front of err.
func (e *Env) wrap(op string, err error) error {
	return fmt.Errorf("primitives: %s on locality %d: %w", op, e.Locality(), err)
}

// reserve takes the communicator's next generation for op, now, in program
// order: THE RULE of this package. The collective is issued later with
// the reservation itself (r.AllReduce(ctx, …) and so on); if it never is,
// the reservation must be cancelled.
func (e *Env) reserve(op string) (*runtime.Reservation, error) {
	r, err := e.comm.Reserve()
	if err != nil {
		return nil, e.wrap(op, err)
	}
	return r, nil
}

// collective runs body as a task once called, with a reservation taken
// now. body waits for its inputs and issues its collective on the
// reservation (r.AllReduce(ctx, …)); if body returns an error before doing
// so (an input failed, bad input), the reservation is cancelled with that
// error so no other locality waits for this one. The task also ends when ctx does; it
// is named "primitives.<op>" in traces and profiles.
func collective[T any](ctx context.Context, e *Env, op string, body func(ctx context.Context, r *runtime.Reservation) (T, error)) *runtime.Future[T] {
	r, err := e.reserve(op)
	if err != nil {
		return runtime.MakeFailed[T](err)
	}
	return runtime.SpawnNamed(ctx, e.rt, "primitives."+op, func(tctx context.Context) (v T, err error) {
		defer func() {
			if err != nil {
				r.Cancel(err) // no effect once the collective was issued
			}
		}()
		return body(tctx, r)
	})
}

// Main is runtime.Main for a program of distributed arrays: it registers
// AGAS and the primitives on cfg's registry (a new one when nil), starts
// the locality, and runs body with this locality's Env, closed when body
// returns. It returns the process's exit code, as runtime.Main does.
func Main(cfg runtime.Config, body func(ctx context.Context, e *Env) error) int {
	if cfg.Registry == nil {
		cfg.Registry = runtime.NewRegistry()
	}
	acts := Register(cfg.Registry, agas.New(cfg.Registry))
	return runtime.Main(cfg, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		return body(ctx, e)
	})
}
