package annotate

import (
	"strings"
	"testing"
)

func mustTiling(t *testing.T, k Kind, shape []int, n int) Tiling {
	t.Helper()
	tl, err := New(k, shape, n)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestAnnotationString(t *testing.T) {
	har := mustTiling(t, Page, []int{2000, 80, 3}, 2)
	halo, err := mustTiling(t, Column, []int{7}, 3).WithHalo(1)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		a    Annotation
		want string
	}{
		{"Listing 3 locality 1", Annotation{Name: "HAR_csv_1", Locality: 1, Tiling: har},
			`annotation("localities", ["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]], ["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]], ["locality", 1, 2], ["name", "HAR_csv_1/0"])`},
		{"1-D columns", Annotation{Name: "v", Generation: 3, Tiling: mustTiling(t, Column, []int{7}, 2)},
			`annotation("localities", ["meta_0", ["tile", ["columns", 0, 4]]], ["meta_1", ["tile", ["columns", 4, 7]]], ["locality", 0, 2], ["name", "v/3"])`},
		{"2-D rows and columns", Annotation{Name: "m", Generation: 12, Locality: 0, Tiling: mustTiling(t, Row, []int{3, 5}, 1)},
			`annotation("localities", ["meta_0", ["tile", ["rows", 0, 3], ["columns", 0, 5]]], ["locality", 0, 1], ["name", "m/12"])`},
		{"halo prints owned", Annotation{Name: "h", Locality: 2, Tiling: halo},
			`annotation("localities", ["meta_0", ["tile", ["columns", 0, 4]], ["owned", ["columns", 0, 3]]], ["meta_1", ["tile", ["columns", 2, 6]], ["owned", ["columns", 3, 5]]], ["meta_2", ["tile", ["columns", 4, 7]], ["owned", ["columns", 5, 7]]], ["locality", 2, 3], ["name", "h/0"])`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.a.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := tc.a.String(); got != tc.want {
				t.Errorf("String =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestAnnotationNext(t *testing.T) {
	a, err := NewAnnotation("x", 1, mustTiling(t, Sym, []int{10, 10}, 4))
	if err != nil {
		t.Fatal(err)
	}
	b := a.Next().Next()
	if b.Generation != 2 || b.FullName() != "x/2" || a.Generation != 0 || a.FullName() != "x/0" {
		t.Errorf("generations: a %s, b %s", a.FullName(), b.FullName())
	}
	b.Tiling.Tiles[0].Owned[0].Start = 99
	if a.Tiling.Tiles[0].Owned[0].Start != 0 {
		t.Error("Next shares tile memory with its receiver")
	}
	if a.Localities() != 4 || !a.Local().Owned.Equal(Block{{0, 5}, {5, 10}}) {
		t.Errorf("Localities %d, Local %v", a.Localities(), a.Local())
	}
}

func TestAnnotationValidate(t *testing.T) {
	tl := mustTiling(t, Row, []int{7}, 2)
	tests := []struct {
		name string
		a    Annotation
		want string
	}{
		{"empty name", Annotation{Tiling: tl}, "empty array name"},
		{"quote in name", Annotation{Name: `a"b`, Tiling: tl}, "contains '\"'"},
		{"newline in name", Annotation{Name: "a\nb", Tiling: tl}, `contains '\n'`},
		{"negative generation", Annotation{Name: "a", Generation: -1, Tiling: tl}, "negative generation -1"},
		{"locality too big", Annotation{Name: "a", Locality: 2, Tiling: tl}, "locality 2 is not in [0, 2)"},
		{"negative locality", Annotation{Name: "a", Locality: -1, Tiling: tl}, "locality -1 is not in [0, 2)"},
		{"bad tiling", Annotation{Name: "a", Tiling: Tiling{Shape: []int{7}}}, `annotate: array "a": tiling of shape [7] has no tile`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.a.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := NewAnnotation("", 0, tl); err == nil {
		t.Error("NewAnnotation accepted an empty name")
	}
	if a, err := NewAnnotation("dir/x", 0, tl); err != nil || a.FullName() != "dir/x/0" {
		t.Errorf("name with slash: %v %v", a.FullName(), err)
	}
}
