package annotate

import (
	"strings"
	"testing"
)

func owned(t Tiling) []Block {
	out := make([]Block, len(t.Tiles))
	for i, tl := range t.Tiles {
		out[i] = tl.Owned
	}
	return out
}

func halos(t Tiling) []Block {
	out := make([]Block, len(t.Tiles))
	for i, tl := range t.Tiles {
		out[i] = tl.Halo
	}
	return out
}

func equalBlocks(a, b []Block) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func TestNew(t *testing.T) {
	tests := []struct {
		name  string
		kind  Kind
		shape []int
		n     int
		want  []Block
	}{
		{"1-D 7 over 3 columns", Column, []int{7}, 3, []Block{{{0, 3}}, {{3, 5}}, {{5, 7}}}},
		{"1-D 7 over 3 row splits the vector", Row, []int{7}, 3, []Block{{{0, 3}}, {{3, 5}}, {{5, 7}}}},
		{"1-D 1000 over 7", Column, []int{1000}, 7, []Block{
			{{0, 143}}, {{143, 286}}, {{286, 429}}, {{429, 572}}, {{572, 715}}, {{715, 858}}, {{858, 1000}}}},
		{"1-D one tile", Column, []int{7}, 1, []Block{{{0, 7}}}},
		{"1-D empty array one tile", Column, []int{0}, 1, []Block{{{0, 0}}}},
		{"2-D rows 7x5 over 3", Row, []int{7, 5}, 3, []Block{{{0, 3}, {0, 5}}, {{3, 5}, {0, 5}}, {{5, 7}, {0, 5}}}},
		{"2-D columns 7x5 over 2", Column, []int{7, 5}, 2, []Block{{{0, 7}, {0, 3}}, {{0, 7}, {3, 5}}}},
		{"2-D rows exact", Row, []int{4, 4}, 4, []Block{{{0, 1}, {0, 4}}, {{1, 2}, {0, 4}}, {{2, 3}, {0, 4}}, {{3, 4}, {0, 4}}}},
		{"3-D HAR pages over 2", Page, []int{2000, 80, 3}, 2, []Block{
			{{0, 1000}, {0, 80}, {0, 3}}, {{1000, 2000}, {0, 80}, {0, 3}}}},
		{"3-D rows 2000x80x3 over 3", Row, []int{2000, 80, 3}, 3, []Block{
			{{0, 2000}, {0, 27}, {0, 3}}, {{0, 2000}, {27, 54}, {0, 3}}, {{0, 2000}, {54, 80}, {0, 3}}}},
		{"3-D columns over 3", Column, []int{2, 2, 3}, 3, []Block{
			{{0, 2}, {0, 2}, {0, 1}}, {{0, 2}, {0, 2}, {1, 2}}, {{0, 2}, {0, 2}, {2, 3}}}},
		{"sym 4 square -> 2x2", Sym, []int{10, 10}, 4, []Block{
			{{0, 5}, {0, 5}}, {{0, 5}, {5, 10}}, {{5, 10}, {0, 5}}, {{5, 10}, {5, 10}}}},
		{"sym 4 odd square -> 2x2 uneven", Sym, []int{7, 7}, 4, []Block{
			{{0, 4}, {0, 4}}, {{0, 4}, {4, 7}}, {{4, 7}, {0, 4}}, {{4, 7}, {4, 7}}}},
		{"sym 2 square splits rows", Sym, []int{10, 10}, 2, []Block{{{0, 5}, {0, 10}}, {{5, 10}, {0, 10}}}},
		{"sym 2 wide splits columns", Sym, []int{10, 20}, 2, []Block{{{0, 10}, {0, 10}}, {{0, 10}, {10, 20}}}},
		{"sym 2 tall splits rows", Sym, []int{21, 10}, 2, []Block{{{0, 11}, {0, 10}}, {{11, 21}, {0, 10}}}},
		{"sym 6 tall -> 3x2", Sym, []int{300, 200}, 6, []Block{
			{{0, 100}, {0, 100}}, {{0, 100}, {100, 200}},
			{{100, 200}, {0, 100}}, {{100, 200}, {100, 200}},
			{{200, 300}, {0, 100}}, {{200, 300}, {100, 200}}}},
		{"sym 6 wide -> 2x3", Sym, []int{200, 300}, 6, []Block{
			{{0, 100}, {0, 100}}, {{0, 100}, {100, 200}}, {{0, 100}, {200, 300}},
			{{100, 200}, {0, 100}}, {{100, 200}, {100, 200}}, {{100, 200}, {200, 300}}}},
		{"sym 4 very tall -> 4x1", Sym, []int{1000, 10}, 4, []Block{
			{{0, 250}, {0, 10}}, {{250, 500}, {0, 10}}, {{500, 750}, {0, 10}}, {{750, 1000}, {0, 10}}}},
		{"sym 3 prime on square -> 3x1", Sym, []int{9, 9}, 3, []Block{{{0, 3}, {0, 9}}, {{3, 6}, {0, 9}}, {{6, 9}, {0, 9}}}},
		{"sym 3 on 2x9 -> 1x3 (rows too few)", Sym, []int{2, 9}, 3, []Block{{{0, 2}, {0, 3}}, {{0, 2}, {3, 6}}, {{0, 2}, {6, 9}}}},
		{"sym 1-D", Sym, []int{7}, 3, []Block{{{0, 3}}, {{3, 5}}, {{5, 7}}}},
		{"sym 3-D HAR 2 splits pages", Sym, []int{2000, 80, 3}, 2, []Block{
			{{0, 1000}, {0, 80}, {0, 3}}, {{1000, 2000}, {0, 80}, {0, 3}}}},
		{"sym 3-D cube 8 -> 2x2x2", Sym, []int{4, 4, 4}, 8, []Block{
			{{0, 2}, {0, 2}, {0, 2}}, {{0, 2}, {0, 2}, {2, 4}}, {{0, 2}, {2, 4}, {0, 2}}, {{0, 2}, {2, 4}, {2, 4}},
			{{2, 4}, {0, 2}, {0, 2}}, {{2, 4}, {0, 2}, {2, 4}}, {{2, 4}, {2, 4}, {0, 2}}, {{2, 4}, {2, 4}, {2, 4}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := New(tc.kind, tc.shape, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			if !equalBlocks(owned(got), tc.want) {
				t.Errorf("owned = %v\nwant    %v", owned(got), tc.want)
			}
			if !equalBlocks(halos(got), tc.want) {
				t.Errorf("halo without overlap = %v, want owned", halos(got))
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name  string
		kind  Kind
		shape []int
		n     int
		want  string
	}{
		{"more tiles than rows", Row, []int{7, 5}, 9, "row tiling of 9 tiles over 7 rows: more tiles than rows"},
		{"more tiles than columns", Column, []int{7, 5}, 6, "over 5 columns: more tiles than columns"},
		{"more tiles than pages", Page, []int{2, 80, 3}, 3, "over 2 pages: more tiles than pages"},
		{"more tiles than vector", Column, []int{7}, 8, "over 7 columns"},
		{"empty array two tiles", Row, []int{0, 3}, 2, "over 0 rows"},
		{"page on 2-D", Page, []int{7, 5}, 2, "page tiling needs a 3-D array"},
		{"sym no fit", Sym, []int{4, 4}, 7, "sym tiling of 7 tiles does not fit shape [4 4]"},
		{"zero tiles", Row, []int{7}, 0, "need at least one tile"},
		{"no dims", Row, []int{}, 1, "want 1 to 3"},
		{"four dims", Row, []int{1, 2, 3, 4}, 1, "want 1 to 3"},
		{"negative dim", Row, []int{3, -1}, 1, "negative columns"},
		{"user", User, []int{3}, 1, "NewUser"},
		{"unknown", Kind(42), []int{3}, 1, "unknown tiling type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.kind, tc.shape, tc.n)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestWithHalo(t *testing.T) {
	mustNew := func(k Kind, shape []int, n int) Tiling {
		t.Helper()
		tl, err := New(k, shape, n)
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	tests := []struct {
		name string
		in   Tiling
		k    int
		want []Block
	}{
		{"1-D 7/3 halo 1", mustNew(Column, []int{7}, 3), 1, []Block{{{0, 4}}, {{2, 6}}, {{4, 7}}}},
		{"1-D 7/3 halo 5 clipped", mustNew(Column, []int{7}, 3), 5, []Block{{{0, 7}}, {{0, 7}}, {{0, 7}}}},
		{"1-D halo 0", mustNew(Column, []int{7}, 3), 0, []Block{{{0, 3}}, {{3, 5}}, {{5, 7}}}},
		{"2-D rows halo 2 only rows grow", mustNew(Row, []int{7, 5}, 3), 2, []Block{
			{{0, 5}, {0, 5}}, {{1, 7}, {0, 5}}, {{3, 7}, {0, 5}}}},
		{"2-D sym halo 1 grows interior edges both dims", mustNew(Sym, []int{10, 10}, 4), 1, []Block{
			{{0, 6}, {0, 6}}, {{0, 6}, {4, 10}}, {{4, 10}, {0, 6}}, {{4, 10}, {4, 10}}}},
		{"3-D pages halo 3", mustNew(Page, []int{2000, 80, 3}, 2), 3, []Block{
			{{0, 1003}, {0, 80}, {0, 3}}, {{997, 2000}, {0, 80}, {0, 3}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.in.WithHalo(tc.k)
			if err != nil {
				t.Fatal(err)
			}
			if !equalBlocks(halos(got), tc.want) {
				t.Errorf("halo = %v\nwant   %v", halos(got), tc.want)
			}
			if !equalBlocks(owned(got), owned(tc.in)) {
				t.Errorf("owned changed: %v, was %v", owned(got), owned(tc.in))
			}
			if !equalBlocks(halos(tc.in), owned(tc.in)) {
				t.Error("WithHalo modified its receiver")
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			again, _ := got.WithHalo(0)
			if !equalBlocks(halos(again), owned(tc.in)) {
				t.Errorf("WithHalo(0) did not remove the overlap: %v", halos(again))
			}
		})
	}
	if _, err := mustNew(Row, []int{7}, 2).WithHalo(-1); err == nil || !strings.Contains(err.Error(), "negative halo -1") {
		t.Errorf("negative halo: error = %v", err)
	}
}

func TestNewUser(t *testing.T) {
	good := []Block{{{0, 2}, {0, 3}}, {{0, 2}, {3, 7}}, {{2, 5}, {0, 7}}}
	tl, err := NewUser([]int{5, 7}, good)
	if err != nil {
		t.Fatal(err)
	}
	if !equalBlocks(owned(tl), good) || !equalBlocks(halos(tl), good) {
		t.Errorf("tiles = %v", tl.Tiles)
	}
	good[0][0] = Span{9, 9}
	if tl.Tiles[0].Owned[0] != (Span{0, 2}) {
		t.Error("NewUser shares memory with its argument")
	}

	tests := []struct {
		name  string
		shape []int
		tiles []Block
		want  string
	}{
		{"overlap", []int{5, 7}, []Block{{{0, 3}, {0, 7}}, {{2, 5}, {0, 7}}}, "tiles 0 and 1 overlap in [rows [2, 3), columns [0, 7)]"},
		{"gap", []int{5, 7}, []Block{{{0, 2}, {0, 7}}, {{3, 5}, {0, 7}}}, "tiles cover 28 of the 35 elements of shape [5 7]; element [rows 2, columns 0] is in no tile"},
		{"gap at end", []int{7}, []Block{{{0, 3}}, {{3, 6}}}, "element [columns 6] is in no tile"},
		{"gap in corner", []int{4, 4}, []Block{{{0, 2}, {0, 4}}, {{2, 4}, {0, 2}}}, "element [rows 2, columns 2] is in no tile"},
		{"outside", []int{5}, []Block{{{0, 3}}, {{3, 6}}}, "tile 1 columns span [3, 6) is outside [0, 5)"},
		{"negative start", []int{5}, []Block{{{-1, 3}}, {{3, 5}}}, "outside [0, 5)"},
		{"inverted", []int{5}, []Block{{{0, 3}}, {{5, 3}}}, "outside [0, 5)"},
		{"empty tile", []int{5}, []Block{{{0, 5}}, {{5, 5}}}, "tile 1 columns span [5, 5) is empty"},
		{"dims mismatch", []int{5, 7}, []Block{{{0, 5}}}, "tile 0 has 1 dimension(s), the array 2"},
		{"no tiles", []int{5}, nil, "has no tile"},
		{"bad shape", []int{1, 1, 1, 1}, []Block{{{0, 1}, {0, 1}, {0, 1}, {0, 1}}}, "want 1 to 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewUser(tc.shape, tc.tiles)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestValidateHalo(t *testing.T) {
	tl, _ := New(Column, []int{7}, 2)
	tl.Tiles[0].Halo = Block{{1, 4}}
	if err := tl.Validate(); err == nil || !strings.Contains(err.Error(), "does not contain its owned block") {
		t.Errorf("error = %v", err)
	}
	tl.Tiles[0].Halo = Block{{0, 8}}
	if err := tl.Validate(); err == nil || !strings.Contains(err.Error(), "halo columns span [0, 8) is outside [0, 7)") {
		t.Errorf("error = %v", err)
	}
}

func TestKind(t *testing.T) {
	for k := Row; k <= User; k++ {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, err)
		}
	}
	if _, err := ParseKind("diagonal"); err == nil || !strings.Contains(err.Error(), `"diagonal"`) {
		t.Errorf("error = %v", err)
	}
	if s := Kind(0).String(); s != "Kind(0)" {
		t.Errorf("Kind(0) = %q", s)
	}
}

func TestTranspose(t *testing.T) {
	rows, err := New(Row, []int{7, 5}, 3)
	if err != nil {
		t.Fatal(err)
	}
	rows, _ = rows.WithHalo(1)
	tr := rows.Transpose()
	cols, _ := New(Column, []int{5, 7}, 3)
	cols, _ = cols.WithHalo(1)
	if !tr.Equal(cols) {
		t.Errorf("transpose of rows = %v, want %v", tr.Tiles, cols.Tiles)
	}
	if rows.Shape[0] != 7 || !rows.Tiles[0].Owned.Equal(Block{{0, 3}, {0, 5}}) {
		t.Error("Transpose modified its receiver")
	}
	if !tr.Transpose().Equal(rows) {
		t.Error("transposing twice is not the identity")
	}
	v, _ := New(Column, []int{7}, 2)
	if !v.Transpose().Equal(v) {
		t.Error("1-D transpose changed the tiling")
	}
}
