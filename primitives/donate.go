package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/runtime"
)

// Donate hands the array a yields to the primitive it is passed to, as
// scipy's overwrite_a does: Cholesky and LU then make their result in its
// memory rather than in fresh memory (when every locality donates it and
// a primitive made it), and any other primitive reads it as usual. Either
// way this locality releases the array once that primitive has read it
// (Array.Release), so the program must not use it, or slices of it,
// afterwards; passing it to a second primitive is an error naming it.
func Donate(a *runtime.Future[*Array]) *runtime.Future[*Array] {
	return runtime.Then(context.Background(), a, func(_ context.Context, x *Array) (*Array, error) {
		if x != nil && x.arrayState != nil {
			x.donated.Store(true)
		}
		return x, nil
	})
}

// donatable reports whether x, pinned by the primitive, may become its
// result's memory here: donated, and memory a primitive made.
func donatable(x *Array) bool { return x.donated.Load() && x.mem != nil }

// inherit takes the memory of x, which the calling primitive pinned (and
// must not unpin again) and which every locality donated: it releases x
// here and returns its tile once x is dropped — every locality released
// it, no fetch from it is on its way — and no other primitive reads it.
// x's elements are as they were: arrays do not change.
func (e *Env) inherit(ctx context.Context, op string, x *Array) ([]float64, error) {
	got, fulfil := runtime.NewPromise[*runtime.Tile](e.rt)
	heir := func(t *runtime.Tile) { fulfil(t, nil) }
	x.heir.Store(&heir)
	x.unpin() // releases x: it is donated
	t, err := got.Get(ctx)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	return t.Float64s(), nil
}
