package main

import (
	"context"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
)

// reclaim: rounds of Random, AllGather and a Retile that fetches from the
// other processes, every array dropped without Release; after each round
// the live arrays, their bytes and their AGAS names come back to where
// they were, on every locality (the soak of issue 32, as real processes).
func reclaim(ctx context.Context, e *primitives.Env) error {
	base := e.Counters()
	n := e.Size()
	for round := range 20 {
		a := primitives.Random(ctx, e, []int{16 * n, 24}, primitives.Layout{}, uint64(round))
		cols := primitives.Retile(ctx, e, a, primitives.Tiled(annotate.Column))
		if _, err := primitives.AllGather(ctx, e, cols).Get(ctx); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
		if c := e.Counters(); c.LiveArrays < base.LiveArrays+2 {
			return fmt.Errorf("round %d: %d live arrays with two held, %d before", round, c.LiveArrays, base.LiveArrays)
		}
		a, cols = nil, nil
		deadline := time.Now().Add(30 * time.Second)
		for {
			goruntime.GC()
			c := e.Counters()
			if c.LiveArrays == base.LiveArrays && c.LiveArrayBytes == base.LiveArrayBytes && c.AGASNames == base.AGASNames {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("round %d: arrays not reclaimed in 30 s: %+v, before the round %+v", round, c, base)
			}
			if err := pause(ctx, e, 5*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}
