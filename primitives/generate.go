package primitives

import (
	"context"
	"math"

	"github.com/tessera-amt/tessera/runtime"
)

// The generative primitives make generation-0 arrays; they need no
// communication. Each returns a ready future: a bad shape or layout (more
// tiles than elements along a split dimension, a tiling of another shape)
// is the future's error, the same on every locality.

// generate makes an array of shape laid out by l whose element at global
// linear index g is at(g).
func generate(e *Env, op string, shape []int, l Layout, at func(g int) float64) *runtime.Future[*Array] {
	ann, err := e.annotation(op, shape, l)
	if err != nil {
		return runtime.MakeFailed[*Array](err)
	}
	h := ann.Local().Halo
	data := e.tile(h.Size())
	walk(ann.Tiling.Shape, h, h, func(local, g int) { data[local] = at(g) })
	a, err := e.newArray(op, ann, data)
	if err != nil {
		return runtime.MakeFailed[*Array](err)
	}
	return runtime.MakeReady(a)
}

// Constant returns an array of the given shape, laid out by l, with every
// element v (constant_d).
func Constant(ctx context.Context, e *Env, shape []int, l Layout, v float64) *runtime.Future[*Array] {
	return generate(e, "Constant", shape, l, func(int) float64 { return v })
}

// Full is Constant under numpy's name.
func Full(ctx context.Context, e *Env, shape []int, l Layout, v float64) *runtime.Future[*Array] {
	return generate(e, "Full", shape, l, func(int) float64 { return v })
}

// Zeros returns an array of zeros.
func Zeros(ctx context.Context, e *Env, shape []int, l Layout) *runtime.Future[*Array] {
	return generate(e, "Zeros", shape, l, func(int) float64 { return 0 })
}

// Ones returns an array of ones.
func Ones(ctx context.Context, e *Env, shape []int, l Layout) *runtime.Future[*Array] {
	return generate(e, "Ones", shape, l, func(int) float64 { return 1 })
}

// Identity returns the n x n identity matrix (identity_d).
func Identity(ctx context.Context, e *Env, n int, l Layout) *runtime.Future[*Array] {
	return generate(e, "Identity", []int{n, n}, l, func(g int) float64 {
		if g/n == g%n {
			return 1
		}
		return 0
	})
}

// Random returns an array of uniform values in [0, 1) (random_d). Element
// g (the global row-major linear index) is a function of seed and g alone,
// so the distributed array equals the single-locality array with that seed
// whatever the tiling and the number of localities.
func Random(ctx context.Context, e *Env, shape []int, l Layout, seed uint64) *runtime.Future[*Array] {
	return generate(e, "Random", shape, l, func(g int) float64 { return uniformAt(seed, uint64(g)) })
}

// RandomNormal returns an array of normal values with the given mean and
// standard deviation, from seed as Random does (Box-Muller on the uniform
// values of the counters 2g and 2g+1).
func RandomNormal(ctx context.Context, e *Env, shape []int, l Layout, seed uint64, mean, stddev float64) *runtime.Future[*Array] {
	return generate(e, "RandomNormal", shape, l, func(g int) float64 {
		return mean + stddev*normalAt(seed, uint64(g))
	})
}

// splitmix64 is the finalizer of the SplitMix64 generator.
func splitmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// counterAt is the counter-based generator: 64 random bits for counter i
// of stream seed.
func counterAt(seed, i uint64) uint64 {
	const golden = 0x9e3779b97f4a7c15
	return splitmix64(splitmix64(seed) + (i+1)*golden)
}

// uniformAt is the uniform value in [0, 1) for counter i of stream seed.
func uniformAt(seed, i uint64) float64 {
	return float64(counterAt(seed, i)>>11) * (1.0 / (1 << 53))
}

// normalAt is the standard normal value for element i of stream seed.
func normalAt(seed, i uint64) float64 {
	u1 := 1 - uniformAt(seed, 2*i) // (0, 1]
	u2 := uniformAt(seed, 2*i+1)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}
