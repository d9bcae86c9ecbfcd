package primitives

import (
	"context"
	"fmt"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
)

// npDot is numpy's dot of the whole arrays a and b (1-D or 2-D).
func npDot(ga []float64, sa []int, gb []float64, sb []int) ([]int, []float64) {
	m, k := 1, sa[len(sa)-1]
	if len(sa) == 2 {
		m = sa[0]
	}
	n := 1
	if len(sb) == 2 {
		n = sb[1]
	}
	var shape []int
	if len(sa) == 2 {
		shape = append(shape, m)
	}
	if len(sb) == 2 {
		shape = append(shape, n)
	}
	if shape == nil {
		shape = []int{}
	}
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for l := range k {
				s += ga[i*k+l] * gb[l*n+j]
			}
			out[i*n+j] = s
		}
	}
	return shape, out
}

func TestDotForms(t *testing.T) {
	forms := [][2][]int{{{13}, {13}}, {{11, 7}, {7}}, {{7}, {7, 9}}, {{11, 7}, {7, 9}}, {{6, 10}, {10, 6}}}
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, f := range forms {
				sa, sb := f[0], f[1]
				ga, gb := globalData(sa, 20, -1, 1), globalData(sb, 21, -1, 1)
				shape, want := npDot(ga, sa, gb, sb)
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
						what := fmt.Sprintf("Dot of %s and %s", layoutName(sa, la), layoutName(sb, lb))
						if err := gathered(ctx, e, Dot(ctx, e, a, b), shape, want, what); err != nil {
							return err
						}
					}
				}
			}
			// A Gram matrix: X^T (column-tiled) . X (row-tiled) splits the
			// inner dimension where the tiles are: nothing moves and every
			// locality holds the whole (5, 5) result.
			sx := []int{60, 5}
			gx := globalData(sx, 22, -1, 1)
			x, err := makeOperand(ctx, e, sx, Layout{}, gx)
			if err != nil {
				return err
			}
			xt := Transpose(ctx, e, x)
			gt, gxt := npTranspose(gx, sx, []int{1, 0})
			shape, want := npDot(gxt, gt, gx, sx)
			before := e.Counters().BytesFetched
			g := Dot(ctx, e, xt, x)
			r, err := g.Get(ctx)
			if err != nil {
				return err
			}
			if d := e.Counters().BytesFetched - before; n > 1 && d != 0 {
				return fmt.Errorf("Gram matrix: fetched %d bytes, want none", d)
			}
			if n > 1 && !r.LocalBlock().Equal(annotate.WholeBlock(shape)) {
				return fmt.Errorf("Gram matrix: the tile holds %v, want the whole", r.LocalBlock())
			}
			if err := gathered(ctx, e, g, shape, want, "Gram matrix"); err != nil {
				return err
			}
			// DotWhole: the Gram matrix of 4 columns, which has no tiling
			// on 5 localities.
			s4 := []int{60, 4}
			g4 := globalData(s4, 23, -1, 1)
			x4, err := makeOperand(ctx, e, s4, Layout{}, g4)
			if err != nil {
				return err
			}
			t4, gt4 := npTranspose(g4, s4, []int{1, 0})
			shape, want = npDot(gt4, t4, g4, s4)
			w, err := DotWhole(ctx, e, Transpose(ctx, e, x4), x4).Get(ctx)
			if err != nil {
				return err
			}
			return sameWhole(w, shape, want, "DotWhole Gram matrix")
		})
	})
}

// TestDotPlanChoice checks the plans chosen from annotations alone, with
// operands too large to make.
func TestDotPlanChoice(t *testing.T) {
	for n := 2; n <= 5; n++ {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			ann := func(shape []int, kind annotate.Kind) *Array {
				tl, err := annotate.New(kind, shape, n)
				if err != nil {
					t.Fatal(err)
				}
				return &Array{&arrayState{ann: annotate.Annotation{Name: "x", Locality: e.Locality(), Tiling: tl}}}
			}
			for _, c := range []struct {
				a, b       []int
				ka, kb     annotate.Kind
				want       string
				wantGather bool
			}{
				// A small right operand: read whole, rows stay.
				{[]int{4000, 64}, []int{64, 64}, annotate.Row, annotate.Row, "rows", false},
				// A large right operand is not gathered: the inner
				// dimension is split as b's rows are.
				{[]int{64, 4096}, []int{4096, 4096}, annotate.Row, annotate.Row, "inner", false},
				// A large left operand and a column-tiled right one.
				{[]int{4096, 4096}, []int{4096, 64}, annotate.Column, annotate.Column, "inner", false},
				// A vector times a column-tiled matrix: by columns.
				{[]int{4096}, []int{4096, 4096}, annotate.Row, annotate.Column, "columns", false},
			} {
				d, err := newDotForm(e, ann(c.a, c.ka), ann(c.b, c.kb))
				if err != nil {
					return err
				}
				p, ok := d.choose()
				if !ok || p.kind != c.want || p.gather != c.wantGather {
					return fmt.Errorf("%v (%v) . %v (%v) on %d localities: plan %+v, want %s", c.a, c.ka, c.b, c.kb, n, p, c.want)
				}
			}
			return nil
		})
	}
}
