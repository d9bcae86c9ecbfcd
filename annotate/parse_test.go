package annotate

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestParseRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		tl := randomTiling(t, r, randomShape(r))
		a := Annotation{Name: "arr_" + string(rune('a'+i%26)), Generation: r.IntN(1000), Locality: r.IntN(len(tl.Tiles)), Tiling: tl}
		if err := a.Validate(); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		text := a.String()
		b, err := Parse(text)
		if err != nil {
			t.Fatalf("case %d: Parse(%s): %v", i, text, err)
		}
		if !a.Equal(b) {
			t.Fatalf("case %d: round trip\n%s\ngave\n%s", i, text, b)
		}
		if b.String() != text {
			t.Fatalf("case %d: reprint differs", i)
		}
	}
}

func TestParseForms(t *testing.T) {
	har := `annotation("localities", ["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]], ["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]], ["locality", 0, 2], ["name", "HAR_csv_1/0"])`
	tests := []struct {
		name  string
		text  string
		shape []int
		want  string // String of the result
	}{
		{"Listing 3", har, []int{2000, 80, 3}, har},
		{"multi-line, reordered entries and dimensions",
			"\n annotation(\"localities\",\n\t[\"name\", \"HAR_csv_1/0\"],\r\n [\"locality\", 0, 2],\n [\"meta_1\", [\"tile\", [\"columns\", 0, 3], [\"rows\", 0, 80], [\"pages\", 1000, 2000]]],\n [\"meta_0\", [\"tile\", [\"pages\", 0, 1000], [\"rows\", 0, 80], [\"columns\", 0, 3]]]\n)\n",
			[]int{2000, 80, 3}, har},
		{"1-D named rows as Phylanx allows",
			`annotation("localities", ["meta_0", ["tile", ["rows", 0, 4]]], ["meta_1", ["tile", ["rows", 4, 7]]], ["locality", 1, 2], ["name", "v/5"])`,
			[]int{7}, `annotation("localities", ["meta_0", ["tile", ["columns", 0, 4]]], ["meta_1", ["tile", ["columns", 4, 7]]], ["locality", 1, 2], ["name", "v/5"])`},
		{"name with slash", `annotation("localities", ["meta_0", ["tile", ["columns", 0, 4]]], ["locality", 0, 1], ["name", "a/b/17"])`,
			[]int{4}, `annotation("localities", ["meta_0", ["tile", ["columns", 0, 4]]], ["locality", 0, 1], ["name", "a/b/17"])`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Parse(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.String(); got != tc.want {
				t.Errorf("String =\n%s\nwant\n%s", got, tc.want)
			}
			if len(a.Tiling.Shape) != len(tc.shape) {
				t.Fatalf("shape %v, want %v", a.Tiling.Shape, tc.shape)
			}
			for i := range tc.shape {
				if a.Tiling.Shape[i] != tc.shape[i] {
					t.Errorf("shape %v, want %v", a.Tiling.Shape, tc.shape)
				}
			}
		})
	}
}

func TestParseErrorPosition(t *testing.T) {
	text := "annotation(\"localities\",\n  [\"meta_0\", [\"tile\", [\"columns\", 0, 4]]],\n  [\"locality\", 0 1])"
	_, err := Parse(text)
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a ParseError", err)
	}
	want := `annotate: parse error at offset 85 (line 3, column 18): expected "," or "]", found "1])"`
	if err.Error() != want {
		t.Errorf("error =\n%v\nwant\n%s", err, want)
	}
}

func TestParseErrors(t *testing.T) {
	const m0 = `["meta_0", ["tile", ["columns", 0, 4]]]`
	const m1 = `["meta_1", ["tile", ["columns", 4, 7]]]`
	tests := []struct {
		name string
		text string
		// at is the text the error's offset points to: its prefix, "$" for
		// the end of the text, "!" when the error is not a ParseError.
		at   string
		want string
	}{
		{"empty", ``, `$`, `expected "annotation(", found end of text`},
		{"wrong function", `annotations("localities")`, `s(`, `expected "(" after annotation, found "s(\"localitie..."`},
		{"missing paren", `annotation "localities"`, `"localities"`, `expected "(" after annotation`},
		{"unterminated", `annotation("localities", ` + m0, `$`, `expected "," or ")", found end of text`},
		{"unclosed meta as typeset in the paper", `annotation("localities", ["meta_0", ["tile", ["columns", 0, 4]], ["locality", 0, 1], ["name", "a/0"])`, `)`, `expected "," or "]", found ")"`},
		{"trailing text", `annotation("localities", ` + m0 + `, ["locality", 0, 1], ["name", "a/0"]) x`, `x`, `expected end of text after annotation(...), found "x"`},
		{"bad token", `annotation("localities", {})`, `{})`, `expected a string, an integer or a list, found "{})"`},
		{"unterminated string", `annotation("localities`, `$`, `expected closing '"'`},
		{"string with newline", "annotation(\"local\nities\")", "\nities", `strings hold no escapes or line breaks`},
		{"huge integer", `annotation("localities", ["locality", 99999999999999999999999, 1])`, `99999`, `an integer that fits in an int`},
		{"first argument", `annotation("tiles", ` + m0 + `)`, `"tiles"`, `expected "localities" as first argument, found "tiles"`},
		{"no argument", `annotation()`, `annotation()`, `expected "localities" as first argument, found no argument`},
		{"entry not keyed", `annotation("localities", 5)`, `5)`, `expected ["meta_<i>", ...], ["locality", <i>, <n>] or ["name", "<name>/<generation>"], found 5`},
		{"unknown entry", `annotation("localities", ["size", 3])`, `"size"`, `found "size"`},
		{"bad meta index", `annotation("localities", ["meta_x", ["tile", ["columns", 0, 4]]])`, `"meta_x"`, `"meta_<i>" with a non-negative index i`},
		{"meta index with sign", `annotation("localities", ["meta_+0", ["tile", ["columns", 0, 4]]])`, `"meta_+0"`, `non-negative index`},
		{"duplicate meta", `annotation("localities", ` + m0 + `, ` + m0 + `)`, `"meta_0", ["tile", ["columns", 0, 4]]])`, `expected meta_0 only once`},
		{"no tile", `annotation("localities", ["meta_0", ["file", ["columns", 0, 4]]])`, `["file"`, `expected ["tile", <spans>]`},
		{"bad span", `annotation("localities", ["meta_0", ["tile", ["columns", 0]]])`, `["columns", 0]`, `expected ["pages"|"rows"|"columns", <start>, <stop>], found a list`},
		{"bad dimension", `annotation("localities", ["meta_0", ["tile", ["depth", 0, 4]]])`, `"depth"`, `expected "pages", "rows" or "columns", found "depth"`},
		{"duplicate dimension", `annotation("localities", ["meta_0", ["tile", ["rows", 0, 4], ["rows", 0, 4]]])`, `"rows", 0, 4]]])`, `"rows" only once in a tile`},
		{"pages without rows", `annotation("localities", ["meta_0", ["tile", ["pages", 0, 4], ["columns", 0, 4]]])`, `["tile", ["pages"`, `spans for ["columns"], ["rows", "columns"] or ["pages", "rows", "columns"]`},
		{"mismatched dimensions", `annotation("localities", ` + m0 + `, ["meta_1", ["tile", ["rows", 0, 2], ["columns", 4, 7]]])`, `["meta_1"`, `expected a tile of 1 dimension(s) like the one at offset 25`},
		{"owned dims", `annotation("localities", ["meta_0", ["tile", ["columns", 0, 4]], ["owned", ["rows", 0, 1], ["columns", 0, 4]]])`, `["owned"`, `owned spans of the tile's 1 dimension(s)`},
		{"extra in meta", `annotation("localities", ["meta_0", ["tile", ["columns", 0, 4]], ["owned", ["columns", 0, 4]], 3])`, `["meta_0"`, `with an optional ["owned", <spans>]`},
		{"locality form", `annotation("localities", ` + m0 + `, ["locality", 0])`, `["locality", 0])`, `["locality", <this locality>, <number of localities>]`},
		{"duplicate locality", `annotation("localities", ` + m0 + `, ["locality", 0, 1], ["locality", 0, 1])`, `["locality", 0, 1])`, `one locality entry`},
		{"name form", `annotation("localities", ` + m0 + `, ["locality", 0, 1], ["name", 3])`, `["name", 3]`, `["name", "<name>/<generation>"]`},
		{"name without generation", `annotation("localities", ` + m0 + `, ["locality", 0, 1], ["name", "a"])`, `"a"]`, `"<name>/<generation>", found "a"`},
		{"negative generation", `annotation("localities", ` + m0 + `, ["locality", 0, 1], ["name", "a/-1"])`, `"a/-1"`, `non-negative decimal generation`},
		{"duplicate name", `annotation("localities", ` + m0 + `, ["locality", 0, 1], ["name", "a/0"], ["name", "a/0"])`, `["name", "a/0"])`, `one name entry`},
		{"no meta", `annotation("localities", ["locality", 0, 1], ["name", "a/0"])`, `annotation(`, `expected a ["meta_0", ...] entry, found none`},
		{"no locality", `annotation("localities", ` + m0 + `, ["name", "a/0"])`, `annotation(`, `expected a ["locality", <i>, <n>] entry`},
		{"no name", `annotation("localities", ` + m0 + `, ["locality", 0, 1])`, `annotation(`, `expected a ["name", "<name>/<generation>"] entry`},
		{"count mismatch", `annotation("localities", ` + m0 + `, ` + m1 + `, ["locality", 0, 3], ["name", "a/0"])`, `3], ["name"`, `expected the number of meta entries, 2, found 3`},
		{"missing meta index", `annotation("localities", ` + m0 + `, ["meta_2", ["tile", ["columns", 4, 7]]], ["locality", 0, 2], ["name", "a/0"])`, `annotation(`, `expected a ["meta_1", ...] entry (there are 2 localities)`},
		{"locality out of range", `annotation("localities", ` + m0 + `, ["locality", 1, 1], ["name", "a/0"])`, `!`, `locality 1 is not in [0, 1)`},
		{"gap", `annotation("localities", ` + m0 + `, ["meta_1", ["tile", ["columns", 5, 7]]], ["locality", 0, 2], ["name", "a/0"])`, `!`, `element [columns 4] is in no tile`},
		{"overlap", `annotation("localities", ` + m0 + `, ["meta_1", ["tile", ["columns", 3, 7]]], ["locality", 0, 2], ["name", "a/0"])`, `!`, `tiles 0 and 1 overlap in [columns [3, 4)]`},
		{"negative span", `annotation("localities", ["meta_0", ["tile", ["columns", -2, 4]]], ["locality", 0, 1], ["name", "a/0"])`, `!`, `tile 0 columns span [-2, 4) is outside [0, 4)`},
		{"owned outside tile", `annotation("localities", ["meta_0", ["tile", ["columns", 0, 3]], ["owned", ["columns", 0, 4]]], ["locality", 0, 1], ["name", "a/0"])`, `!`, `does not contain its owned block`},
		{"bad name", `annotation("localities", ` + m0 + `, ["locality", 0, 1], ["name", "/0"])`, `!`, `empty array name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.text)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v\nwant it to contain %s", err, tc.want)
			}
			var pe *ParseError
			isParse := errors.As(err, &pe)
			switch {
			case tc.at == "!":
				if isParse {
					t.Errorf("got ParseError %v, want a validation error", err)
				}
			case !isParse:
				t.Errorf("error %v is not a ParseError", err)
			case tc.at == "$":
				if pe.Offset != len(tc.text) {
					t.Errorf("offset %d, want the end %d (%v)", pe.Offset, len(tc.text), err)
				}
			case !strings.HasPrefix(tc.text[pe.Offset:], tc.at):
				t.Errorf("offset %d points to %q, want %q (%v)", pe.Offset, tc.text[pe.Offset:], tc.at, err)
			}
		})
	}
}
