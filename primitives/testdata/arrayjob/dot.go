package main

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// dot: VDot of two differently tiled vectors, and a row-tiled matrix times
// a column-tiled vector and a sym-tiled matrix, against sequential loops.
// The values are multiples of 1/8 in [-2, 2], so the products' sums are
// exact in any order.
func dot(ctx context.Context, e *primitives.Env) error {
	m, k, p := 40, 30, 20
	ga, gv, gw, gb := values(m*k, 5), values(k, 6), values(k, 7), values(k*p, 8)
	a, err := primitives.FromGlobal(e, []int{m, k}, primitives.Tiled(annotate.Row), ga)
	if err != nil {
		return err
	}
	v, err := primitives.FromGlobal(e, []int{k}, primitives.Layout{Halo: 1}, gv)
	if err != nil {
		return err
	}
	uneven, err := unevenRows([]int{k, 1}, e.Size())
	if err != nil {
		return err
	}
	owned := make([]annotate.Block, len(uneven.Tiles))
	for i, t := range uneven.Tiles {
		owned[i] = annotate.Block{t.Owned[0]}
	}
	wt, err := annotate.NewUser([]int{k}, owned)
	if err != nil {
		return err
	}
	w, err := primitives.FromGlobal(e, []int{k}, primitives.Layout{Tiling: &wt}, gw)
	if err != nil {
		return err
	}
	b, err := primitives.FromGlobal(e, []int{k, p}, primitives.Tiled(annotate.Sym), gb)
	if err != nil {
		return err
	}
	want := 0.0
	for i := range gv {
		want += gv[i] * gw[i]
	}
	got, err := primitives.VDot(ctx, e, runtime.MakeReady(v), runtime.MakeReady(w)).Get(ctx)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("v . w = %v, want %v", got, want)
	}
	av, err := primitives.Dot(ctx, e, runtime.MakeReady(a), runtime.MakeReady(v)).Get(ctx)
	if err != nil {
		return err
	}
	if err := sameValues("a . v", av.Local(), localPart(av, product(ga, gv, m, k, 1)), 0); err != nil {
		return err
	}
	ab, err := primitives.Dot(ctx, e, runtime.MakeReady(a), runtime.MakeReady(b)).Get(ctx)
	if err != nil {
		return err
	}
	return sameValues("a . b", ab.Local(), localPart(ab, product(ga, gb, m, k, p)), 0)
}

// product is a (m×k) times b (k×n), row-major, by loops.
func product(a, b []float64, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for i := range m {
		for j := range n {
			s := 0.0
			for l := range k {
				s += a[i*k+l] * b[l*n+j]
			}
			out[i*n+j] = s
		}
	}
	return out
}
