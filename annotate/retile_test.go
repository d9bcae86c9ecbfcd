package annotate

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestPlan(t *testing.T) {
	halo := func(tl Tiling, k int) Tiling {
		t.Helper()
		h, err := tl.WithHalo(k)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	user := func(shape []int, b ...Block) Tiling {
		t.Helper()
		u, err := NewUser(shape, b)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	tests := []struct {
		name     string
		src, dst Tiling
		want     []Piece
		moved    int
	}{
		{"1-D 7 over 3 to 2", mustTiling(t, Column, []int{7}, 3), mustTiling(t, Column, []int{7}, 2), []Piece{
			{0, 0, Block{{0, 3}}}, {1, 0, Block{{3, 4}}},
			{1, 1, Block{{4, 5}}}, {2, 1, Block{{5, 7}}},
		}, 3},
		{"identity moves nothing", mustTiling(t, Row, []int{7, 5}, 3), mustTiling(t, Row, []int{7, 5}, 3), []Piece{
			{0, 0, Block{{0, 3}, {0, 5}}}, {1, 1, Block{{3, 5}, {0, 5}}}, {2, 2, Block{{5, 7}, {0, 5}}},
		}, 0},
		{"rows 7x5/2 to columns /2", mustTiling(t, Row, []int{7, 5}, 2), mustTiling(t, Column, []int{7, 5}, 2), []Piece{
			{0, 0, Block{{0, 4}, {0, 3}}}, {1, 0, Block{{4, 7}, {0, 3}}},
			{0, 1, Block{{0, 4}, {3, 5}}}, {1, 1, Block{{4, 7}, {3, 5}}},
		}, 9 + 8},
		{"rows to sym 2x2", mustTiling(t, Row, []int{10, 10}, 4), mustTiling(t, Sym, []int{10, 10}, 4), []Piece{
			{0, 0, Block{{0, 3}, {0, 5}}}, {1, 0, Block{{3, 5}, {0, 5}}},
			{0, 1, Block{{0, 3}, {5, 10}}}, {1, 1, Block{{3, 5}, {5, 10}}},
			{1, 2, Block{{5, 6}, {0, 5}}}, {2, 2, Block{{6, 8}, {0, 5}}}, {3, 2, Block{{8, 10}, {0, 5}}},
			{1, 3, Block{{5, 6}, {5, 10}}}, {2, 3, Block{{6, 8}, {5, 10}}}, {3, 3, Block{{8, 10}, {5, 10}}},
		}, 10 + 15 + 5 + 10 + 5 + 10},
		{"to halo target fills the overlap", mustTiling(t, Column, []int{7}, 3), halo(mustTiling(t, Column, []int{7}, 3), 1), []Piece{
			{0, 0, Block{{0, 3}}}, {1, 0, Block{{3, 4}}},
			{0, 1, Block{{2, 3}}}, {1, 1, Block{{3, 5}}}, {2, 1, Block{{5, 6}}},
			{1, 2, Block{{4, 5}}}, {2, 2, Block{{5, 7}}},
		}, 4},
		{"source halo is not read", halo(mustTiling(t, Column, []int{7}, 3), 2), mustTiling(t, Column, []int{7}, 1), []Piece{
			{0, 0, Block{{0, 3}}}, {1, 0, Block{{3, 5}}}, {2, 0, Block{{5, 7}}},
		}, 4},
		{"3-D HAR pages to rows", mustTiling(t, Page, []int{2000, 80, 3}, 2), mustTiling(t, Row, []int{2000, 80, 3}, 2), []Piece{
			{0, 0, Block{{0, 1000}, {0, 40}, {0, 3}}}, {1, 0, Block{{1000, 2000}, {0, 40}, {0, 3}}},
			{0, 1, Block{{0, 1000}, {40, 80}, {0, 3}}}, {1, 1, Block{{1000, 2000}, {40, 80}, {0, 3}}},
		}, 2 * 120000},
		{"user to user", user([]int{4, 4}, Block{{0, 4}, {0, 1}}, Block{{0, 4}, {1, 4}}), user([]int{4, 4}, Block{{0, 1}, {0, 4}}, Block{{1, 4}, {0, 4}}), []Piece{
			{0, 0, Block{{0, 1}, {0, 1}}}, {1, 0, Block{{0, 1}, {1, 4}}},
			{0, 1, Block{{1, 4}, {0, 1}}}, {1, 1, Block{{1, 4}, {1, 4}}},
		}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Plan(tc.src, tc.dst)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("pieces %v\nwant   %v", got, tc.want)
			}
			for i := range got {
				if got[i].From != tc.want[i].From || got[i].To != tc.want[i].To || !got[i].Block.Equal(tc.want[i].Block) {
					t.Errorf("piece %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
			if m := Moved(got); m != tc.moved {
				t.Errorf("Moved = %d, want %d", m, tc.moved)
			}
		})
	}
}

func TestPlanErrors(t *testing.T) {
	a := mustTiling(t, Row, []int{7, 5}, 2)
	tests := []struct {
		name     string
		src, dst Tiling
		want     string
	}{
		{"shapes differ", a, mustTiling(t, Row, []int{5, 7}, 2), "retile from shape [7 5] to shape [5 7]: shapes differ"},
		{"dimensions differ", a, mustTiling(t, Column, []int{35}, 2), "retile from shape [7 5] to shape [35]"},
		{"bad source", Tiling{Shape: []int{7, 5}}, a, "annotate: retile source: tiling of shape [7 5] has no tile"},
		{"bad target", a, Tiling{Shape: []int{7, 5}, Tiles: []Tile{{Owned: Block{{0, 7}, {0, 4}}, Halo: Block{{0, 7}, {0, 4}}}}}, "annotate: retile target: tiles cover 28 of the 35"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(tc.src, tc.dst)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestPlanCoverage checks on random shapes and tilings that the pieces for
// each target tile cover its held block (halo included) exactly once, and
// that every piece comes from the owned block of its source.
func TestPlanCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(20261122, 5))
	for i := range 400 {
		shape := randomShape(r)
		src := randomTiling(t, r, shape)
		dst := randomTiling(t, r, shape)
		pieces, err := Plan(src, dst)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		// Count, for every target tile, how often each element is covered.
		total := WholeBlock(shape).Size()
		if total > 20000 {
			// Keep the check cheap: compare volumes and pairwise
			// disjointness only.
			checkVolumes(t, i, src, dst, pieces)
			continue
		}
		counts := make([][]int, len(dst.Tiles))
		for j := range counts {
			counts[j] = make([]int, total)
		}
		for _, p := range pieces {
			if p.Block.Empty() {
				t.Fatalf("case %d: empty piece %v", i, p)
			}
			if !src.Tiles[p.From].Owned.Contains(p.Block) {
				t.Fatalf("case %d: piece %v not in source owned %v", i, p, src.Tiles[p.From].Owned)
			}
			if !dst.Tiles[p.To].Halo.Contains(p.Block) {
				t.Fatalf("case %d: piece %v not in target tile %v", i, p, dst.Tiles[p.To].Halo)
			}
			eachElement(shape, p.Block, func(k int) { counts[p.To][k]++ })
		}
		for j, tl := range dst.Tiles {
			in := make([]bool, total)
			eachElement(shape, tl.Halo, func(k int) { in[k] = true })
			for k := range total {
				want := 0
				if in[k] {
					want = 1
				}
				if counts[j][k] != want {
					t.Fatalf("case %d: shape %v, target tile %d (%v): element %d covered %d times, want %d\nsrc %v\ndst %v\npieces %v",
						i, shape, j, tl.Halo, k, counts[j][k], want, src.Tiles, dst.Tiles, pieces)
				}
			}
		}
	}
}

func checkVolumes(t *testing.T, i int, src, dst Tiling, pieces []Piece) {
	t.Helper()
	vol := make([]int, len(dst.Tiles))
	for a, p := range pieces {
		if !src.Tiles[p.From].Owned.Contains(p.Block) || !dst.Tiles[p.To].Halo.Contains(p.Block) {
			t.Fatalf("case %d: piece %v outside its tiles", i, p)
		}
		vol[p.To] += p.Block.Size()
		for _, q := range pieces[a+1:] {
			if q.To == p.To {
				if x, ok := p.Block.Intersect(q.Block); ok {
					t.Fatalf("case %d: pieces %v and %v overlap in %v", i, p, q, x)
				}
			}
		}
	}
	for j, tl := range dst.Tiles {
		if vol[j] != tl.Halo.Size() {
			t.Fatalf("case %d: target tile %d holds %d elements, pieces give %d", i, j, tl.Halo.Size(), vol[j])
		}
	}
}

// eachElement calls f with the row-major index of every element of b in an
// array of the given shape.
func eachElement(shape []int, b Block, f func(int)) {
	if b.Empty() {
		return
	}
	idx := make([]int, len(b))
	for d := range b {
		idx[d] = b[d].Start
	}
	for {
		k := 0
		for d := range shape {
			k = k*shape[d] + idx[d]
		}
		f(k)
		d := len(b) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < b[d].Stop {
				break
			}
			idx[d] = b[d].Start
		}
		if d < 0 {
			return
		}
	}
}
