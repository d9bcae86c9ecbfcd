package annotate

import (
	"fmt"
	"strings"
	"testing"
)

// cyclicCases are layouts with uneven block counts and sizes that are not
// multiples of the block.
var cyclicCases = []struct {
	shape []int
	c     Cyclic
}{
	{[]int{7, 5}, Cyclic{RowBlock: 2, ColBlock: 2, GridRows: 2, GridCols: 2}},
	{[]int{10, 10}, Cyclic{RowBlock: 3, ColBlock: 3, GridRows: 2, GridCols: 3}},
	{[]int{10, 10}, Cyclic{RowBlock: 3, ColBlock: 3, GridRows: 2, GridCols: 3, ColMajor: true}},
	{[]int{9, 4}, Cyclic{RowBlock: 2, ColBlock: 4, GridRows: 5, GridCols: 1}},
	{[]int{1, 1}, Cyclic{RowBlock: 1, ColBlock: 1, GridRows: 1, GridCols: 1}},
	{[]int{13, 6}, Cyclic{RowBlock: 4, ColBlock: 1, GridRows: 1, GridCols: 6}},
}

// ownerByDefinition is the owner of element (i, j) computed from the
// definition of the layout, independently of the code under test.
func ownerByDefinition(c Cyclic, i, j int) int {
	r, col := (i/c.RowBlock)%c.GridRows, (j/c.ColBlock)%c.GridCols
	if c.ColMajor {
		return col*c.GridRows + r
	}
	return r*c.GridCols + col
}

func TestBlockCyclicCoversOnceAndStoresDensely(t *testing.T) {
	for _, tc := range cyclicCases {
		t.Run(fmt.Sprintf("%v %v", tc.shape, tc.c), func(t *testing.T) {
			tl, err := NewBlockCyclic(tc.shape, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if err := tl.Validate(); err != nil {
				t.Fatal(err)
			}
			m, n := tc.shape[0], tc.shape[1]
			seen := make([]int, m*n)
			for l := range tl.Tiles {
				// Storage cells of locality l, each filled once.
				st := tl.Tiles[l].Owned
				filled := make([]bool, st.Size())
				count := 0
				for _, reg := range tl.Regions(l) {
					sb, ok := tl.Storage(reg)
					if !ok {
						t.Fatalf("locality %d: region %v has no storage block", l, reg)
					}
					if !st.Contains(sb) {
						t.Fatalf("locality %d: region %v is stored at %v, outside its tile %v", l, reg, sb, st)
					}
					for i := reg[0].Start; i < reg[0].Stop; i++ {
						for j := reg[1].Start; j < reg[1].Stop; j++ {
							if o := ownerByDefinition(tc.c, i, j); o != l {
								t.Fatalf("element (%d, %d) in a region of locality %d, owner by definition %d", i, j, l, o)
							}
							seen[i*n+j]++
							si, sj := sb[0].Start+i-reg[0].Start-st[0].Start, sb[1].Start+j-reg[1].Start-st[1].Start
							k := si*st[1].Len() + sj
							if filled[k] {
								t.Fatalf("locality %d: storage cell (%d, %d) twice", l, si, sj)
							}
							filled[k] = true
							count++
						}
					}
				}
				if count != st.Size() {
					t.Fatalf("locality %d: regions fill %d of %d storage cells", l, count, st.Size())
				}
				r, col := tc.c.Position(l)
				if got, want := st[0].Len(), LocalCount(m, tc.c.RowBlock, r, tc.c.GridRows); got != want {
					t.Fatalf("locality %d: %d local rows, NUMROC says %d", l, got, want)
				}
				if got, want := st[1].Len(), LocalCount(n, tc.c.ColBlock, col, tc.c.GridCols); got != want {
					t.Fatalf("locality %d: %d local columns, NUMROC says %d", l, got, want)
				}
			}
			for k, s := range seen {
				if s != 1 {
					t.Fatalf("element (%d, %d) in %d regions, want 1", k/n, k%n, s)
				}
			}
		})
	}
}

func TestLocalCountSumsToLength(t *testing.T) {
	for n := 1; n < 40; n++ {
		for nb := 1; nb <= n; nb++ {
			for p := 1; p <= 5; p++ {
				sum := 0
				for r := range p {
					k := 0
					for g := range n {
						if (g/nb)%p == r {
							k++
						}
					}
					if got := LocalCount(n, nb, r, p); got != k {
						t.Fatalf("LocalCount(%d, %d, %d, %d) = %d, counted %d", n, nb, r, p, got, k)
					}
					sum += k
				}
				if sum != n {
					t.Fatalf("n=%d nb=%d p=%d: counts sum to %d", n, nb, p, sum)
				}
			}
		}
	}
}

func TestBlockCyclicPrintsAndParses(t *testing.T) {
	for _, tc := range cyclicCases {
		tl, err := NewBlockCyclic(tc.shape, tc.c)
		if err != nil {
			t.Fatal(err)
		}
		a, err := NewAnnotation("A", len(tl.Tiles)-1, tl)
		if err != nil {
			t.Fatal(err)
		}
		s := a.String()
		if !strings.Contains(s, `["blockcyclic", ["rows", `) {
			t.Fatalf("printed without its layout: %s", s)
		}
		b, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%s): %v", s, err)
		}
		if !b.Equal(a) {
			t.Fatalf("Parse(String()) = %v, want %v", b, a)
		}
		if b.Tiling.Cyclic == nil || *b.Tiling.Cyclic != tc.c {
			t.Fatalf("parsed layout %v, want %v", b.Tiling.Cyclic, tc.c)
		}
	}
	// Tiles that disagree with the layout.
	tl, _ := NewBlockCyclic([]int{7, 5}, Cyclic{RowBlock: 2, ColBlock: 2, GridRows: 2, GridCols: 2})
	a, _ := NewAnnotation("A", 0, tl)
	bad := strings.Replace(a.String(), `["rows", 2, 2], ["columns", 2, 2]`, `["rows", 2, 2], ["columns", 4, 2]`, 1)
	if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "block-cyclic") {
		t.Fatalf("tiles of another layout: got %v, want an error naming the block-cyclic tiling", err)
	}
	order := strings.Replace(a.String(), `"row"]`, `"diagonal"]`, 1)
	if _, err := Parse(order); err == nil || !strings.Contains(err.Error(), `"order"`) {
		t.Fatalf("bad order: got %v", err)
	}
}

func TestBlockCyclicBadInput(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		c     Cyclic
		want  string
	}{
		{[]int{4, 4}, Cyclic{RowBlock: 5, ColBlock: 2, GridRows: 1, GridCols: 1}, "larger than the matrix"},
		{[]int{4, 4}, Cyclic{RowBlock: 2, ColBlock: 2, GridRows: 3, GridCols: 1}, "fewer than the 3x1 grid"},
		{[]int{4, 4}, Cyclic{RowBlock: 0, ColBlock: 2, GridRows: 1, GridCols: 1}, "at least 1x1"},
		{[]int{4, 4, 4}, Cyclic{RowBlock: 2, ColBlock: 2, GridRows: 1, GridCols: 1}, "2-D"},
		{[]int{4, 4}, Cyclic{RowBlock: 2, ColBlock: 2, GridRows: 0, GridCols: 1}, "grid"},
	} {
		if _, err := NewBlockCyclic(tc.shape, tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewBlockCyclic(%v, %v): got %v, want an error with %q", tc.shape, tc.c, err, tc.want)
		}
	}
	tl, _ := NewBlockCyclic([]int{4, 4}, Cyclic{RowBlock: 2, ColBlock: 2, GridRows: 2, GridCols: 1})
	if _, err := tl.WithHalo(1); err == nil {
		t.Error("a halo on a block-cyclic tiling: no error")
	}
	if _, err := New(BlockCyclic, []int{4, 4}, 2); err == nil || !strings.Contains(err.Error(), "NewBlockCyclic") {
		t.Errorf("New(BlockCyclic): got %v", err)
	}
	if k, err := ParseKind("blockcyclic"); err != nil || k != BlockCyclic || k.String() != "blockcyclic" {
		t.Errorf("ParseKind(blockcyclic) = %v, %v", k, err)
	}
}

func TestBlockCyclicTranspose(t *testing.T) {
	for _, tc := range cyclicCases {
		tl, _ := NewBlockCyclic(tc.shape, tc.c)
		tt := tl.Transpose()
		if err := tt.Validate(); err != nil {
			t.Fatalf("%v: transposed: %v", tc.c, err)
		}
		for i := range tc.shape[0] {
			for j := range tc.shape[1] {
				if a, b := ownerByDefinition(tc.c, i, j), ownerByDefinition(*tt.Cyclic, j, i); a != b {
					t.Fatalf("%v: element (%d, %d) owned by %d, transposed (%d, %d) by %d", tc.c, i, j, a, j, i, b)
				}
			}
		}
	}
}

// ownerIn returns the locality owning global element (i, j) of t.
func ownerIn(t Tiling, i, j int) int {
	if t.Cyclic != nil {
		return ownerByDefinition(*t.Cyclic, i, j)
	}
	for l, tl := range t.Tiles {
		if tl.Owned[0].Start <= i && i < tl.Owned[0].Stop && tl.Owned[1].Start <= j && j < tl.Owned[1].Stop {
			return l
		}
	}
	return -1
}

func TestPlanBlockCyclicMovesOnlyWhatMustMove(t *testing.T) {
	shape := []int{10, 7}
	row, _ := New(Row, shape, 4)
	col, _ := New(Column, shape, 4)
	a, _ := NewBlockCyclic(shape, Cyclic{RowBlock: 3, ColBlock: 2, GridRows: 2, GridCols: 2})
	b, _ := NewBlockCyclic(shape, Cyclic{RowBlock: 2, ColBlock: 3, GridRows: 2, GridCols: 2, ColMajor: true})
	for _, pair := range [][2]Tiling{{row, a}, {a, row}, {col, a}, {a, col}, {a, b}, {b, a}, {a, a}} {
		src, dst := pair[0], pair[1]
		ps, err := Plan(src, dst)
		if err != nil {
			t.Fatal(err)
		}
		must := 0
		cover := make([]int, shape[0]*shape[1])
		for i := range shape[0] {
			for j := range shape[1] {
				if ownerIn(src, i, j) != ownerIn(dst, i, j) {
					must++
				}
			}
		}
		for _, p := range ps {
			if _, ok := src.Storage(p.Block); !ok {
				t.Fatalf("piece %v is not inside one source block", p)
			}
			if _, ok := dst.Storage(p.Block); !ok {
				t.Fatalf("piece %v is not inside one target block", p)
			}
			for i := p.Block[0].Start; i < p.Block[0].Stop; i++ {
				for j := p.Block[1].Start; j < p.Block[1].Stop; j++ {
					if ownerIn(src, i, j) != p.From || ownerIn(dst, i, j) != p.To {
						t.Fatalf("piece %v: element (%d, %d) goes %d -> %d", p, i, j, ownerIn(src, i, j), ownerIn(dst, i, j))
					}
					cover[i*shape[1]+j]++
				}
			}
		}
		for k, c := range cover {
			if c != 1 {
				t.Fatalf("element %d in %d pieces", k, c)
			}
		}
		if got := Moved(ps); got != must {
			t.Fatalf("plan moves %d elements, %d must move", got, must)
		}
	}
}
