package primitives

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// npSet is numpy's x[b] = v of the whole array x of shape, with v (of
// vshape) broadcast to part, the shape of b without the dimensions not in
// kept.
func npSet(x []float64, shape []int, b annotate.Block, kept []int, v []float64, vshape []int) []float64 {
	out := slices.Clone(x)
	part := make([]int, len(kept))
	for i, d := range kept {
		part[i] = b[d].Len()
	}
	_, pv := refBroadcast(func(vs []float64) float64 { return vs[0] }, [][]int{vshape, part}, v, make([]float64, size(part)))
	k := 0
	for g := range out {
		idx := unravel(shape, g)
		in := true
		for d := range shape {
			in = in && idx[d] >= b[d].Start && idx[d] < b[d].Stop
		}
		if in {
			out[g] = pv[k]
			k++
		}
	}
	return out
}

func TestUpdate(t *testing.T) {
	shape := []int{7, 5}
	blk := annotate.Block{{Start: 2, Stop: 5}, {Start: 1, Stop: 4}}
	values := [][]int{{3, 3}, {3}, {3, 1}, {}}
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			gx := globalData(shape, 8, -1, 1)
			for _, l := range testLayouts(shape, n) {
				x, err := makeOperand(ctx, e, shape, l, gx)
				if err != nil {
					return err
				}
				xa, _ := x.Get(ctx)
				for _, vs := range values {
					gv := globalData(vs, 9, 2, 3)
					for _, lv := range operandLayouts(vs, n) {
						v, err := makeOperand(ctx, e, vs, lv, gv)
						if err != nil {
							return err
						}
						what := fmt.Sprintf("SetBlock %v of %s to %s", blk, layoutName(shape, l), layoutName(vs, lv))
						f := SetBlock(ctx, e, x, blk, v)
						r, err := f.Get(ctx)
						if err != nil {
							return fmt.Errorf("%s: %w", what, err)
						}
						// A tile the block does not meet is shared.
						_, meets := xa.LocalBlock().Intersect(blk)
						if shared := &r.Local()[0] == &xa.Local()[0]; shared == meets {
							return fmt.Errorf("%s: tile %v shared %v, want %v", what, xa.LocalBlock(), shared, !meets)
						}
						if err := gathered(ctx, e, f, shape, npSet(gx, shape, blk, []int{0, 1}, gv, vs), what); err != nil {
							return err
						}
					}
				}
				row := globalData([]int{5}, 10, 4, 5)
				v, _ := makeOperand(ctx, e, []int{5}, Layout{Kind: annotate.Column}, row)
				want := npSet(gx, shape, annotate.Block{{Start: 6, Stop: 7}, {Start: 0, Stop: 5}}, []int{1}, row, []int{5})
				if err := gathered(ctx, e, SetRow(ctx, e, x, -1, v), shape, want, "SetRow -1 of "+layoutName(shape, l)); err != nil {
					return err
				}
				col := globalData([]int{7}, 11, 4, 5)
				v, _ = makeOperand(ctx, e, []int{7}, Layout{}, col)
				want = npSet(gx, shape, annotate.Block{{Start: 0, Stop: 7}, {Start: 2, Stop: 3}}, []int{0}, col, []int{7})
				if err := gathered(ctx, e, SetColumn(ctx, e, x, 2, v), shape, want, "SetColumn 2 of "+layoutName(shape, l)); err != nil {
					return err
				}
				want = npSet(gx, shape, blk, []int{0, 1}, []float64{-7}, []int{})
				if err := gathered(ctx, e, FillBlock(ctx, e, x, blk, -7), shape, want, "FillBlock of "+layoutName(shape, l)); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func TestUpdateErrors(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		a := Zeros(ctx, e, []int{7, 5}, Layout{Name: "a"})
		v := Ones(ctx, e, []int{4}, Layout{Name: "v"})
		_, err := SetBlock(ctx, e, a, annotate.Block{{Start: 2, Stop: 5}, {Start: 1, Stop: 4}}, v).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "SetBlock on locality") || !strings.Contains(err.Error(), "a/0") ||
			!strings.Contains(err.Error(), "could not broadcast input array from shape (4,) into shape (3,3)") {
			return fmt.Errorf("wrong value shape: %v", err)
		}
		_, err = SetRow(ctx, e, a, 7, Ones(ctx, e, []int{5}, Layout{})).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "row 7 of an array of shape [7 5]: out of range") {
			return fmt.Errorf("row out of range: %v", err)
		}
		_, err = FillBlock(ctx, e, a, annotate.Block{{Start: 0, Stop: 8}, {Start: 0, Stop: 5}}, 1).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "not inside the shape") {
			return fmt.Errorf("block outside: %v", err)
		}
		// The source array may go while the update shares its tiles.
		x, err := a.Get(ctx)
		if err != nil {
			return err
		}
		r, err := FillBlock(ctx, e, runtime.MakeReady(x), annotate.Block{{Start: 0, Stop: 1}, {Start: 0, Stop: 5}}, 3).Get(ctx)
		if err != nil {
			return err
		}
		x.Release()
		s, err := Sum(ctx, e, runtime.MakeReady(r)).Get(ctx)
		if err != nil || s != 15 {
			return fmt.Errorf("sum after the source's release: %v %v, want 15", s, err)
		}
		return nil
	})
}
