package annotate

import "testing"

func TestSpanIntersect(t *testing.T) {
	tests := []struct {
		a, b Span
		want Span
		ok   bool
	}{
		{Span{0, 5}, Span{3, 8}, Span{3, 5}, true},
		{Span{3, 8}, Span{0, 5}, Span{3, 5}, true},
		{Span{0, 5}, Span{5, 8}, Span{}, false}, // half-open: touching spans share nothing
		{Span{0, 7}, Span{2, 3}, Span{2, 3}, true},
		{Span{0, 0}, Span{0, 7}, Span{}, false},
		{Span{4, 9}, Span{0, 2}, Span{}, false},
	}
	for _, tc := range tests {
		got, ok := tc.a.Intersect(tc.b)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v.Intersect(%v) = %v, %v; want %v, %v", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSpanLenContains(t *testing.T) {
	if n := (Span{3, 10}).Len(); n != 7 {
		t.Errorf("Len = %d, want 7", n)
	}
	if n := (Span{5, 2}).Len(); n != 0 {
		t.Errorf("Len of inverted span = %d, want 0", n)
	}
	if !(Span{0, 10}).Contains(Span{0, 10}) || (Span{0, 10}).Contains(Span{5, 11}) || !(Span{2, 3}).Contains(Span{7, 7}) {
		t.Error("Contains wrong")
	}
}

func TestBlockIntersect(t *testing.T) {
	tests := []struct {
		name string
		a, b Block
		want Block
		ok   bool
	}{
		{"2-D overlap", Block{{0, 4}, {0, 7}}, Block{{2, 8}, {5, 9}}, Block{{2, 4}, {5, 7}}, true},
		{"2-D disjoint in one dim", Block{{0, 4}, {0, 7}}, Block{{2, 8}, {7, 9}}, nil, false},
		{"3-D", Block{{0, 1000}, {0, 80}, {0, 3}}, Block{{999, 2000}, {10, 20}, {1, 2}}, Block{{999, 1000}, {10, 20}, {1, 2}}, true},
		{"dims differ", Block{{0, 4}}, Block{{0, 4}, {0, 4}}, nil, false},
	}
	for _, tc := range tests {
		got, ok := tc.a.Intersect(tc.b)
		if !got.Equal(tc.want) || ok != tc.ok {
			t.Errorf("%s: %v ∩ %v = %v, %v; want %v, %v", tc.name, tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBlockSizeString(t *testing.T) {
	b := Block{{0, 1000}, {0, 80}, {0, 3}}
	if n := b.Size(); n != 240000 {
		t.Errorf("Size = %d", n)
	}
	if s, want := b.String(), "[pages [0, 1000), rows [0, 80), columns [0, 3)]"; s != want {
		t.Errorf("String = %q, want %q", s, want)
	}
	if s, want := (Block{{2, 5}}).String(), "[columns [2, 5)]"; s != want {
		t.Errorf("String = %q, want %q", s, want)
	}
	if !b.Contains(Block{{10, 20}, {0, 80}, {1, 2}}) || b.Contains(Block{{10, 20}, {0, 81}, {1, 2}}) {
		t.Error("Contains wrong")
	}
}

func TestDimName(t *testing.T) {
	tests := []struct {
		ndim, i int
		want    string
	}{
		{1, 0, "columns"},
		{2, 0, "rows"}, {2, 1, "columns"},
		{3, 0, "pages"}, {3, 1, "rows"}, {3, 2, "columns"},
		{4, 0, "axis0"}, {2, 2, "axis2"},
	}
	for _, tc := range tests {
		if got := DimName(tc.ndim, tc.i); got != tc.want {
			t.Errorf("DimName(%d, %d) = %q, want %q", tc.ndim, tc.i, got, tc.want)
		}
	}
}
