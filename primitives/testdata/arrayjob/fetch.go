package main

import (
	"context"
	"fmt"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// fetchBlocks: every locality fetches blocks across tile boundaries of a
// sym-tiled matrix (the global view), then all release it and the tile's
// memory is given back once every locality did.
func fetchBlocks(ctx context.Context, e *primitives.Env) error {
	shape := []int{45, 38}
	ref := values(shape[0]*shape[1], 3)
	base := e.Counters().LiveArrayBytes
	x, err := primitives.FromGlobal(e, shape, primitives.Tiled(annotate.Sym), ref)
	if err != nil {
		return err
	}
	me := e.Locality()
	blocks := []annotate.Block{
		annotate.WholeBlock(shape),
		{{Start: me, Stop: me + 20}, {Start: 3, Stop: 37}},
		{{Start: 44, Stop: 45}, {Start: 0, Stop: 38}},
		{{Start: 10, Stop: 30}, {Start: 19, Stop: 20}},
	}
	for _, b := range blocks {
		got, err := x.Fetch(ctx, b).Get(ctx)
		if err != nil {
			return err
		}
		if err := sameValues(fmt.Sprintf("block %v", b), got, blockOf(shape, b, ref), 0); err != nil {
			return err
		}
	}
	// The whole array once, the elements of other localities fetched.
	if c := e.Counters(); e.Size() > 1 && (c.BytesFetched == 0 || c.BlocksFetched == 0) {
		return fmt.Errorf("counters after fetching: %+v", c)
	}
	x.Release()
	deadline := time.Now().Add(30 * time.Second)
	for e.Counters().LiveArrayBytes != base {
		if time.Now().After(deadline) {
			return fmt.Errorf("the tile was not dropped after every locality released it: %+v", e.Counters())
		}
		if err := pause(ctx, e, 10*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// pause waits for d without keeping a worker lane, so the locality's
// actions (the others' releases) run meanwhile.
func pause(ctx context.Context, e *primitives.Env, d time.Duration) error {
	f, fulfil := runtime.NewPromise[struct{}](e.Runtime())
	time.AfterFunc(d, func() { fulfil(struct{}{}, nil) })
	return f.Err(ctx)
}
