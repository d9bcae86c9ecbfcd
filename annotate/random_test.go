package annotate

import (
	"math/rand/v2"
	"testing"
)

// randomTiling returns a valid tiling of a random shape: a random tiling
// type, or a user tiling made by random guillotine cuts in shuffled order,
// with a random halo.
func randomTiling(t *testing.T, r *rand.Rand, shape []int) Tiling {
	t.Helper()
	for {
		var (
			tl  Tiling
			err error
		)
		n := 1 + r.IntN(7)
		switch k := r.IntN(5); k {
		case 0:
			tl, err = New(Row, shape, n)
		case 1:
			tl, err = New(Column, shape, n)
		case 2:
			tl, err = New(Page, shape, n)
		case 3:
			tl, err = New(Sym, shape, n)
		default:
			tl, err = NewUser(shape, guillotine(r, shape, n))
		}
		if err != nil {
			continue // too many tiles for the shape, or page on fewer than 3-D
		}
		tl, err = tl.WithHalo(r.IntN(4) * r.IntN(2))
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
}

// guillotine cuts the array into up to n non-empty blocks by repeatedly
// splitting a random block along a random dimension, then shuffles them.
func guillotine(r *rand.Rand, shape []int, n int) []Block {
	blocks := []Block{WholeBlock(shape)}
	for tries := 0; len(blocks) < n && tries < 50; tries++ {
		i := r.IntN(len(blocks))
		d := r.IntN(len(shape))
		s := blocks[i][d]
		if s.Len() < 2 {
			continue
		}
		cut := s.Start + 1 + r.IntN(s.Len()-1)
		a, b := blocks[i].Clone(), blocks[i].Clone()
		a[d].Stop, b[d].Start = cut, cut
		blocks[i] = a
		blocks = append(blocks, b)
	}
	r.Shuffle(len(blocks), func(i, j int) { blocks[i], blocks[j] = blocks[j], blocks[i] })
	return blocks
}

func randomShape(r *rand.Rand) []int {
	shape := make([]int, 1+r.IntN(3))
	for i := range shape {
		shape[i] = 1 + r.IntN(12)
		if r.IntN(8) == 0 {
			shape[i] = 100 + r.IntN(1000)
		}
	}
	return shape
}
