package primitives

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// blockOf returns the elements of block b of the whole array ref of shape,
// row-major, computed element by element.
func blockOf(shape []int, b annotate.Block, ref []float64) []float64 {
	var out []float64
	var rec func(d, g int)
	rec = func(d, g int) {
		if d == len(shape) {
			out = append(out, ref[g])
			return
		}
		for i := b[d].Start; i < b[d].Stop; i++ {
			rec(d+1, g*shape[d]+i)
		}
	}
	if !b.Empty() {
		rec(0, 0)
	}
	return out
}

// testBlocks are blocks of shape to fetch: the whole array, one element,
// the last outer index, and a block cut short on every side.
func testBlocks(shape []int) []annotate.Block {
	whole := annotate.WholeBlock(shape)
	one, last, inner := whole.Clone(), whole.Clone(), whole.Clone()
	for d, n := range shape {
		one[d] = annotate.Span{Start: n / 2, Stop: n/2 + 1}
		inner[d] = annotate.Span{Start: min(1, n-1), Stop: max(n-1, min(1, n-1)+1)}
	}
	last[0] = annotate.Span{Start: shape[0] - 1, Stop: shape[0]}
	return []annotate.Block{whole, one, last, inner}
}

// remoteElements is the number of elements of b that locality here does
// not own in tiling t.
func remoteElements(t annotate.Tiling, here int, b annotate.Block) int {
	n := 0
	for i, tile := range t.Tiles {
		if p, ok := tile.Owned.Intersect(b); ok && i != here {
			n += p.Size()
		}
	}
	return n
}

func TestFetch(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for si, shape := range testShapes {
				ref := globalData(shape, uint64(si), -1, 1)
				for _, l := range layouts(shape, n) {
					x, err := FromGlobal(e, shape, l, ref)
					if err != nil {
						return err
					}
					for _, b := range testBlocks(shape) {
						before := e.Counters()
						got, err := x.Fetch(ctx, b).Get(ctx)
						if err != nil {
							return fmt.Errorf("%s: fetch %v: %w", describe(shape, l), b, err)
						}
						want := blockOf(shape, b, ref)
						if len(got) != len(want) {
							return fmt.Errorf("%s: fetch %v: %d elements, want %d", describe(shape, l), b, len(got), len(want))
						}
						for i := range want {
							if got[i] != want[i] {
								return fmt.Errorf("%s: fetch %v: element %d = %v, want %v", describe(shape, l), b, i, got[i], want[i])
							}
						}
						after := e.Counters()
						if moved, want := after.BytesFetched-before.BytesFetched, uint64(8*remoteElements(x.ann.Tiling, e.Locality(), b)); moved != want {
							return fmt.Errorf("%s: fetch %v moved %d bytes, want %d", describe(shape, l), b, moved, want)
						}
					}
				}
			}
			return nil
		})
	})
}

func TestFetchBadBlock(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		x, err := Zeros(ctx, e, []int{4, 6}, Layout{Name: "z"}).Get(ctx)
		if err != nil {
			return err
		}
		for _, b := range []annotate.Block{
			{{Start: 0, Stop: 4}},
			{{Start: 0, Stop: 5}, {Start: 0, Stop: 6}},
			{{Start: 2, Stop: 1}, {Start: 0, Stop: 6}},
		} {
			_, err := x.Fetch(ctx, b).Get(ctx)
			if err == nil || !strings.Contains(err.Error(), "z/0") || !strings.Contains(err.Error(), "Fetch") {
				return fmt.Errorf("fetch %v: error %v, want one naming Fetch and z/0", b, err)
			}
		}
		// fetch_block itself refuses a block outside the tile it holds, or
		// inverted.
		other := 1 - e.Locality()
		for _, b := range []annotate.Block{
			{{Start: 0, Stop: 4}, {Start: 0, Stop: 6}},
			{{Start: 3, Stop: 2}, {Start: 0, Stop: 6}},
		} {
			_, err := runtime.Async(ctx, e.rt.Locality(uint32(other)), e.acts.fetch, fetchArgs{Name: "z/0", Block: b}).Get(ctx)
			if err == nil || !strings.Contains(err.Error(), "fetch_block") || !strings.Contains(err.Error(), "z/0") {
				return fmt.Errorf("fetch_block of %v from locality %d: error %v, want one naming fetch_block and z/0", b, other, err)
			}
		}
		return nil
	})
}

// TestDerivedNamesUnique: two results derived from one array at the same
// generation get different names, the same on every locality; the
// generation is one more than the highest input's.
func TestDerivedNamesUnique(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		x := Ones(ctx, e, []int{6}, Layout{Name: "x"})
		a := AddScalar(ctx, e, x, 1)
		b := MulScalar(ctx, e, x, 2)
		c := Add(ctx, e, b, Neg(ctx, e, a))
		names := map[string]bool{}
		for _, f := range []*runtime.Future[*Array]{a, b, c} {
			v, err := f.Get(ctx)
			if err != nil {
				return err
			}
			if names[v.Name()] {
				return fmt.Errorf("two arrays named %s", v.Name())
			}
			names[v.Name()] = true
		}
		cv, _ := c.Get(ctx)
		if g := cv.Annotation().Generation; g != 3 || !strings.HasPrefix(cv.Name(), "x~") {
			return fmt.Errorf("x*2 + -(x+1) is %s, want x~<k>/3", cv.Name())
		}
		// Every locality names them alike: each fetches c's whole array by
		// its name from the others.
		got, err := cv.Fetch(ctx, annotate.WholeBlock([]int{6})).Get(ctx)
		if err != nil {
			return err
		}
		for i, v := range got {
			if v != 0 {
				return fmt.Errorf("element %d of %s = %v, want 0", i, cv.Name(), v)
			}
		}
		return nil
	})
}

// TestTilesInAGAS: every tile of an array something fetches from is named
// /array/<name>/<generation>/<locality> in AGAS; once every locality released the array, its names are gone,
// LiveArrayBytes is back and fetching it fails.
func TestTilesInAGAS(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			base := e.Counters().LiveArrayBytes
			s := e.acts.agas
			objects := s.Counters(e.rt).LiveObjects
			x, err := Random(ctx, e, []int{8 * n, 3}, Layout{Name: "r"}, 1).Get(ctx)
			if err != nil {
				return err
			}
			if got, want := e.Counters().LiveArrayBytes-base, int64(8*len(x.Local())); got != want {
				return fmt.Errorf("LiveArrayBytes grew by %d, want %d", got, want)
			}
			// Fetching from it names it in AGAS on every locality.
			if _, err := x.Fetch(ctx, x.OwnedBlock()).Get(ctx); err != nil {
				return err
			}
			if x.AGASName(1) != "/array/r/0/1" {
				return fmt.Errorf("AGAS name %s, want /array/r/0/1", x.AGASName(1))
			}
			for l := range n {
				gid, err := s.FindFromBasename(ctx, e.rt, "array/r/0", uint32(l)).Get(ctx)
				if err != nil {
					return err
				}
				if int(gid.Home()) != l {
					return fmt.Errorf("tile %d's GID %v lives on locality %d", l, gid, gid.Home())
				}
			}
			// Everyone found everything before anyone releases.
			if _, err := Sum(ctx, e, runtime.MakeReady(x)).Get(ctx); err != nil {
				return err
			}
			x.Release()
			if _, err := x.Fetch(ctx, x.OwnedBlock()).Get(ctx); err == nil || !strings.Contains(err.Error(), "released") {
				return fmt.Errorf("fetch after release: %v, want an error saying released", err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for e.Counters().LiveArrayBytes != base || x.published() {
				if time.Now().After(deadline) {
					return fmt.Errorf("tile of r/0 not dropped: LiveArrayBytes %d, want %d", e.Counters().LiveArrayBytes, base)
				}
				if err := pause(ctx, e, 5*time.Millisecond); err != nil {
					return err
				}
			}
			if peak := e.Counters().PeakArrayBytes; peak < base+int64(8*x.LocalBlock().Size()) {
				return fmt.Errorf("PeakArrayBytes %d, want at least %d", peak, base+int64(8*x.LocalBlock().Size()))
			}
			// The name goes, then the component: wait for the component.
			for s.Counters(e.rt).LiveObjects != objects {
				if time.Now().After(deadline) {
					return fmt.Errorf("the component of r/0 not freed: %d objects live, want %d", s.Counters(e.rt).LiveObjects, objects)
				}
				if err := pause(ctx, e, 5*time.Millisecond); err != nil {
					return err
				}
			}
			if _, err := s.Unregister(ctx, e.rt, "array/r/0", uint32(e.Locality())).Get(ctx); !errors.Is(err, agas.ErrNoName) {
				return fmt.Errorf("unregistering r/0 after its release: %v, want agas.ErrNoName", err)
			}
			return nil
		})
	})
}

// pause waits for d without keeping a worker lane, so the locality's
// actions run meanwhile.
func pause(ctx context.Context, e *Env, d time.Duration) error {
	f, fulfil := runtime.NewPromise[struct{}](e.rt)
	time.AfterFunc(d, func() { fulfil(struct{}{}, nil) })
	return f.Err(ctx)
}
