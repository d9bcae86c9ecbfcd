package primitives

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// Array is a distributed array of float64 with 1, 2 or 3 dimensions, as one
// locality holds it: its annotation (name, generation, this locality and
// every tile) and this locality's tile as contiguous row-major memory over
// the tile's held block (annotate.Tile.Halo, which is the owned block when
// the tiling has no overlap). An Array is not changed after a primitive
// returns it; primitives make new arrays.
//
// An *Array is the program's handle on the array: once no code of this
// locality can reach it, this locality releases the array as Release does
// (see the package documentation, Lifetime).
type Array struct {
	*arrayState
}

// arrayState is an array as this locality's runtime knows it: what the
// tile table, the tile's AGAS component and the primitives reading it
// refer to. Nothing of it refers to the Array handle, so that the handle
// becomes unreachable when the program drops it and its cleanup releases
// the state (Env.handle).
type arrayState struct {
	ann  annotate.Annotation
	data []float64

	env      atomic.Pointer[Env]       // that published it
	gid      agas.GID                  // this locality's tile's AGAS component
	gids     atomic.Pointer[tileGIDs]  // other tiles' components, learned when they moved
	named    *runtime.Future[struct{}] // its AGAS name's registration
	released atomic.Bool               // by this locality: Release, or the handle unreachable

	// This locality tells every locality it released the array
	// (announced) once none of its fetches from the array's tiles is on
	// its way (fetching): so no tile is dropped under a fetch.
	fetching  atomic.Int64
	announced atomic.Bool
	// byRelease: released by Array.Release, whose caller keeps no slice
	// of the tile; exposed: Local, Dense or View handed the tile's memory
	// out. A tile exposed and not released by Release is left to the
	// collector rather than reused (reclaim).
	byRelease, exposed atomic.Bool

	// The tile's memory goes back to the runtime (mem released) once
	// the array is dropped and no primitive reads it (see pin).
	mem       *runtime.Tile // data's owner; nil: the caller's memory (NewArray)
	pins      atomic.Int64  // primitives reading data now
	dropped   atomic.Bool   // released by every locality, out of the tile table
	reclaimed atomic.Bool   // mem released

	// donated: handed to the next primitive that reads it (Donate),
	// consumed once one did; heir, when set, takes mem instead of the
	// runtime once the array is dropped (Env.inherit).
	donated, consumed atomic.Bool
	heir              atomic.Pointer[func(*runtime.Tile)]
}

// Layout says how a new array is named and cut into tiles.
type Layout struct {
	// Name is the array's name; "" gives "<primitive>_<k>" (the primitive's
	// name in lower case, k counting the arrays the Env named so far: the
	// same on every locality).
	Name string
	// Kind is the tiling type when Tiling is nil: annotate.Row,
	// annotate.Column, annotate.Page (3-D) or annotate.Sym. Zero means
	// annotate.Row.
	Kind annotate.Kind
	// Tiling, if not nil, gives explicit tiles, one per locality, for the
	// array's shape (annotate.New, annotate.NewUser).
	Tiling *annotate.Tiling
	// Halo adds an overlap of this many elements at interior tile edges
	// (annotate.Tiling.WithHalo).
	Halo int
}

// Tiled returns the Layout of the given tiling kind, with a default name.
func Tiled(kind annotate.Kind) Layout { return Layout{Kind: kind} }

// annotation builds the generation-0 annotation of a new array of shape
// laid out by l on e's localities.
func (e *Env) annotation(op string, shape []int, l Layout) (annotate.Annotation, error) {
	t, err := e.tiling(op, shape, l)
	if err != nil {
		return annotate.Annotation{}, err
	}
	if t.Cyclic != nil {
		return annotate.Annotation{}, e.errorf(op, "a block-cyclic layout for a new array of shape %v: make it row-tiled, then Retile it", shape)
	}
	name := l.Name
	if name == "" {
		name = e.newName(strings.ToLower(op))
	}
	a, err := annotate.NewAnnotation(name, e.Locality(), t)
	if err != nil {
		return annotate.Annotation{}, e.wrap(op, err)
	}
	return a, nil
}

// tiling returns the tiling l gives an array of shape on e's localities:
// one tile per locality, of that shape, covering every element once.
func (e *Env) tiling(op string, shape []int, l Layout) (annotate.Tiling, error) {
	var t annotate.Tiling
	if l.Tiling != nil {
		t = l.Tiling.Clone()
		if !slices.Equal(t.Shape, shape) {
			return annotate.Tiling{}, e.errorf(op, "tiling of shape %v for an array of shape %v", t.Shape, shape)
		}
		if len(t.Tiles) != e.Size() {
			return annotate.Tiling{}, e.errorf(op, "tiling of %d tiles on %d localities: want one tile per locality", len(t.Tiles), e.Size())
		}
		if err := t.Validate(); err != nil {
			return annotate.Tiling{}, e.wrap(op, err)
		}
	} else {
		kind := l.Kind
		if kind == 0 {
			kind = annotate.Row
		}
		var err error
		if t, err = annotate.New(kind, shape, e.Size()); err != nil {
			return annotate.Tiling{}, e.wrap(op, err)
		}
	}
	if l.Halo != 0 {
		var err error
		if t, err = t.WithHalo(l.Halo); err != nil {
			return annotate.Tiling{}, e.wrap(op, err)
		}
	}
	return t, nil
}

// NewArray returns this locality's part of a new array of the given shape
// laid out by l, with local as its tile: row-major data over the tile's
// held block (LocalBlock), which the Array keeps without copying (and,
// unlike the tiles primitives make, never hands to the runtime for reuse).
// Every locality calls it with the same shape and layout.
func NewArray(e *Env, shape []int, l Layout, local []float64) (*Array, error) {
	ann, err := e.annotation("NewArray", shape, l)
	if err != nil {
		return nil, err
	}
	if want := ann.Local().Halo.Size(); len(local) != want {
		return nil, e.errorf("NewArray", "array %s: tile %v holds %d elements, got %d", ann.FullName(), ann.Local().Halo, want, len(local))
	}
	s := &arrayState{ann: ann, data: local}
	if err := e.publish("NewArray", s); err != nil {
		return nil, err
	}
	return e.handle(s), nil
}

// FromGlobal returns this locality's part of a new array of the given
// shape laid out by l, copying its tile out of global, the whole array in
// row-major order (which every locality passes).
func FromGlobal(e *Env, shape []int, l Layout, global []float64) (*Array, error) {
	ann, err := e.annotation("FromGlobal", shape, l)
	if err != nil {
		return nil, err
	}
	if want := annotate.WholeBlock(shape).Size(); len(global) != want {
		return nil, e.errorf("FromGlobal", "array %s of shape %v has %d elements, got %d", ann.FullName(), shape, want, len(global))
	}
	h := ann.Local().Halo
	data := e.tile(h.Size())
	walk(shape, h, h, func(local, g int) { data[local] = global[g] })
	return e.newArray("FromGlobal", ann, data)
}

// Annotation returns a copy of the array's annotation.
func (a *Array) Annotation() annotate.Annotation { return a.ann.Clone() }

// Name returns the array's name as printed: "name/generation".
func (a *Array) Name() string { return a.ann.FullName() }

// Shape returns the shape of the whole array, outermost dimension first.
func (a *Array) Shape() []int { return slices.Clone(a.ann.Tiling.Shape) }

// NDim returns the number of dimensions (1 to 3).
func (a *Array) NDim() int { return len(a.ann.Tiling.Shape) }

// Size returns the number of elements of the whole array.
func (a *Array) Size() int { return annotate.WholeBlock(a.ann.Tiling.Shape).Size() }

// Local returns this locality's tile: row-major data over LocalBlock. It is
// the array's memory, not a copy: it must not be changed, nor used after
// Release (the memory of a tile a primitive made is reused). Local of a
// released array panics.
func (a *Array) Local() []float64 {
	if a.released.Load() {
		panic(a.usedAfterRelease("Local"))
	}
	a.exposed.Store(true)
	return a.data
}

// usedAfterRelease is the error of a look at a released array's memory.
func (a *Array) usedAfterRelease(op string) error {
	return fmt.Errorf("primitives: %s on locality %d: array %s of generation %d was released: %w", op, a.ann.Locality, a.Name(), a.ann.Generation, runtime.ErrTileReleased)
}

// LocalBlock returns the global spans of the tile Local holds (the held
// block, owned block plus overlap).
func (a *Array) LocalBlock() annotate.Block { return a.ann.Local().Halo.Clone() }

// OwnedBlock returns the global spans of the elements this locality owns;
// it equals LocalBlock when the tiling has no overlap.
func (a *Array) OwnedBlock() annotate.Block { return a.ann.Local().Owned.Clone() }

// Dense returns the tile of a 2-D array as a gonum matrix sharing Local's
// memory (no copy, valid until Release), with LocalBlock's rows and
// columns; an error once the array is released.
func (a *Array) Dense() (*mat.Dense, error) {
	if a.released.Load() {
		return nil, a.usedAfterRelease("Dense")
	}
	if a.NDim() != 2 {
		return nil, fmt.Errorf("primitives: Dense of array %s of shape %v: want a 2-D array", a.Name(), a.ann.Tiling.Shape)
	}
	b := a.ann.Local().Halo
	if b.Empty() {
		return nil, fmt.Errorf("primitives: Dense of array %s: the tile %v is empty", a.Name(), b)
	}
	a.exposed.Store(true)
	return mat.NewDense(b[0].Len(), b[1].Len(), a.data), nil
}

// ownedData returns the owned elements of the tile, row-major: Local
// itself when the tile has no overlap, a copy otherwise.
func (a *arrayState) ownedData() []float64 {
	t := a.ann.Local()
	if t.Owned.Equal(t.Halo) {
		return a.data
	}
	out := make([]float64, 0, t.Owned.Size())
	walk(a.ann.Tiling.Shape, t.Halo, t.Owned, func(local, _ int) { out = append(out, a.data[local]) })
	return out
}

// pad3 returns shape and block padded with leading unit dimensions to 3-D.
func pad3(shape []int, b annotate.Block) (s [3]int, p [3]annotate.Span) {
	off := 3 - len(shape)
	for d := range 3 {
		if d < off {
			s[d], p[d] = 1, annotate.Span{Start: 0, Stop: 1}
		} else {
			s[d], p[d] = shape[d-off], b[d-off]
		}
	}
	return s, p
}

// walk calls fn for every element of sub, a block inside the held block h
// of an array of the given shape, in row-major order: local is the
// element's offset in h's row-major data, global its linear index in the
// whole array (both increase along the walk).
func walk(shape []int, h, sub annotate.Block, fn func(local, global int)) {
	s, hs := pad3(shape, h)
	_, ss := pad3(shape, sub)
	hr, hc := hs[1].Len(), hs[2].Len()
	for p := ss[0].Start; p < ss[0].Stop; p++ {
		for r := ss[1].Start; r < ss[1].Stop; r++ {
			local := ((p-hs[0].Start)*hr+(r-hs[1].Start))*hc + (ss[2].Start - hs[2].Start)
			global := (p*s[1]+r)*s[2] + ss[2].Start
			for c := ss[2].Start; c < ss[2].Stop; c++ {
				fn(local, global)
				local++
				global++
			}
		}
	}
}
