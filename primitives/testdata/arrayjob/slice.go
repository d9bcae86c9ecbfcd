package main

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// slice: rows, columns and a block of a sym-tiled matrix, as vectors and a
// matrix of their own layouts.
func slice(ctx context.Context, e *primitives.Env) error {
	shape := []int{33, 21}
	ref := values(shape[0]*shape[1], 9)
	x, err := primitives.FromGlobal(e, shape, primitives.Tiled(annotate.Sym), ref)
	if err != nil {
		return err
	}
	xf := runtime.MakeReady(x)
	row, col := 17, -2
	cuts := []struct {
		what  string
		f     *runtime.Future[*primitives.Array]
		block annotate.Block
	}{
		{"row 17", primitives.SliceRow(ctx, e, xf, row, primitives.Layout{}), annotate.Block{{Start: 17, Stop: 18}, {Start: 0, Stop: 21}}},
		{"column -2", primitives.SliceColumn(ctx, e, xf, col, primitives.Layout{Halo: 1}), annotate.Block{{Start: 0, Stop: 33}, {Start: 19, Stop: 20}}},
		{"block", primitives.Slice(ctx, e, xf, annotate.Block{{Start: 5, Stop: 30}, {Start: 6, Stop: 20}}, primitives.Tiled(annotate.Column)),
			annotate.Block{{Start: 5, Stop: 30}, {Start: 6, Stop: 20}}},
	}
	for _, c := range cuts {
		y, err := c.f.Get(ctx)
		if err != nil {
			return err
		}
		if err := sameValues(fmt.Sprintf("%s, tile %v", c.what, y.LocalBlock()), y.Local(), localPart(y, blockOf(shape, c.block, ref)), 0); err != nil {
			return err
		}
	}
	return nil
}
