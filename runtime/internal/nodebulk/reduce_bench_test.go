package nodebulk

import "testing"

// The reduction of one site's part of a 1 MiB AllReduce on 4 sites, a
// block at a time and in whole passes.
func BenchmarkReducePart(b *testing.B) {
	const n = 1 << 20 / 8 / 4
	src := make([][]float64, 4)
	for i := range src {
		src[i] = make([]float64, n)
	}
	res := make([]float64, n)
	for _, blk := range []int{reduceBlock, n} {
		b.Run(map[bool]string{true: "blocks", false: "passes"}[blk < n], func(b *testing.B) {
			b.SetBytes(4 * n * 8)
			for b.Loop() {
				for o := 0; o < n; o += blk {
					c := min(n, o+blk)
					sum(res[o:c], src[0][o:c], src[1][o:c])
					for s := 2; s < 4; s++ {
						sum(res[o:c], res[o:c], src[s][o:c])
					}
				}
			}
		})
	}
}
