package primitives

import (
	"context"
	"math"
	"slices"

	"github.com/tessera-amt/tessera/runtime"
)

// The element-wise primitives need no communication: each locality works
// on its own tile as soon as the inputs are ready. The result has the
// first input's annotation with the generation incremented (the same name,
// shape and tiling). Array operands must be conformable: the same shape and
// the same tiling; anything else fails the future with an error naming
// both arrays and what differs.

// Map returns fn applied to every element of a.
func Map(ctx context.Context, e *Env, a *runtime.Future[*Array], fn func(x float64) float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "Map", a, fn)
}

func mapOp(ctx context.Context, e *Env, op string, a *runtime.Future[*Array], fn func(x float64) float64) *runtime.Future[*Array] {
	k := e.derive()
	return runtime.Then(ctx, a, func(_ context.Context, x *Array) (*Array, error) {
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		data := e.tileToSet(len(x.data)) // every element is set below
		split(len(data), parallelGrain, func(lo, hi int) {
			for i, v := range x.data[lo:hi] {
				data[lo+i] = fn(v)
			}
		})
		return e.newArray(op, derivedAnnotation(k, x), data)
	})
}

// Map2 returns fn applied to the elements of a and b pairwise; a and b
// must be conformable.
func Map2(ctx context.Context, e *Env, a, b *runtime.Future[*Array], fn func(x, y float64) float64) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Map2", a, b, noArith, fn)
}

// zipOp is the primitive of a two-operand element-wise fn; ar, when not
// noArith, is fn with its loop written out.
func zipOp(ctx context.Context, e *Env, op string, a, b *runtime.Future[*Array], ar arith, fn func(x, y float64) float64) *runtime.Future[*Array] {
	k := e.derive()
	return runtime.Dataflow2(ctx, func(ctx context.Context, x, y *Array) (*Array, error) {
		if err := pinBoth(e, op, x, y); err != nil {
			return nil, err
		}
		defer x.unpin()
		defer y.unpin()
		if conformable(e, op, x, y) != nil {
			// Other shapes or tilings: NumPy's broadcasting (broadcast.go).
			return e.broadcast2(ctx, op, k, x, y, ar, fn)
		}
		data := e.tileToSet(len(x.data)) // every element is set below
		split(len(data), parallelGrain, func(lo, hi int) {
			if ar != noArith {
				ar.vv(data[lo:hi], x.data[lo:hi], y.data[lo:hi])
				return
			}
			for i, v := range x.data[lo:hi] {
				data[lo+i] = fn(v, y.data[lo+i])
			}
		})
		return e.newArray(op, derivedAnnotation(k, x, y), data)
	}, a, b)
}

// conformable checks that x and y have the same shape and tiling.
func conformable(e *Env, op string, x, y *Array) error {
	if !slices.Equal(x.ann.Tiling.Shape, y.ann.Tiling.Shape) {
		return e.errorf(op, "arrays %s of shape %v and %s of shape %v are not conformable: want the same shape",
			x.Name(), x.ann.Tiling.Shape, y.Name(), y.ann.Tiling.Shape)
	}
	if !x.ann.Tiling.Equal(y.ann.Tiling) {
		for i := range x.ann.Tiling.Tiles {
			tx, ty := x.ann.Tiling.Tiles[i], y.ann.Tiling.Tiles[i]
			if !tx.Owned.Equal(ty.Owned) || !tx.Halo.Equal(ty.Halo) {
				return e.errorf(op, "arrays %s and %s of shape %v are tiled differently: locality %d holds %v of one and %v of the other; want the same tiling (retile one)",
					x.Name(), y.Name(), x.ann.Tiling.Shape, i, tx.Halo, ty.Halo)
			}
		}
		return e.errorf(op, "arrays %s and %s of shape %v are tiled differently: want the same tiling", x.Name(), y.Name(), x.ann.Tiling.Shape)
	}
	return nil
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Add returns a + b element-wise.
func Add(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Add", a, b, addArith, func(x, y float64) float64 { return x + y })
}

// Sub returns a - b element-wise.
func Sub(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Sub", a, b, subArith, func(x, y float64) float64 { return x - y })
}

// Mul returns a * b element-wise.
func Mul(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Mul", a, b, mulArith, func(x, y float64) float64 { return x * y })
}

// Div returns a / b element-wise (IEEE division: x/0 is ±Inf or NaN).
func Div(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Div", a, b, divArith, func(x, y float64) float64 { return x / y })
}

// Equal returns the mask a == b: 1 where equal, 0 elsewhere.
func Equal(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Equal", a, b, noArith, func(x, y float64) float64 { return boolf(x == y) })
}

// NotEqual returns the mask a != b.
func NotEqual(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "NotEqual", a, b, noArith, func(x, y float64) float64 { return boolf(x != y) })
}

// Less returns the mask a < b.
func Less(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Less", a, b, noArith, func(x, y float64) float64 { return boolf(x < y) })
}

// Greater returns the mask a > b.
func Greater(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Greater", a, b, noArith, func(x, y float64) float64 { return boolf(x > y) })
}

// AddScalar returns a + s.
func AddScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], s float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "AddScalar", a, func(x float64) float64 { return x + s })
}

// SubScalar returns a - s.
func SubScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], s float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "SubScalar", a, func(x float64) float64 { return x - s })
}

// ScalarSub returns s - a.
func ScalarSub(ctx context.Context, e *Env, s float64, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	return mapOp(ctx, e, "ScalarSub", a, func(x float64) float64 { return s - x })
}

// MulScalar returns a * s.
func MulScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], s float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "MulScalar", a, func(x float64) float64 { return x * s })
}

// DivScalar returns a / s.
func DivScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], s float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "DivScalar", a, func(x float64) float64 { return x / s })
}

// ScalarDiv returns s / a.
func ScalarDiv(ctx context.Context, e *Env, s float64, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	return mapOp(ctx, e, "ScalarDiv", a, func(x float64) float64 { return s / x })
}

// EqualScalar returns the mask a == s.
func EqualScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], s float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "EqualScalar", a, func(x float64) float64 { return boolf(x == s) })
}

// NotEqualScalar returns the mask a != s: Listing 4's _ne(a, 0.0, true) is
// NotEqualScalar(ctx, e, a, 0).
func NotEqualScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], s float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "NotEqualScalar", a, func(x float64) float64 { return boolf(x != s) })
}

// LessScalar returns the mask a < s.
func LessScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], s float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "LessScalar", a, func(x float64) float64 { return boolf(x < s) })
}

// GreaterScalar returns the mask a > s.
func GreaterScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], s float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "GreaterScalar", a, func(x float64) float64 { return boolf(x > s) })
}

// Exp returns e**a element-wise.
func Exp(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	return mapOp(ctx, e, "Exp", a, math.Exp)
}

// Log returns the natural logarithm of a element-wise.
func Log(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	return mapOp(ctx, e, "Log", a, math.Log)
}

// Sqrt returns the square root of a element-wise.
func Sqrt(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	return mapOp(ctx, e, "Sqrt", a, math.Sqrt)
}

// Abs returns |a| element-wise.
func Abs(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	return mapOp(ctx, e, "Abs", a, math.Abs)
}

// Neg returns -a element-wise.
func Neg(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[*Array] {
	return mapOp(ctx, e, "Neg", a, func(x float64) float64 { return -x })
}
