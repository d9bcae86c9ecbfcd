package main

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// retile: a matrix through row -> column -> sym -> uneven rows with an
// overlap -> row, each result equal to the reference and each locality
// fetching exactly the plan's pieces that come to it from the others.
func retile(ctx context.Context, e *primitives.Env) error {
	shape := []int{64, 48}
	ref := values(shape[0]*shape[1], 4)
	x, err := primitives.FromGlobal(e, shape, primitives.Tiled(annotate.Row), ref)
	if err != nil {
		return err
	}
	uneven, err := unevenRows(shape, e.Size())
	if err != nil {
		return err
	}
	steps := []primitives.Layout{
		primitives.Tiled(annotate.Column),
		{Kind: annotate.Sym, Halo: 1},
		{Tiling: &uneven, Halo: 2},
		primitives.Tiled(annotate.Row),
	}
	for _, l := range steps {
		before := e.Counters()
		y, err := primitives.Retile(ctx, e, runtime.MakeReady(x), l).Get(ctx)
		if err != nil {
			return err
		}
		if err := sameValues(fmt.Sprintf("%s retiled to %v", x.Name(), y.LocalBlock()), y.Local(), localPart(y, ref), 0); err != nil {
			return err
		}
		xa, ya := x.Annotation(), y.Annotation()
		plan, err := annotate.Plan(xa.Tiling, ya.Tiling)
		if err != nil {
			return err
		}
		want := 0
		for _, p := range plan {
			if p.To == e.Locality() && !p.Local() {
				want += p.Block.Size()
			}
		}
		if got := e.Counters().BytesFetched - before.BytesFetched; got != uint64(8*want) {
			return fmt.Errorf("retiling %s to %s fetched %d bytes, want %d", x.Name(), y.Name(), got, 8*want)
		}
		x = y
	}
	return nil
}

// unevenRows cuts shape's rows into n tiles of growing height.
func unevenRows(shape []int, n int) (annotate.Tiling, error) {
	owned := make([]annotate.Block, n)
	start := 0
	for i := range n {
		stop := shape[0] * (i + 1) * (i + 2) / (n * (n + 1))
		stop = min(max(stop, start+1), shape[0]-(n-1-i))
		if i == n-1 {
			stop = shape[0]
		}
		owned[i] = annotate.Block{{Start: start, Stop: stop}, {Start: 0, Stop: shape[1]}}
		start = stop
	}
	return annotate.NewUser(shape, owned)
}
