package main

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// reductions: random_d is the same array on every tiling; Max, Min,
// ArgMax, ArgMin, Mean and Shape of a known array; Transpose and Diag
// gathered against their definitions.
func reductions(ctx context.Context, e *primitives.Env) error {
	shape := []int{23, 9}
	n := shape[0] * shape[1]
	var first []float64
	for _, k := range []annotate.Kind{annotate.Row, annotate.Column, annotate.Sym} {
		w, err := primitives.AllGather(ctx, e, primitives.Random(ctx, e, shape, primitives.Tiled(k), 42)).Get(ctx)
		if err != nil {
			return err
		}
		if first == nil {
			first = w.Data
		} else if err := sameValues(fmt.Sprintf("random_d with %v tiling", k), w.Data, first, 0); err != nil {
			return err
		}
	}
	g := values(n, 5)
	g[17] = 100 // the maximum
	g[40] = -100
	a, err := primitives.FromGlobal(e, shape, primitives.Tiled(annotate.Column), g)
	if err != nil {
		return err
	}
	af := runtime.MakeReady(a)
	mx, mn := primitives.Max(ctx, e, af), primitives.Min(ctx, e, af)
	amx, amn := primitives.ArgMax(ctx, e, af), primitives.ArgMin(ctx, e, af)
	mean, sh := primitives.Mean(ctx, e, af), primitives.Shape(ctx, e, af)
	sum := 0.0
	for _, v := range g {
		sum += v
	}
	if v, err := mx.Get(ctx); err != nil || v != 100 {
		return fmt.Errorf("Max = %v (%v), want 100", v, err)
	}
	if v, err := mn.Get(ctx); err != nil || v != -100 {
		return fmt.Errorf("Min = %v (%v), want -100", v, err)
	}
	if v, err := amx.Get(ctx); err != nil || v != 17 {
		return fmt.Errorf("ArgMax = %v (%v), want 17", v, err)
	}
	if v, err := amn.Get(ctx); err != nil || v != 40 {
		return fmt.Errorf("ArgMin = %v (%v), want 40", v, err)
	}
	if v, err := mean.Get(ctx); err != nil || math.Abs(v-sum/float64(n)) > 1e-12 {
		return fmt.Errorf("Mean = %v (%v), want %v", v, err, sum/float64(n))
	}
	if v, err := sh.Get(ctx); err != nil || !slices.Equal(v, shape) {
		return fmt.Errorf("Shape = %v (%v), want %v", v, err, shape)
	}
	t, err := primitives.AllGather(ctx, e, primitives.Transpose(ctx, e, af)).Get(ctx)
	if err != nil {
		return err
	}
	for i := range shape[0] {
		for j := range shape[1] {
			if t.Data[j*shape[0]+i] != g[i*shape[1]+j] {
				return fmt.Errorf("Transpose[%d][%d] = %v, want %v", j, i, t.Data[j*shape[0]+i], g[i*shape[1]+j])
			}
		}
	}
	v, err := primitives.FromGlobal(e, []int{11}, primitives.Tiled(annotate.Row), g[:11])
	if err != nil {
		return err
	}
	d, err := primitives.AllGather(ctx, e, primitives.Diag(ctx, e, runtime.MakeReady(v))).Get(ctx)
	if err != nil {
		return err
	}
	for i := range 11 {
		for j := range 11 {
			want := 0.0
			if i == j {
				want = g[i]
			}
			if d.Data[i*11+j] != want {
				return fmt.Errorf("Diag[%d][%d] = %v, want %v", i, j, d.Data[i*11+j], want)
			}
		}
	}
	return nil
}

// inverse: inverse_d of a well-conditioned row-tiled matrix equals gonum's
// inverse of the whole matrix, within 1e-12 relative.
func inverse(ctx context.Context, e *primitives.Env) error {
	const n = 17
	g := values(n*n, 9)
	for i := range n {
		g[i*n+i] += 10
	}
	a, err := primitives.FromGlobal(e, []int{n, n}, primitives.Tiled(annotate.Row), g)
	if err != nil {
		return err
	}
	w, err := primitives.AllGather(ctx, e, primitives.Inverse(ctx, e, runtime.MakeReady(a))).Get(ctx)
	if err != nil {
		return err
	}
	var ref mat.Dense
	if err := ref.Inverse(mat.NewDense(n, n, g)); err != nil {
		return err
	}
	return sameValues("inverse_d", w.Data, ref.RawMatrix().Data, 1e-12)
}
