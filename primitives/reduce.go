package primitives

import (
	"context"
	"math"

	"github.com/tessera-amt/tessera/runtime"
)

// The reductions do local work on the owned part of this locality's tile,
// then combine the localities' results with one collective on the Env's
// communicator. Following the rule of this package, each reserves its
// collective when called (program order, the same on every locality) and
// issues it when its input is ready, so chained reductions pair up
// whatever order their inputs become ready in; if the input fails, the
// reservation is cancelled and every locality's result fails instead of
// waiting.

// allReduce reserves a collective now and, once a is ready, combines
// local(a) over the localities with op.
func allReduce(ctx context.Context, e *Env, op string, a *runtime.Future[*Array],
	local func(x *Array) ([]float64, error), combine func(x, y float64) float64) *runtime.Future[[]float64] {
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) ([]float64, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		v, err := local(x)
		if err != nil {
			return nil, err
		}
		if x.NDim() == 0 {
			// A 0-d array is whole on every locality: nothing to combine
			// (every locality leaves the reservation unused alike).
			return v, nil
		}
		out, err := r.AllReduce(ctx, v, combine).Get(ctx)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		return out, nil
	})
}

// first returns the future of the first element of f's value.
func first(ctx context.Context, f *runtime.Future[[]float64]) *runtime.Future[float64] {
	return runtime.Then(ctx, f, func(_ context.Context, v []float64) (float64, error) { return v[0], nil })
}

// Sum returns the sum of all elements of a (sum_d).
func Sum(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[float64] {
	return first(ctx, allReduce(ctx, e, "Sum", a, func(x *Array) ([]float64, error) {
		s := 0.0
		for _, v := range x.ownedData() {
			s += v
		}
		return []float64{s}, nil
	}, runtime.ReduceSum))
}

// Mean returns the mean of all elements of a (mean_d); NaN for an array
// with no element.
func Mean(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[float64] {
	return first(ctx, allReduce(ctx, e, "Mean", a, func(x *Array) ([]float64, error) {
		s := 0.0
		for _, v := range x.ownedData() {
			s += v
		}
		return []float64{s / float64(x.Size())}, nil
	}, runtime.ReduceSum))
}

// Max returns the largest element of a (amax_d); NaN if any element is
// NaN. An array with no element is an error.
func Max(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[float64] {
	return first(ctx, allReduce(ctx, e, "Max", a, extremum(e, "Max", math.Inf(-1), math.Max), runtime.ReduceMax))
}

// Min returns the smallest element of a (amin_d); NaN if any element is
// NaN. An array with no element is an error.
func Min(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[float64] {
	return first(ctx, allReduce(ctx, e, "Min", a, extremum(e, "Min", math.Inf(1), math.Min), runtime.ReduceMin))
}

func extremum(e *Env, op string, init float64, pick func(x, y float64) float64) func(x *Array) ([]float64, error) {
	return func(x *Array) ([]float64, error) {
		if x.Size() == 0 {
			return nil, e.errorf(op, "array %s of shape %v has no element", x.Name(), x.ann.Tiling.Shape)
		}
		m := init
		for _, v := range x.ownedData() {
			m = pick(m, v)
		}
		return []float64{m}, nil
	}
}

// ArgMax returns the global row-major linear index of the largest element
// of a (argmax_d): the smallest such index on a tie, the first NaN if there
// is one (as numpy). An array with no element is an error.
func ArgMax(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[int] {
	return argExtremum(ctx, e, "ArgMax", a, func(v, w float64) bool { return v > w })
}

// ArgMin returns the global row-major linear index of the smallest element
// of a (argmin_d), with ties and NaN as ArgMax.
func ArgMin(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[int] {
	return argExtremum(ctx, e, "ArgMin", a, func(v, w float64) bool { return v < w })
}

// argExtremum finds each tile's best (value, index) and all-gathers the
// pairs.
func argExtremum(ctx context.Context, e *Env, op string, a *runtime.Future[*Array], strictlyBetter func(v, w float64) bool) *runtime.Future[int] {
	// better reports whether (v, i) beats (w, j): NaN beats everything,
	// then strictlyBetter, then the smaller index.
	better := func(v float64, i int, w float64, j int) bool {
		vn, wn := math.IsNaN(v), math.IsNaN(w)
		switch {
		case vn && wn:
			return i < j
		case vn != wn:
			return vn
		case v == w:
			return i < j
		}
		return strictlyBetter(v, w)
	}
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (int, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return 0, err
		}
		if err := x.pin(e, op); err != nil {
			return 0, err
		}
		defer x.unpin()
		if x.Size() == 0 {
			return 0, e.errorf(op, "array %s of shape %v has no element", x.Name(), x.ann.Tiling.Shape)
		}
		if x.NDim() == 0 {
			return 0, nil // the one element, on every locality
		}
		t := x.ann.Local()
		bv, bi := math.NaN(), -1
		walk(x.ann.Tiling.Shape, t.Halo, t.Owned, func(local, g int) {
			if v := x.data[local]; bi < 0 || better(v, g, bv, bi) {
				bv, bi = v, g
			}
		})
		all, err := r.AllGather(ctx, []float64{bv, float64(bi)}).Get(ctx)
		if err != nil {
			return 0, e.wrap(op, err)
		}
		bv, bi = all[0], int(all[1])
		for k := 2; k+1 < len(all); k += 2 {
			if v, i := all[k], int(all[k+1]); better(v, i, bv, bi) {
				bv, bi = v, i
			}
		}
		return bi, nil
	})
}

// Shape returns the shape of a (shape_d); it needs no communication.
func Shape(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[[]int] {
	return runtime.Then(ctx, a, func(_ context.Context, x *Array) ([]int, error) {
		if x == nil {
			return nil, e.errorf("Shape", "nil array")
		}
		return x.Shape(), nil
	})
}
