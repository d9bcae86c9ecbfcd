package main

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// elementwise: a + b*2 and its sum, on row and column tilings of a 2-D
// array, gathered on every locality.
func elementwise(ctx context.Context, e *primitives.Env) error {
	shape := []int{37, 11}
	n := shape[0] * shape[1]
	ga, gb := values(n, 1), values(n, 2)
	want := make([]float64, n)
	sum := 0.0
	for i := range want {
		want[i] = ga[i] + 2*gb[i]
		sum += want[i]
	}
	for _, k := range []annotate.Kind{annotate.Row, annotate.Column} {
		a, err := primitives.FromGlobal(e, shape, primitives.Tiled(k), ga)
		if err != nil {
			return err
		}
		b, err := primitives.FromGlobal(e, shape, primitives.Tiled(k), gb)
		if err != nil {
			return err
		}
		c := primitives.Add(ctx, e, runtime.MakeReady(a), primitives.MulScalar(ctx, e, runtime.MakeReady(b), 2))
		x, err := c.Get(ctx)
		if err != nil {
			return err
		}
		if err := sameValues(fmt.Sprintf("%v tile of a + 2b", k), x.Local(), localPart(x, want), 0); err != nil {
			return err
		}
		s, err := primitives.Sum(ctx, e, c).Get(ctx)
		if err != nil {
			return err
		}
		if s != sum {
			return fmt.Errorf("%v sum of a + 2b = %v, want %v", k, s, sum)
		}
		w, err := primitives.AllGather(ctx, e, c).Get(ctx)
		if err != nil {
			return err
		}
		if err := sameValues(fmt.Sprintf("%v gathered a + 2b", k), w.Data, want, 0); err != nil {
			return err
		}
	}
	return nil
}
