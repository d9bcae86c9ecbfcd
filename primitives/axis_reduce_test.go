package primitives

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

var allReductions = []Reduction{SumOf, ProdOf, MeanOf, VarOf, StdOf, MinOf, MaxOf, ArgMinOf, ArgMaxOf, AnyOf, AllOf}

// reduceData is test data in [-1, 1) with every third element 0, so any
// and all see both.
func reduceData(shape []int, seed uint64) []float64 {
	x := globalData(shape, seed, -1, 1)
	for i := 0; i < len(x); i += 3 {
		x[i] = 0
	}
	return x
}

func TestReduceAxis(t *testing.T) {
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, shape := range testShapes {
				global := reduceData(shape, uint64(len(shape)))
				axes := []int{AllAxes, -1}
				for d := range shape {
					axes = append(axes, d)
				}
				for _, l := range testLayouts(shape, n) {
					x, err := FromGlobal(e, shape, l, global)
					if err != nil {
						return err
					}
					xf := runtime.MakeReady(x)
					for _, red := range allReductions {
						for _, axis := range axes {
							for _, keep := range []bool{false, true} {
								what := fmt.Sprintf("%v axis %d keepdims %v of %s", red, axis, keep, layoutName(shape, l))
								if err := checkReduce(ctx, e, xf, global, shape, red, axis, keep, what); err != nil {
									return err
								}
							}
						}
					}
				}
			}
			return nil
		})
	})
}

// checkReduce runs one reduction and compares it with numpy's: the
// distributed result (or, when it has too few elements to be tiled, the
// error saying so and ReduceAxisWhole's result), its tiling, and what it
// fetched.
func checkReduce(ctx context.Context, e *Env, xf *runtime.Future[*Array], global []float64, shape []int, red Reduction, axis int, keep bool, what string) error {
	wshape, want := npReduce(global, shape, red, axis, keep)
	before := e.Counters().BytesFetched
	f := ReduceAxis(ctx, e, xf, red, axis, keep)
	r, err := f.Get(ctx)
	if err != nil {
		if !strings.Contains(err.Error(), "too few elements") {
			return fmt.Errorf("%s: %w", what, err)
		}
		w, err := ReduceAxisWhole(ctx, e, xf, red, axis, keep).Get(ctx)
		if err != nil {
			return fmt.Errorf("%s (whole): %w", what, err)
		}
		return sameWhole(w, wshape, want, what+" (whole)")
	}
	if got := e.Counters().BytesFetched - before; got != 0 {
		return fmt.Errorf("%s: fetched %d bytes, want none", what, got)
	}
	x, _ := xf.Get(ctx)
	if err := checkReducedTiling(x, r, axis, wshape); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := gathered(ctx, e, f, wshape, want, what); err != nil {
		return err
	}
	w, err := ReduceAxisWhole(ctx, e, xf, red, axis, keep).Get(ctx)
	if err != nil {
		return fmt.Errorf("%s (whole): %w", what, err)
	}
	return sameWhole(w, wshape, want, what+" (whole)")
}

// checkReducedTiling checks the documented tiling of r, the reduction of
// x along axis: the whole result held everywhere when a tile splits a
// reduced axis, else the projection of x's tile.
func checkReducedTiling(x, r *Array, axis int, shape []int) error {
	nd := x.NDim()
	split := false
	for d := range nd {
		if axis != AllAxes && d != axis && d != axis+nd {
			continue
		}
		for _, t := range x.ann.Tiling.Tiles {
			split = split || t.Owned[d].Len() != x.ann.Tiling.Shape[d]
		}
	}
	if split {
		if !r.LocalBlock().Equal(annotate.WholeBlock(shape)) {
			return fmt.Errorf("reduced along a split axis: the tile holds %v, want the whole result", r.LocalBlock())
		}
		return nil
	}
	if got, want := r.LocalBlock().Size(), x.LocalBlock().Size()*size(shape)/size(x.Shape()); got != want {
		return fmt.Errorf("reduced along unsplit axes: the tile holds %d elements (%v), want %d", got, r.LocalBlock(), want)
	}
	return nil
}

func TestReduceAxisNaNAndTies(t *testing.T) {
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			shape := []int{10, 6}
			global := make([]float64, 60)
			for i := range global {
				global[i] = float64(i % 4) // ties everywhere
			}
			global[13] = math.NaN()
			global[47] = math.NaN()
			for _, l := range testLayouts(shape, n) {
				x, err := FromGlobal(e, shape, l, global)
				if err != nil {
					return err
				}
				for _, red := range []Reduction{MinOf, MaxOf, ArgMinOf, ArgMaxOf, SumOf, AnyOf} {
					for _, axis := range []int{0, 1, AllAxes} {
						what := fmt.Sprintf("NaN/ties %v axis %d of %s", red, axis, layoutName(shape, l))
						if err := checkReduce(ctx, e, runtime.MakeReady(x), global, shape, red, axis, false, what); err != nil {
							return err
						}
					}
				}
			}
			return nil
		})
	})
}

func TestReduceAxisErrors(t *testing.T) {
	runJob(t, 3, func(ctx context.Context, e *Env) error {
		a := Ones(ctx, e, []int{7, 5}, Layout{Name: "a"})
		_, err := SumAxis(ctx, e, a, 2, false).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "a/0 of shape [7 5]: axis 2 is out of bounds for array of dimension 2") ||
			!strings.Contains(err.Error(), "SumAxis on locality") {
			return fmt.Errorf("axis out of range: %v", err)
		}
		if _, err = MaxAxis(ctx, e, a, -3, true).Get(ctx); err == nil || !strings.Contains(err.Error(), "axis -3 is out of bounds") {
			return fmt.Errorf("negative axis out of range: %v", err)
		}
		// (7, 2) summed along its row-tiled axis: 2 elements on 3
		// localities.
		b := Ones(ctx, e, []int{7, 2}, Layout{Name: "b"})
		if _, err = SumAxis(ctx, e, b, 0, false).Get(ctx); err == nil || !strings.Contains(err.Error(), "too few elements to be tiled over 3 localities") {
			return fmt.Errorf("untileable result: %v", err)
		}
		w, err := ReduceAxisWhole(ctx, e, b, SumOf, 0, false).Get(ctx)
		if err != nil || len(w.Data) != 2 || w.Data[0] != 7 || w.Data[1] != 7 {
			return fmt.Errorf("whole sum of ones (7, 2) along 0: %v %v, want [7 7]", w, err)
		}
		// A failed input fails the reduction with its error, and the
		// next reduction still pairs up.
		bad := Zeros(ctx, e, []int{2}, Layout{})
		if _, err = MeanAxis(ctx, e, bad, 0, false).Get(ctx); err == nil || !strings.Contains(err.Error(), "more tiles than") {
			return fmt.Errorf("failed input: %v", err)
		}
		s, err := Sum(ctx, e, SumAxis(ctx, e, a, 1, false)).Get(ctx)
		if err != nil || s != 35 {
			return fmt.Errorf("sum after a failure: %v %v", s, err)
		}
		return nil
	})
}
