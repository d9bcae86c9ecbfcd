package primitives

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/runtime"
)

// waitReclaimed waits until every locality's release of x reached this one
// and x's tile went back to the runtime (or, for want false, was dropped
// without going back).
func waitReclaimed(ctx context.Context, e *Env, x *Array, want bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for !x.dropped.Load() || x.reclaimed.Load() != want {
		if time.Now().After(deadline) {
			return fmt.Errorf("array %s on locality %d: dropped %v, memory handed back %v; want dropped, handed back %v",
				x.Name(), e.Locality(), x.dropped.Load(), x.reclaimed.Load(), want)
		}
		if err := pause(ctx, e, 2*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// checkMapped checks that every element of y is fn of x's, reading their
// memory as a primitive that pinned them does (y may be released).
func checkMapped(x, y *Array, fn func(float64) float64) error {
	for i, v := range x.data {
		if got, want := y.data[i], fn(v); got != want {
			return fmt.Errorf("array %s element %d is %v, want %v", y.Name(), i, got, want)
		}
	}
	return nil
}

// A tile a primitive made goes back to the runtime once every locality
// released its array, and the next tile of that size reuses it, filled
// anew; the caller's memory of NewArray never does.
func TestReleasedTileMemoryIsReused(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			x, err := Random(ctx, e, []int{64 * n, 32}, Layout{}, 1).Get(ctx)
			if err != nil {
				return err
			}
			double := func(v float64) float64 { return 2 * v }
			y, err := Map(ctx, e, runtime.MakeReady(x), double).Get(ctx)
			if err != nil {
				return err
			}
			first := &y.Local()[0]
			y.Release()
			if err := waitReclaimed(ctx, e, y, true); err != nil {
				return err
			}
			z, err := Map(ctx, e, runtime.MakeReady(x), math.Sqrt).Get(ctx)
			if err != nil {
				return err
			}
			if &z.Local()[0] != first {
				return fmt.Errorf("locality %d: the tile of %s is not the memory of the released %s", e.Locality(), z.Name(), y.Name())
			}
			if err := checkMapped(x, z, math.Sqrt); err != nil {
				return err
			}

			// NewArray keeps the caller's memory: released, it is not reused.
			mine := make([]float64, len(x.Local()))
			u, err := NewArray(e, x.Shape(), Layout{}, mine)
			if err != nil {
				return err
			}
			u.Release()
			if err := waitReclaimed(ctx, e, u, false); err != nil {
				return err
			}
			w, err := Map(ctx, e, runtime.MakeReady(x), double).Get(ctx)
			if err != nil {
				return err
			}
			if &w.Local()[0] == &mine[0] {
				return fmt.Errorf("locality %d: the tile of %s reuses the memory given to NewArray", e.Locality(), w.Name())
			}
			return checkMapped(x, w, double)
		})
	})
}

// A primitive that reads an array pins it: released everywhere meanwhile,
// its tile goes back only when the primitive is done with it.
func TestPinnedTileIsNotReused(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		x, err := Random(ctx, e, []int{128, 32}, Layout{}, 1).Get(ctx)
		if err != nil {
			return err
		}
		neg := func(v float64) float64 { return -v }
		y, err := Map(ctx, e, runtime.MakeReady(x), neg).Get(ctx)
		if err != nil {
			return err
		}
		mem := &y.Local()[0]
		if err := y.pin(e, "test"); err != nil {
			return err
		}
		y.Release()
		deadline := time.Now().Add(10 * time.Second)
		for !y.dropped.Load() {
			if time.Now().After(deadline) {
				return fmt.Errorf("locality %d: %s not dropped", e.Locality(), y.Name())
			}
			if err := pause(ctx, e, 2*time.Millisecond); err != nil {
				return err
			}
		}
		z, err := Map(ctx, e, runtime.MakeReady(x), neg).Get(ctx)
		if err != nil {
			return err
		}
		if &z.Local()[0] == mem {
			return fmt.Errorf("locality %d: %s reuses the memory of %s while it is pinned", e.Locality(), z.Name(), y.Name())
		}
		if err := checkMapped(x, y, neg); err != nil {
			return fmt.Errorf("the pinned tile changed: %w", err)
		}
		if err := y.pin(e, "test"); err == nil {
			return fmt.Errorf("pinning the released %s: no error", y.Name())
		}
		y.unpin()
		if !y.reclaimed.Load() {
			return fmt.Errorf("locality %d: the last unpin of the dropped %s did not hand its memory back", e.Locality(), y.Name())
		}
		w, err := Map(ctx, e, runtime.MakeReady(x), neg).Get(ctx)
		if err != nil {
			return err
		}
		if &w.Local()[0] != mem {
			return fmt.Errorf("locality %d: after the unpin, %s does not reuse the memory of %s", e.Locality(), w.Name(), y.Name())
		}
		return checkMapped(x, w, neg)
	})
}
