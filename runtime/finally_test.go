package runtime

import (
	"context"
	"errors"
	"testing"
)

// Finally runs its function once its future is ready, whether it succeeds
// or fails, before the returned future is ready with the same result.
func TestFinallyRunsOnSuccessAndFailure(t *testing.T) {
	ctx := testCtx(t)
	rt := startOne(t, Config{})
	ran := 0
	gate, open := NewPromise[int](rt)
	f := Finally(gate, func() { ran++ })
	if f.IsReady() || ran != 0 {
		t.Fatalf("Finally before its future is ready: ready %v, ran %d times", f.IsReady(), ran)
	}
	open(7, nil)
	if v, err := f.Get(ctx); v != 7 || err != nil || ran != 1 {
		t.Fatalf("Finally after success: %v %v, ran %d times; want 7, no error, once", v, err, ran)
	}
	boom := errors.New("boom")
	g := Finally(Spawn(ctx, rt, func(context.Context) (int, error) { return 0, boom }), func() { ran++ })
	if _, err := g.Get(ctx); !errors.Is(err, boom) || ran != 2 {
		t.Fatalf("Finally after failure: %v, ran %d times in all; want boom, twice", err, ran)
	}
}
