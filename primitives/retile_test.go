package primitives

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// unevenUser returns an explicit tiling of shape on n localities cutting
// dimension d into tiles of growing length (about 1, 2, 3... parts), or
// false when d is too short.
func unevenUser(shape []int, n, d int) (annotate.Tiling, bool) {
	if shape[d] < n {
		return annotate.Tiling{}, false
	}
	owned := make([]annotate.Block, n)
	start := 0
	for i := range n {
		stop := shape[d] * (i + 1) * (i + 2) / (n * (n + 1))
		stop = max(stop, start+1)
		stop = min(stop, shape[d]-(n-1-i))
		if i == n-1 {
			stop = shape[d]
		}
		b := annotate.WholeBlock(shape)
		b[d] = annotate.Span{Start: start, Stop: stop}
		owned[i] = b
		start = stop
	}
	t, err := annotate.NewUser(shape, owned)
	return t, err == nil
}

// retileLayouts are the layouts tried as sources and targets: every kind
// that fits, explicit uneven tiles along the first and the last dimension,
// each without and with an overlap of 1.
func retileLayouts(shape []int, n int) []Layout {
	var base []Layout
	for _, k := range testKinds {
		if _, err := annotate.New(k, shape, n); err == nil {
			base = append(base, Tiled(k))
		}
	}
	for _, d := range []int{0, len(shape) - 1} {
		if t, ok := unevenUser(shape, n, d); ok {
			base = append(base, Layout{Tiling: &t})
		}
	}
	out := append([]Layout(nil), base...)
	if n > 1 {
		for _, l := range base {
			l.Halo = 1
			out = append(out, l)
		}
	}
	return out
}

func describeLayout(l Layout) string {
	if l.Tiling != nil {
		return fmt.Sprintf("user %v halo %d", l.Tiling, l.Halo)
	}
	return fmt.Sprintf("%v halo %d", l.Kind, l.Halo)
}

// TestRetile retiles between every pair of layouts on 1 to 5 localities:
// the result equals the reference and each locality fetched exactly the
// pieces of the plan that come to it from others.
func TestRetile(t *testing.T) {
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				for si, shape := range [][]int{{13}, {11, 7}, {5, 4, 6}} {
					ref := globalData(shape, uint64(si), -1, 1)
					ls := retileLayouts(shape, n)
					for _, from := range ls {
						x, err := FromGlobal(e, shape, from, ref)
						if err != nil {
							return err
						}
						for _, to := range ls {
							what := fmt.Sprintf("shape %v: %s -> %s", shape, describeLayout(from), describeLayout(to))
							before := e.Counters()
							y, err := Retile(ctx, e, runtime.MakeReady(x), to).Get(ctx)
							if err != nil {
								return fmt.Errorf("%s: %w", what, err)
							}
							if err := checkTile(y, ref, what); err != nil {
								return err
							}
							want, err := e.tiling("test", shape, to)
							if err != nil {
								return err
							}
							if !y.ann.Tiling.Equal(want) || y.ann.Generation != 1 {
								return fmt.Errorf("%s: annotation %v, want generation 1 tiled %v", what, y.ann, want)
							}
							plan, err := annotate.Plan(x.ann.Tiling, want)
							if err != nil {
								return err
							}
							moved := 0
							for _, p := range plan {
								if p.To == e.Locality() && !p.Local() {
									moved += p.Block.Size()
								}
							}
							if got := e.Counters().BytesFetched - before.BytesFetched; got != uint64(8*moved) {
								return fmt.Errorf("%s: fetched %d bytes, want %d (the plan's pieces from other localities)", what, got, 8*moved)
							}
						}
					}
				}
				return nil
			})
		})
	}
}

// TestRetileMovedTotal: summed over the localities, a retile row -> column
// moves annotate.Moved(plan) elements, and every byte fetched was served.
func TestRetileMovedTotal(t *testing.T) {
	const n = 4
	shape := []int{16, 12}
	runJob(t, n, func(ctx context.Context, e *Env) error {
		x := Random(ctx, e, shape, Tiled(annotate.Row), 3)
		xv, err := x.Get(ctx)
		if err != nil {
			return err
		}
		before := e.Counters()
		// Every locality has its counts before any starts fetching: a
		// locality that took them late would miss the fetches it served
		// to a faster one.
		if _, err := e.comm.Barrier(ctx).Get(ctx); err != nil {
			return err
		}
		y := Retile(ctx, e, x, Tiled(annotate.Column))
		if _, err := y.Get(ctx); err != nil {
			return err
		}
		// A collective after the retile: every locality's fetches are done.
		if _, err := Sum(ctx, e, y).Get(ctx); err != nil {
			return err
		}
		after := e.Counters()
		fetched := runtime.AllReduceOf(ctx, e.comm, after.BytesFetched-before.BytesFetched, func(a, b uint64) uint64 { return a + b })
		served := runtime.AllReduceOf(ctx, e.comm, after.BytesServed-before.BytesServed, func(a, b uint64) uint64 { return a + b })
		f, err := fetched.Get(ctx)
		if err != nil {
			return err
		}
		s, err := served.Get(ctx)
		if err != nil {
			return err
		}
		col, _ := annotate.New(annotate.Column, shape, n)
		plan, _ := annotate.Plan(xv.ann.Tiling, col)
		if want := uint64(8 * annotate.Moved(plan)); f != want || s != want {
			return fmt.Errorf("fetched %d and served %d bytes in all, want %d each", f, s, want)
		}
		return nil
	})
}

func TestRetileErrors(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		x := Zeros(ctx, e, []int{6, 4}, Layout{Name: "q"})
		other, _ := annotate.New(annotate.Row, []int{4, 6}, 2)
		gap, _ := annotate.New(annotate.Row, []int{6, 4}, 2)
		gap.Tiles[1].Owned[0].Start++ // row 3 belongs to nobody
		gap.Tiles[1].Halo[0].Start++
		for _, c := range []struct {
			l    Layout
			want string
		}{
			{Layout{Tiling: &other}, "shape"},
			{Layout{Tiling: &gap}, "cover"},
		} {
			_, err := Retile(ctx, e, x, c.l).Get(ctx)
			if err == nil || !strings.Contains(err.Error(), "Retile") || !strings.Contains(err.Error(), "q/0") ||
				!strings.Contains(err.Error(), "locality") || !strings.Contains(err.Error(), c.want) {
				return fmt.Errorf("retile to %v: error %v, want one naming Retile, q/0, the locality and %q", c.l.Tiling, err, c.want)
			}
		}
		return nil
	})
}
