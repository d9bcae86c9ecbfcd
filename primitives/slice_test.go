package primitives

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

func TestSlice(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for si, shape := range [][]int{{11, 7}, {5, 4, 6}} {
				ref := globalData(shape, uint64(si), -1, 1)
				for _, l := range retileLayouts(shape, n) {
					x, err := FromGlobal(e, shape, l, ref)
					if err != nil {
						return err
					}
					xf := runtime.MakeReady(x)
					type cut struct {
						what  string
						f     *runtime.Future[*Array]
						block annotate.Block // of x
					}
					var cuts []cut
					if len(shape) == 2 {
						for _, i := range []int{0, 5, -1} {
							r := (i + shape[0]) % shape[0]
							cuts = append(cuts, cut{fmt.Sprintf("row %d", i), SliceRow(ctx, e, xf, i, Layout{}),
								annotate.Block{{Start: r, Stop: r + 1}, {Start: 0, Stop: shape[1]}}})
						}
						for _, j := range []int{0, 3, -1} {
							c := (j + shape[1]) % shape[1]
							cuts = append(cuts, cut{fmt.Sprintf("column %d", j), SliceColumn(ctx, e, xf, j, Layout{Halo: 1}),
								annotate.Block{{Start: 0, Stop: shape[0]}, {Start: c, Stop: c + 1}}})
						}
						b := annotate.Block{{Start: 2, Stop: 9}, {Start: 1, Stop: 6}}
						cuts = append(cuts, cut{"block by columns", Slice(ctx, e, xf, b, Tiled(annotate.Column)), b})
					} else {
						b := annotate.Block{{Start: 1, Stop: 5}, {Start: 0, Stop: 4}, {Start: 2, Stop: 6}}
						cuts = append(cuts, cut{"block by pages", Slice(ctx, e, xf, b, Layout{}), b})
					}
					for _, c := range cuts {
						what := fmt.Sprintf("%s of %v %s", c.what, shape, describeLayout(l))
						y, err := c.f.Get(ctx)
						if err != nil {
							return fmt.Errorf("%s: %w", what, err)
						}
						if err := checkTile(y, blockOf(shape, c.block, ref), what); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
	})
}

func TestView(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		shape := []int{6, 5}
		ref := globalData(shape, 4, -1, 1)
		x, err := FromGlobal(e, shape, Layout{Halo: 1}, ref)
		if err != nil {
			return err
		}
		h := x.LocalBlock()
		b := annotate.Block{{Start: h[0].Start + 1, Stop: h[0].Stop}, {Start: 1, Stop: 4}}
		v, err := x.View(b)
		if err != nil {
			return err
		}
		m, err := v.Dense()
		if err != nil {
			return err
		}
		for i := b[0].Start; i < b[0].Stop; i++ {
			for j := b[1].Start; j < b[1].Stop; j++ {
				want := ref[i*shape[1]+j]
				if got := v.At(i-b[0].Start, j-b[1].Start); got != want {
					return fmt.Errorf("view %v at (%d, %d): %v, want %v", b, i, j, got, want)
				}
				if got := m.At(i-b[0].Start, j-b[1].Start); got != want {
					return fmt.Errorf("view %v as a matrix at (%d, %d): %v, want %v", b, i, j, got, want)
				}
			}
		}
		if _, err := x.View(annotate.WholeBlock(shape)); err == nil || !strings.Contains(err.Error(), x.Name()) {
			return fmt.Errorf("view of the whole array on one locality: %v, want an error naming %s", err, x.Name())
		}
		return nil
	})
}

func TestSliceErrors(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		a := Ones(ctx, e, []int{6, 4}, Layout{Name: "s"})
		p := Ones(ctx, e, []int{2, 3, 4}, Layout{Name: "p"})
		for _, tc := range []struct {
			name string
			f    *runtime.Future[*Array]
			want []string
		}{
			{"row out of range", SliceRow(ctx, e, a, 6, Layout{}), []string{"SliceRow", "s/0", "out of range"}},
			{"column of 3-D", SliceColumn(ctx, e, p, 0, Layout{}), []string{"SliceColumn", "p/0", "2-D"}},
			{"block outside", Slice(ctx, e, a, annotate.Block{{Start: 0, Stop: 7}, {Start: 0, Stop: 4}}, Layout{}), []string{"Slice", "s/0", "shape"}},
		} {
			_, err := tc.f.Get(ctx)
			for _, s := range append(tc.want, "locality") {
				if err == nil || !strings.Contains(err.Error(), s) {
					return fmt.Errorf("%s: error %v, want one naming %q", tc.name, err, s)
				}
			}
		}
		return nil
	})
}
