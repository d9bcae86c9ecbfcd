package primitives

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// counting returns 0, 1, 2, ... as n float64s.
func counting(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// barrier returns once every locality called it: a Sum of x, a collective
// in program order like any primitive's.
func barrier(ctx context.Context, e *Env, x *Array) error {
	return Sum(ctx, e, runtime.MakeReady(x)).Err(ctx)
}

// fetchAll fetches the whole of x and compares it with want.
func fetchAll(ctx context.Context, x *Array, want []float64, when string) error {
	got, err := x.Fetch(ctx, annotate.WholeBlock(x.Shape())).Get(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", when, err)
	}
	return sameFloats(got, want, x.Name()+" "+when)
}

// sameFloats says where got and want differ, exactly.
func sameFloats(got, want []float64, what string) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
	return nil
}

// wantAt checks that every locality finds tile of x on locality at.
func wantAt(ctx context.Context, e *Env, x *Array, tile, at int) error {
	got, err := TileLocality(ctx, x, tile)
	if err != nil {
		return err
	}
	if got != at {
		return fmt.Errorf("locality %d finds tile %d of %s on locality %d, want %d", e.Locality(), tile, x.Name(), got, at)
	}
	return nil
}

// A tile that moved, then moved again, is fetched from where it is by every
// locality: the first fetch after a move is forwarded by the tile's home,
// which tells the asker the tile's GID; later ones resolve through AGAS
// and go where the tile lives.
func TestFetchOfAMigratedTile(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		s := e.acts.agas
		objects := s.Counters(e.rt).LiveObjects
		shape := []int{9, 4}
		global := counting(36)
		x, err := FromGlobal(e, shape, Layout{Name: "m"}, global)
		if err != nil {
			return err
		}
		if err := fetchAll(ctx, x, global, "before any move"); err != nil {
			return err
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		if e.Locality() == 0 {
			if err := MigrateTile(ctx, x, 1, 2); err != nil {
				return err
			}
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		if err := wantAt(ctx, e, x, 1, 2); err != nil {
			return err
		}
		if err := fetchAll(ctx, x, global, "after tile 1 moved to locality 2"); err != nil {
			return err
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		// Moved twice: by the locality that holds it now.
		if e.Locality() == 2 {
			if err := MigrateTile(ctx, x, 1, 0); err != nil {
				return err
			}
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		if err := wantAt(ctx, e, x, 1, 0); err != nil {
			return err
		}
		for round := range 2 {
			if err := fetchAll(ctx, x, global, fmt.Sprintf("after tile 1 moved twice (fetch %d)", round+1)); err != nil {
				return err
			}
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		// Tile 1's home forwarded the first fetch of each other locality
		// after the first move; the others knew the GID from then on.
		if e.Locality() == 1 {
			if fw := e.Counters().FetchesForwarded; fw != 2 {
				return fmt.Errorf("locality 1 forwarded %d fetches of its moved tile, want 2", fw)
			}
		}
		// The annotation still says whose part tile 1 is, and that
		// locality's local view is unchanged.
		if got := x.Annotation().Tiling.Tiles[1].Owned; !got.Equal(annotate.Block{{Start: 3, Stop: 6}, {Start: 0, Stop: 4}}) {
			return fmt.Errorf("tile 1 of m/0 owns %v after the moves", got)
		}
		if e.Locality() == 1 {
			if err := sameFloats(x.Local(), global[12:24], "locality 1's tile after the moves"); err != nil {
				return err
			}
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		x.Release()
		// Once every locality released it, the tiles' components go,
		// wherever they moved.
		deadline := time.Now().Add(10 * time.Second)
		for s.Counters(e.rt).LiveObjects != objects {
			if time.Now().After(deadline) {
				return fmt.Errorf("locality %d has %d AGAS objects after m/0 was released, want %d", e.Locality(), s.Counters(e.rt).LiveObjects, objects)
			}
			if err := pause(ctx, e, 5*time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	})
}

// Tiles of both operands move between the Retiles that made them and a
// CannonProduct (on 4 localities) or SUMMA (on 2 and 3): the product is
// the one without moves, and a Retile back to rows, which fetches the
// moved tiles, gives the original matrix.
func TestMigrateBetweenRetileAndCannonProduct(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				const m = 12
				ga, gb := counting(m*m), counting(m*m)
				for i := range gb {
					gb[i] = float64(i%7) - 3
				}
				a, err := FromGlobal(e, []int{m, m}, Layout{Name: "a"}, ga)
				if err != nil {
					return err
				}
				b, err := FromGlobal(e, []int{m, m}, Layout{Name: "b"}, gb)
				if err != nil {
					return err
				}
				sym := Layout{Kind: annotate.Sym}
				product := func(when string) ([]float64, error) {
					ar, br := Retile(ctx, e, runtime.MakeReady(a), sym), Retile(ctx, e, runtime.MakeReady(b), sym)
					x, err := ar.Get(ctx)
					if err != nil {
						return nil, err
					}
					y, err := br.Get(ctx)
					if err != nil {
						return nil, err
					}
					if when != "" {
						// Every locality moves its tile of x on, and locality
						// 0 moves y's last tile to itself.
						if err := barrier(ctx, e, x); err != nil {
							return nil, err
						}
						if err := MigrateTile(ctx, x, e.Locality(), (e.Locality()+1)%n); err != nil {
							return nil, err
						}
						if e.Locality() == 0 {
							if err := MigrateTile(ctx, y, n-1, 0); err != nil {
								return nil, err
							}
						}
						if err := barrier(ctx, e, x); err != nil {
							return nil, err
						}
						if err := wantAt(ctx, e, x, n-1, 0); err != nil {
							return nil, err
						}
					}
					c, err := CannonProduct(ctx, e, runtime.MakeReady(x), runtime.MakeReady(y)).Get(ctx)
					if err != nil {
						return nil, err
					}
					got, err := c.Fetch(ctx, annotate.WholeBlock([]int{m, m})).Get(ctx)
					if err != nil {
						return nil, err
					}
					// The moved tiles, fetched by a Retile to rows.
					back, err := Retile(ctx, e, runtime.MakeReady(x), Layout{Kind: annotate.Row}).Get(ctx)
					if err != nil {
						return nil, err
					}
					if err := fetchAll(ctx, back, ga, "a retiled to sym and back "+when); err != nil {
						return nil, err
					}
					if err := fetchAll(ctx, y, gb, "b retiled to sym "+when); err != nil {
						return nil, err
					}
					return got, barrier(ctx, e, x)
				}
				want, err := product("")
				if err != nil {
					return err
				}
				got, err := product("after moves")
				if err != nil {
					return err
				}
				if err := sameFloats(got, want, "the product after moves"); err != nil {
					return err
				}
				// The Retile back went through the moved tiles' homes.
				fw, err := NewArray(e, []int{n}, Layout{Name: "forwarded"}, []float64{float64(e.Counters().FetchesForwarded)})
				if err != nil {
					return err
				}
				if total, err := Sum(ctx, e, runtime.MakeReady(fw)).Get(ctx); err != nil || total == 0 {
					return fmt.Errorf("%v fetches forwarded by the homes of the moved tiles (%v), want some", total, err)
				}
				return nil
			})
		})
	}
}

// Tiles of Dot's right operand move while the Dot runs: once after it was
// called and before its operand is ready (every fetch resolves the moved
// tiles), once racing its fetches. The result is unchanged.
func TestMigrateDuringDot(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		x, err := FromGlobal(e, []int{30, 20}, Layout{Name: "x"}, counting(600))
		if err != nil {
			return err
		}
		gy := counting(20 * 3)
		for i := range gy {
			gy[i] = 1 / (gy[i] + 1)
		}
		y, err := FromGlobal(e, []int{20, 3}, Layout{Name: "y"}, gy)
		if err != nil {
			return err
		}
		dot := func(f *runtime.Future[*Array]) ([]float64, error) {
			d, err := f.Get(ctx)
			if err != nil {
				return nil, err
			}
			return d.Fetch(ctx, annotate.WholeBlock(d.Shape())).Get(ctx)
		}
		want, err := dot(Dot(ctx, e, runtime.MakeReady(x), runtime.MakeReady(y)))
		if err != nil {
			return err
		}

		// Called first, its operand ready after the moves.
		yf, fulfil := runtime.NewPromise[*Array](e.rt)
		pending := Dot(ctx, e, runtime.MakeReady(x), yf)
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		if e.Locality() == 0 {
			for _, mv := range [][2]int{{0, 1}, {1, 2}, {2, 0}} {
				if err := MigrateTile(ctx, y, mv[0], mv[1]); err != nil {
					return err
				}
			}
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		fulfil(y, nil)
		got, err := dot(pending)
		if err != nil {
			return err
		}
		if err := sameFloats(got, want, "Dot with its operand's tiles moved after the call"); err != nil {
			return err
		}
		// Every tile moved: the first fetch of it from each of the two
		// other localities went by name to its home, which forwarded it.
		if fw := e.Counters().FetchesForwarded; fw != 2 {
			return fmt.Errorf("locality %d forwarded %d fetches of its moved tile of y, want 2", e.Locality(), fw)
		}

		// Racing: the moves start with the Dot's fetches.
		racing := Dot(ctx, e, runtime.MakeReady(x), runtime.MakeReady(y))
		if e.Locality() == 1 {
			for _, mv := range [][2]int{{0, 2}, {1, 1}, {2, 1}} {
				if err := MigrateTile(ctx, y, mv[0], mv[1]); err != nil {
					return err
				}
			}
		}
		got, err = dot(racing)
		if err != nil {
			return err
		}
		if err := sameFloats(got, want, "Dot with its operand's tiles moving"); err != nil {
			return err
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		for tile, at := range []int{2, 1, 1} {
			if err := wantAt(ctx, e, y, tile, at); err != nil {
				return err
			}
		}
		return barrier(ctx, e, x)
	})
}

// Errors of MigrateTile and TileLocality name the array, its generation,
// the locality and the tile.
func TestMigrateTileErrors(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		x, err := Zeros(ctx, e, []int{4, 3}, Layout{Name: "z"}).Get(ctx)
		if err != nil {
			return err
		}
		x2, err := AddScalar(ctx, e, runtime.MakeReady(x), 1).Get(ctx)
		if err != nil {
			return err
		}
		here := fmt.Sprintf("locality %d", e.Locality())
		for _, c := range []struct {
			err  error
			want []string
		}{
			{MigrateTile(ctx, x, 2, 0), []string{"MigrateTile", here, "array z ", "generation 0", "no tile 2"}},
			{MigrateTile(ctx, x2, -1, 0), []string{"MigrateTile", here, "array z~", "generation 1", "no tile -1"}},
			{MigrateTile(ctx, x, 0, 5), []string{"MigrateTile", here, "array z ", "generation 0", "tile 0", "no locality 5"}},
			{func() error { _, err := TileLocality(ctx, x, 3); return err }(), []string{"TileLocality", here, "array z ", "generation 0", "no tile 3"}},
			{MigrateTile(ctx, nil, 0, 0), []string{"MigrateTile", "not made by a primitive"}},
		} {
			if c.err == nil {
				return fmt.Errorf("no error, want one saying %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(c.err.Error(), w) {
					return fmt.Errorf("error %q does not say %q", c.err, w)
				}
			}
		}
		if err := barrier(ctx, e, x); err != nil {
			return err
		}
		x2.Release()
		if err := MigrateTile(ctx, x2, e.Locality(), 1-e.Locality()); err == nil || !strings.Contains(err.Error(), "released") || !strings.Contains(err.Error(), x2.Name()) {
			return fmt.Errorf("moving a tile of a released array: %v, want an error naming %s and saying released", err, x2.Name())
		}
		return nil
	})
}
