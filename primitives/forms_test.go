package primitives

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// npTranspose is numpy's transpose(x, axes) of the whole array x.
func npTranspose(x []float64, shape, axes []int) ([]int, []float64) {
	out := make([]int, len(shape))
	for i, d := range axes {
		out[i] = shape[d]
	}
	res := make([]float64, len(x))
	for g := range res {
		idx := unravel(out, g)
		src := make([]int, len(shape))
		for i, d := range axes {
			src[d] = idx[i]
		}
		res[g] = x[ravel(shape, src)]
	}
	return out, res
}

func TestTransposeAxes(t *testing.T) {
	perms := map[int][][]int{1: {{0}}, 2: {{1, 0}, {0, 1}, {-1, 0}}, 3: {{1, 0, 2}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}}}
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, shape := range testShapes {
				g := globalData(shape, 12, -1, 1)
				for _, l := range testLayouts(shape, n) {
					x, err := makeOperand(ctx, e, shape, l, g)
					if err != nil {
						return err
					}
					for _, axes := range perms[len(shape)] {
						pos := make([]int, len(axes))
						for i, d := range axes {
							pos[i] = (d + len(shape)) % len(shape)
						}
						out, want := npTranspose(g, shape, pos)
						before := e.Counters().BytesFetched
						if err := gathered(ctx, e, TransposeAxes(ctx, e, x, axes), out, want, fmt.Sprintf("TransposeAxes %v of %s", axes, layoutName(shape, l))); err != nil {
							return err
						}
						if d := e.Counters().BytesFetched - before; d != 0 {
							return fmt.Errorf("TransposeAxes fetched %d bytes", d)
						}
					}
				}
			}
			_, err := TransposeAxes(ctx, e, Ones(ctx, e, []int{7, 5}, Layout{Name: "t"}), []int{0, 0}).Get(ctx)
			if err == nil || !strings.Contains(err.Error(), "t/0 of shape [7 5]: axes [0 0] are not a permutation") {
				return fmt.Errorf("bad axes: %v", err)
			}
			return nil
		})
	})
}

func TestReshape(t *testing.T) {
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			cases := []struct {
				from, to []int
				l        Layout
			}{
				{[]int{12, 5}, []int{60}, Layout{}},
				{[]int{12, 5}, []int{-1}, Layout{Kind: annotate.Row, Halo: 1}},
				{[]int{60}, []int{12, 5}, Layout{Tiling: rowMultiples(60, 5, n)}},
				{[]int{10, 2, 3}, []int{10, 6}, Tiled(annotate.Page)},
				{[]int{10, 6}, []int{10, 2, 3}, Layout{}},
				{[]int{10, 6}, []int{10, 2, 3}, Layout{Kind: annotate.Row, Halo: 1}},
			}
			for _, c := range cases {
				if n > 1 && c.from[0] < 2*n && c.l.Tiling == nil {
					continue
				}
				g := globalData(c.from, 13, -1, 1)
				x, err := makeOperand(ctx, e, c.from, c.l, g)
				if err != nil {
					return err
				}
				out, _ := inferShape(c.to, len(g))
				if err := gathered(ctx, e, Reshape(ctx, e, x, c.to), out, g, fmt.Sprintf("Reshape %s to %v", layoutName(c.from, c.l), c.to)); err != nil {
					return err
				}
			}
			if n > 1 {
				col := Ones(ctx, e, []int{7, 5}, Layout{Name: "c", Kind: annotate.Column})
				_, err := Reshape(ctx, e, col, []int{35}).Get(ctx)
				if err == nil || !strings.Contains(err.Error(), "Reshape on locality") || !strings.Contains(err.Error(), "c/0 of shape [7 5] into shape [35] would move data") {
					return fmt.Errorf("reshape moving data: %v", err)
				}
			}
			_, err := Reshape(ctx, e, Ones(ctx, e, []int{7, 5}, Layout{Name: "r"}), []int{6, -1}).Get(ctx)
			if err == nil || !strings.Contains(err.Error(), "cannot reshape array of size 35 into shape (6,-1)") {
				return fmt.Errorf("bad size: %v", err)
			}
			return nil
		})
	})
}

// rowMultiples is a tiling of a vector of m elements on n localities in
// spans that are multiples of k.
func rowMultiples(m, k, n int) *annotate.Tiling {
	t, _ := annotate.New(annotate.Row, []int{m / k, k}, n)
	blocks := make([]annotate.Block, n)
	for i, tl := range t.Tiles {
		blocks[i] = annotate.Block{{Start: tl.Owned[0].Start * k, Stop: tl.Owned[0].Stop * k}}
	}
	u, err := annotate.NewUser([]int{m}, blocks)
	if err != nil {
		panic(err)
	}
	return &u
}

func TestConcatenateStack(t *testing.T) {
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			sa, sb := []int{6, 5}, []int{4, 5}
			ga, gb := globalData(sa, 14, 0, 1), globalData(sb, 15, 1, 2)
			for _, la := range testLayouts(sa, n) {
				for _, lb := range testLayouts(sb, n) {
					a, err := makeOperand(ctx, e, sa, la, ga)
					if err != nil {
						return err
					}
					b, err := makeOperand(ctx, e, sb, lb, gb)
					if err != nil {
						return err
					}
					what := fmt.Sprintf("Concatenate of %s and %s", layoutName(sa, la), layoutName(sb, lb))
					want := append(append([]float64{}, ga...), gb...)
					for _, l := range []Layout{{}, Tiled(annotate.Column)} {
						if err := gathered(ctx, e, Concatenate(ctx, e, []*runtime.Future[*Array]{a, b}, 0, l), []int{10, 5}, want, what); err != nil {
							return err
						}
					}
					// Along the columns: (6, 5) with (6, 5) transposed pieces.
					bt := TransposeAxes(ctx, e, a, []int{1, 0}) // (5, 6)
					want = make([]float64, 0, 60)
					for r := range 5 {
						for c := range 6 {
							want = append(want, ga[c*5+r])
						}
						for c := range 6 {
							want = append(want, ga[c*5+r])
						}
					}
					if err := gathered(ctx, e, Concatenate(ctx, e, []*runtime.Future[*Array]{bt, bt}, -1, Layout{}), []int{5, 12}, want, what+" along -1"); err != nil {
						return err
					}
					// Stack along 1: (6, 2, 5).
					want = make([]float64, 0, 60)
					for r := range 6 {
						want = append(want, ga[r*5:r*5+5]...)
						want = append(want, ga[r*5:r*5+5]...)
					}
					for _, l := range []Layout{Tiled(annotate.Column), Tiled(annotate.Page)} {
						if err := gathered(ctx, e, Stack(ctx, e, []*runtime.Future[*Array]{a, a}, 1, l), []int{6, 2, 5}, want, what+" stacked"); err != nil {
							return err
						}
					}
				}
			}
			_, err := Concatenate(ctx, e, []*runtime.Future[*Array]{Ones(ctx, e, []int{6, 5}, Layout{Name: "p"}), Ones(ctx, e, []int{6, 4}, Layout{Name: "q"})}, 0, Layout{}).Get(ctx)
			if err == nil || !strings.Contains(err.Error(), "p/0 of shape [6 5] and q/0 of shape [6 4]") {
				return fmt.Errorf("concatenate of mismatched shapes: %v", err)
			}
			_, err = Stack(ctx, e, []*runtime.Future[*Array]{Ones(ctx, e, []int{6, 5}, Layout{})}, 3, Layout{}).Get(ctx)
			if err == nil || !strings.Contains(err.Error(), "axis 3 is out of bounds for array of dimension 3") {
				return fmt.Errorf("stack axis: %v", err)
			}
			return nil
		})
	})
}

func TestOuter(t *testing.T) {
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, mn := range [][2]int{{13, 6}, {6, 13}} {
				sa, sb := []int{mn[0]}, []int{mn[1]}
				ga, gb := globalData(sa, 16, -1, 1), globalData(sb, 17, -1, 1)
				want := make([]float64, 0, mn[0]*mn[1])
				for _, u := range ga {
					for _, v := range gb {
						want = append(want, u*v)
					}
				}
				for _, la := range testLayouts(sa, n) {
					for _, lb := range testLayouts(sb, n) {
						a, _ := makeOperand(ctx, e, sa, la, ga)
						b, err := makeOperand(ctx, e, sb, lb, gb)
						if err != nil {
							return err
						}
						if err := gathered(ctx, e, Outer(ctx, e, a, b), []int{mn[0], mn[1]}, want, fmt.Sprintf("Outer of %s and %s", layoutName(sa, la), layoutName(sb, lb))); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
	})
}
