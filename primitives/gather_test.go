package primitives

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

func TestAllGather(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, shape := range testShapes {
				for _, l := range layouts(shape, n) {
					what := describe(shape, l)
					g := globalData(shape, 6, -1, 1)
					x, err := FromGlobal(e, shape, l, g)
					if err != nil {
						return err
					}
					w, err := AllGather(ctx, e, runtime.MakeReady(x)).Get(ctx)
					if err != nil {
						return fmt.Errorf("%s: %v", what, err)
					}
					if !slices.Equal(w.Shape, shape) || !slices.Equal(w.Data, g) {
						return fmt.Errorf("%s: gathered %v %v, want %v", what, w.Shape, w.Data, g)
					}
					// The seeded random array is the same whatever the
					// tiling: gathered, it equals the one-tile reference.
					r, err := AllGather(ctx, e, Random(ctx, e, shape, l, 77)).Get(ctx)
					if err != nil {
						return err
					}
					for i, v := range r.Data {
						if v != uniformAt(77, uint64(i)) {
							return fmt.Errorf("%s: gathered random element %d is %v, want %v", what, i, v, uniformAt(77, uint64(i)))
						}
					}
				}
			}
			// Explicit user spans: one long tile, the others of one element.
			owned := []annotate.Block{{{Start: 0, Stop: 13 - (n - 1)}}}
			for i := 1; i < n; i++ {
				owned = append(owned, annotate.Block{{Start: 13 - n + i, Stop: 13 - n + i + 1}})
			}
			user, err := annotate.NewUser([]int{13}, owned)
			if err != nil {
				return err
			}
			g := globalData([]int{13}, 8, 0, 1)
			u, err := FromGlobal(e, []int{13}, Layout{Tiling: &user}, g)
			if err != nil {
				return err
			}
			if err := checkTile(u, g, "user tiling"); err != nil {
				return err
			}
			s, err := Sum(ctx, e, AddScalar(ctx, e, runtime.MakeReady(u), 1)).Get(ctx)
			if want, _, _, _, _, _ := refReduce(g); err != nil || !closeTo(s, want+13, 1e-12) {
				return fmt.Errorf("user tiling: Sum %v, %v; want %v", s, err, want+13)
			}
			uw, err := AllGather(ctx, e, runtime.MakeReady(u)).Get(ctx)
			if err != nil || !slices.Equal(uw.Data, g) {
				return fmt.Errorf("user tiling: gathered %v, %v; want %v", uw.Data, err, g)
			}

			w, err := AllGather(ctx, e, Identity(ctx, e, 7, Layout{})).Get(ctx)
			if err != nil {
				return err
			}
			if w.At(3, 3) != 1 || w.At(3, 4) != 0 {
				return fmt.Errorf("gathered identity: %v", w.Data)
			}
			d, err := w.Dense()
			if err != nil || d.At(6, 6) != 1 {
				return fmt.Errorf("gathered identity as Dense: %v", err)
			}
			return nil
		})
	})
}
