package runtime

import (
	"math"
	"math/rand/v2"
	"testing"
)

// combineInto's loops for the four reductions give the bits of a call of
// the operator per element, NaNs' included, for ordinary values, infinities, NaNs,
// signed zeros and subnormals, with dst the same as lo or hi or apart; an
// operator of the program's own is called.
func TestCombineIntoLoopsGiveTheOperatorsBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0xfff0000000000001), math.SmallestNonzeroFloat64, -math.MaxFloat64, 1e308}
	const n = 1000
	lo, hi := make([]float64, n), make([]float64, n)
	for i := range lo {
		lo[i], hi[i] = rng.NormFloat64()*1e3, rng.NormFloat64()*1e-3
		if i < len(special)*len(special) {
			lo[i], hi[i] = special[i/len(special)], special[i%len(special)]
		}
	}
	calls := 0
	own := func(a, b float64) float64 { calls++; return a - b }
	for _, op := range []func(a, b float64) float64{ReduceSum, ReduceProd, ReduceMin, ReduceMax, own} {
		want := make([]float64, n)
		for i := range want {
			want[i] = op(lo[i], hi[i])
		}
		calls = 0
		apart := make([]float64, n)
		combineInto(apart, lo, hi, op)
		inLo, inHi := append([]float64(nil), lo...), append([]float64(nil), hi...)
		combineInto(inLo, inLo, hi, op)
		combineInto(inHi, lo, inHi, op)
		for i := range want {
			for _, got := range []float64{apart[i], inLo[i], inHi[i]} {
				if math.Float64bits(got) != math.Float64bits(want[i]) {
					t.Fatalf("op(%v, %v) = %v, combineInto gave %v", lo[i], hi[i], want[i], got)
				}
			}
		}
		if calls != 0 && calls != 3*n {
			t.Errorf("the program's operator was called %d times for 3 x %d elements", calls, n)
		}
	}
	if calls != 3*n {
		t.Errorf("the program's operator was called %d times, want %d", calls, 3*n)
	}
}

func BenchmarkCombineInto(b *testing.B) {
	const n = 1 << 17 // 1 MiB
	rng := rand.New(rand.NewPCG(5, 6))
	lo, hi := make([]float64, n), make([]float64, n)
	for i := range lo {
		lo[i], hi[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	own := func(a, b float64) float64 { return math.Min(a, b) }
	for name, op := range map[string]func(a, b float64) float64{"sum": ReduceSum, "min": ReduceMin, "max": ReduceMax, "own-min": own} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(8 * n)
			dst := make([]float64, n)
			for range b.N {
				combineInto(dst, lo, hi, op)
			}
		})
	}
}
