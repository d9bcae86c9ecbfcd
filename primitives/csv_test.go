package primitives

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// writeCSV writes the rows x cols values of g (row-major) to a file in
// dir, exactly (shortest round-trip form), one row per line; header adds a
// first line of names, crlf ends lines with "\r\n", and blankEvery > 0
// puts a blank line after every blankEvery rows.
func writeCSV(t *testing.T, dir, name string, g []float64, cols int, header, crlf bool, blankEvery int) string {
	t.Helper()
	var b strings.Builder
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	if header {
		for c := range cols {
			if c > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "x%d", c)
		}
		b.WriteString(eol)
	}
	for r := range len(g) / cols {
		for c := range cols {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(g[r*cols+c], 'g', -1, 64))
		}
		b.WriteString(eol)
		if blankEvery > 0 && (r+1)%blankEvery == 0 {
			b.WriteString(eol)
		}
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadCSV(t *testing.T) {
	dir := t.TempDir()
	const rows, cols, rpp = 36, 5, 3
	g := globalData([]int{rows, cols}, 11, -100, 100)
	noFinal := writeCSV(t, dir, "nofinal.csv", g, cols, false, false, 0)
	if b, err := os.ReadFile(noFinal); err != nil || os.WriteFile(noFinal, b[:len(b)-1], 0o644) != nil {
		t.Fatal("cutting the final newline")
	}
	files := []struct {
		what   string
		path   string
		header bool
	}{
		{"plain", writeCSV(t, dir, "plain.csv", g, cols, false, false, 0), false},
		{"header, CRLF", writeCSV(t, dir, "crlf.csv", g, cols, true, true, 0), true},
		{"header, blanks", writeCSV(t, dir, "blanks.csv", g, cols, true, false, 5), true},
		{"no final newline", noFinal, false},
	}
	for n := 1; n <= 5; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				for _, f := range files {
					type read struct {
						opts  CSVOptions
						shape []int
					}
					reads := []read{
						{CSVOptions{Header: f.header}, []int{rows, cols}},
						{CSVOptions{Header: f.header, Layout: Layout{Kind: annotate.Column}}, []int{rows, cols}},
						{CSVOptions{Header: f.header, Layout: Layout{Kind: annotate.Sym}}, []int{rows, cols}},
						{CSVOptions{Header: f.header, RowsPerPage: rpp}, []int{rows / rpp, rpp, cols}},
						{CSVOptions{Header: f.header, RowsPerPage: rpp, Layout: Layout{Kind: annotate.Sym}}, []int{rows / rpp, rpp, cols}},
					}
					if n > 1 {
						reads = append(reads, read{CSVOptions{Header: f.header, Layout: Layout{Kind: annotate.Row, Halo: 2}}, []int{rows, cols}})
					}
					for _, r := range reads {
						desc := fmt.Sprintf("%s file, rows per page %d, layout %+v", f.what, r.opts.RowsPerPage, r.opts.Layout)
						x, err := ReadCSV(ctx, e, f.path, r.opts).Get(ctx)
						if err != nil {
							return fmt.Errorf("%s: %w", desc, err)
						}
						if fmt.Sprint(x.Shape()) != fmt.Sprint(r.shape) {
							return fmt.Errorf("%s: shape %v, want %v", desc, x.Shape(), r.shape)
						}
						if err := checkTile(x, g, desc); err != nil {
							return err
						}
						// Element-wise primitives and reductions work on it.
						s, err := Sum(ctx, e, runtime.MakeReady(x)).Get(ctx)
						if err != nil {
							return err
						}
						want := 0.0
						for _, v := range g {
							want += v
						}
						if !closeTo(s, want, 1e-12) {
							return fmt.Errorf("%s: sum %v, want %v", desc, s, want)
						}
					}
				}
				return nil
			})
		})
	}
}

// TestReadCSVListing3 reads the (2000, 80, 3) array of Listing 2 from
// HAR.csv, page-tiled on 2 localities, and prints the annotations of
// Listing 3.
func TestReadCSVListing3(t *testing.T) {
	const pages, rpp, cols = 2000, 80, 3
	g := globalData([]int{pages * rpp, cols}, 3, -20, 20)
	for i := range g {
		g[i] = float64(int(g[i]*10)) / 10 // one decimal, as the paper shows
	}
	path := writeCSV(t, t.TempDir(), "HAR.csv", g, cols, false, false, 0)
	want := []string{
		`annotation("localities", ["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]], ["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]], ["locality", 0, 2], ["name", "HAR_csv_1/0"])`,
		`annotation("localities", ["meta_0", ["tile", ["pages", 0, 1000], ["rows", 0, 80], ["columns", 0, 3]]], ["meta_1", ["tile", ["pages", 1000, 2000], ["rows", 0, 80], ["columns", 0, 3]]], ["locality", 1, 2], ["name", "HAR_csv_1/0"])`,
	}
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		// Listing 2: input_array = file_read_csv_d(csv_file_name,
		// rows_per_page, tiling_type = "page").
		x, err := ReadCSV(ctx, e, path, CSVOptions{RowsPerPage: rpp, Layout: Tiled(annotate.Page)}).Get(ctx)
		if err != nil {
			return err
		}
		if got := x.Annotation().String(); got != want[e.Locality()] {
			return fmt.Errorf("locality %d prints\n%s\nwant\n%s", e.Locality(), got, want[e.Locality()])
		}
		if err := checkTile(x, g, "HAR.csv"); err != nil {
			return err
		}
		// The annotation parses back to itself.
		back, err := annotate.Parse(want[e.Locality()])
		if err != nil {
			return err
		}
		if !back.Equal(x.Annotation()) {
			return fmt.Errorf("parsed %v, want %v", back, x.Annotation())
		}
		return nil
	})
}

func TestReadCSVErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var long strings.Builder
	for i := range 40 {
		fmt.Fprintf(&long, "%d,%d,%d\n", i, i+1, i+2)
	}
	good := long.String()
	lines := strings.SplitAfter(good, "\n")
	ragged := strings.Join(lines[:33], "") + "1,2\n" + strings.Join(lines[33:], "")
	badNumber := strings.Join(lines[:2], "") + "1,2,abc\n" + strings.Join(lines[2:], "")
	cases := []struct {
		name string
		path string
		opts CSVOptions
		want []string // in every locality's error
	}{
		{"missing file", filepath.Join(dir, "missing.csv"), CSVOptions{}, []string{"missing.csv"}},
		{"ragged row", write("ragged.csv", ragged), CSVOptions{}, []string{"ragged.csv", "line 34, column 3", "a row of 2 columns, want 3"}},
		{"long row", write("long.csv", "h1,h2\n1,2\n3,4,5\n6,7\n8,9\n"), CSVOptions{Header: true}, []string{"long.csv", "line 3, column 3"}},
		{"bad number", write("bad.csv", badNumber), CSVOptions{}, []string{"bad.csv", "line 3, column 3", `"abc" is not a number`}},
		{"rows per page", write("pages.csv", good), CSVOptions{RowsPerPage: 7}, []string{"pages.csv", "40 rows are not a multiple of 7 rows per page"}},
		{"empty", write("empty.csv", "a,b\n\n"), CSVOptions{Header: true}, []string{"empty.csv", "no data row"}},
	}
	goodPath := write("good.csv", good)
	for n := 1; n <= 3; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			runJob(t, n, func(ctx context.Context, e *Env) error {
				for _, c := range cases {
					_, err := ReadCSV(ctx, e, c.path, c.opts).Get(ctx)
					if err == nil {
						return fmt.Errorf("%s: no error", c.name)
					}
					for _, w := range c.want {
						if !strings.Contains(err.Error(), w) {
							return fmt.Errorf("%s: error %q does not say %q", c.name, err, w)
						}
					}
				}
				// A file missing on one locality only (no shared file
				// system there): every locality fails, naming it.
				path := goodPath
				if e.Locality() == n-1 {
					path = filepath.Join(dir, "only-here.csv")
				}
				if _, err := ReadCSV(ctx, e, path, CSVOptions{}).Get(ctx); err == nil || !strings.Contains(err.Error(), "only-here.csv") {
					return fmt.Errorf("a file missing on locality %d: error %v", n-1, err)
				}
				// The Env still works after the failures.
				x, err := ReadCSV(ctx, e, goodPath, CSVOptions{}).Get(ctx)
				if err == nil && x.Shape()[0] != 40 {
					err = fmt.Errorf("shape %v, want [40 3]", x.Shape())
				}
				return err
			})
		})
	}
}
