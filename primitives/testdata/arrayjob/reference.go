package main

import (
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
)

// values returns n reproducible values for seed: small multiples of 1/8,
// so sums of a few of them are exact in any order.
func values(n int, seed uint64) []float64 {
	out := make([]float64, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		out[i] = float64(int(x%33)-16) / 8
	}
	return out
}

// sameValues compares got with want within rel (relatively, absolutely near
// zero).
func sameValues(what string, got, want []float64, rel float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > rel*math.Max(1, math.Abs(want[i])) || math.IsNaN(got[i]) != math.IsNaN(want[i]) {
			return fmt.Errorf("%s: element %d = %v, want %v", what, i, got[i], want[i])
		}
	}
	return nil
}

// localPart returns the elements of the held block of x out of the whole
// array ref (row-major), for comparison with x.Local().
func localPart(x *primitives.Array, ref []float64) []float64 {
	return blockOf(x.Shape(), x.LocalBlock(), ref)
}

// blockOf returns the elements of block b of the whole array ref of the
// given shape, row-major.
func blockOf(shape []int, b annotate.Block, ref []float64) []float64 {
	out := make([]float64, 0, b.Size())
	var rec func(d, g int)
	rec = func(d, g int) {
		if d == len(shape) {
			out = append(out, ref[g])
			return
		}
		for i := b[d].Start; i < b[d].Stop; i++ {
			rec(d+1, g*shape[d]+i)
		}
	}
	if !b.Empty() {
		rec(0, 0)
	}
	return out
}
