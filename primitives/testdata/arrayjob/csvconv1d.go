package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// writeCSVFile writes rows x cols values, one row per line, to name in a
// new directory of this process: every locality writes the same bytes, as
// if it read one file of a shared file system.
func writeCSVFile(name string, g []float64, cols int, tail string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "arrayjob-csv")
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	for r := range len(g) / cols {
		for c := range cols {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(g[r*cols+c], 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	b.WriteString(tail)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// conv1dRef is the Keras Conv1D by its definition for x (pages, steps,
// in) and kernel w (k, in, out).
func conv1dRef(x []float64, pages, steps, in int, w []float64, k, out int, pad primitives.Padding, stride, dil int) (int, []float64) {
	span := (k-1)*dil + 1
	var outLen, left int
	switch pad {
	case primitives.PadValid, "":
		outLen = (steps-span)/stride + 1
	case primitives.PadSame:
		outLen = (steps + stride - 1) / stride
		left = max((outLen-1)*stride+span-steps, 0) / 2
	case primitives.PadCausal:
		outLen = (steps + stride - 1) / stride
		left = span - 1
	}
	y := make([]float64, pages*outLen*out)
	for b := range pages {
		for t := range outLen {
			for o := range out {
				s := 0.0
				for kk := range k {
					i := t*stride + kk*dil - left
					if i < 0 || i >= steps {
						continue
					}
					for c := range in {
						s += x[(b*steps+i)*in+c] * w[(kk*in+c)*out+o]
					}
				}
				y[(b*outLen+t)*out+o] = s
			}
		}
	}
	return outLen, y
}

// csvConv1D: Listing 2 on a small scale. A (23, 9, 3) array read from a
// CSV file with 9 rows per page, page-tiled, convolved with a replicated
// (4, 3, 6) kernel (valid, and same with stride 2): no communication.
// Then the file's 207 rows as one 2-D sequence, row-tiled, convolved with
// causal padding and dilation 2: the neighbours' halo travels.
func csvConv1D(ctx context.Context, e *primitives.Env) error {
	const pages, rpp, in, k, out = 23, 9, 3, 4, 6
	g := values(pages*rpp*in, 5)
	path, cleanup, err := writeCSVFile("HAR.csv", g, in, "")
	if err != nil {
		return err
	}
	defer cleanup()
	w := primitives.Whole{Shape: []int{k, in, out}, Data: values(k*in*out, 6)}
	kernel := runtime.MakeReady(w)

	x := primitives.ReadCSV(ctx, e, path, primitives.CSVOptions{RowsPerPage: rpp, Layout: primitives.Tiled(annotate.Page)})
	xa, err := x.Get(ctx)
	if err != nil {
		return err
	}
	if want := fmt.Sprintf(`["name", "HAR_csv_1/0"]`); !strings.Contains(xa.Annotation().String(), want) {
		return fmt.Errorf("annotation %s does not end with %s", xa.Annotation(), want)
	}
	if err := sameValues("page tile read", xa.Local(), localPart(xa, g), 0); err != nil {
		return err
	}
	for _, o := range []primitives.Conv1DOptions{{}, {Padding: primitives.PadSame, Stride: 2}} {
		outLen, want := conv1dRef(g, pages, rpp, in, w.Data, k, out, o.Padding, max(o.Stride, 1), 1)
		y, err := primitives.Conv1D(ctx, e, x, kernel, o).Get(ctx)
		if err != nil {
			return err
		}
		if got := fmt.Sprint(y.Shape()); got != fmt.Sprint([]int{pages, outLen, out}) {
			return fmt.Errorf("conv1d %+v: shape %s", o, got)
		}
		if err := sameValues(fmt.Sprintf("conv1d %+v of the pages", o), y.Local(), localPart(y, want), 1e-12); err != nil {
			return err
		}
	}

	x2 := primitives.ReadCSV(ctx, e, path, primitives.CSVOptions{})
	o := primitives.Conv1DOptions{Padding: primitives.PadCausal, Dilation: 2}
	outLen, want := conv1dRef(g, 1, pages*rpp, in, w.Data, k, out, o.Padding, 1, 2)
	y := primitives.Conv1D(ctx, e, x2, kernel, o)
	ya, err := y.Get(ctx)
	if err != nil {
		return err
	}
	if got := fmt.Sprint(ya.Shape()); got != fmt.Sprint([]int{outLen, out}) {
		return fmt.Errorf("conv1d %+v of the sequence: shape %s", o, got)
	}
	if err := sameValues("conv1d of the row-tiled sequence", ya.Local(), localPart(ya, want), 1e-12); err != nil {
		return err
	}
	whole, err := primitives.AllGather(ctx, e, y).Get(ctx)
	if err != nil {
		return err
	}
	return sameValues("gathered conv1d of the sequence", whole.Data, want, 1e-12)
}

// csvErrors: a CSV file with a bad number on its last line and one with a
// short row fail ReadCSV on every locality, with the file and line in the
// error, and a Conv1D chained on the failed read fails too; nothing hangs.
func csvErrors(ctx context.Context, e *primitives.Env) error {
	const rows, cols = 40, 3
	g := values(rows*cols, 7)
	for _, c := range []struct{ tail, want string }{
		{"1,2,x3\n", `line 41, column 3: "x3" is not a number`},
		{"1,2\n", "line 41, column 3: a row of 2 columns, want 3"},
	} {
		path, cleanup, err := writeCSVFile("bad.csv", g, cols, c.tail)
		if err != nil {
			return err
		}
		x := primitives.ReadCSV(ctx, e, path, primitives.CSVOptions{})
		kernel := runtime.MakeReady(primitives.Whole{Shape: []int{2, cols, 1}, Data: make([]float64, 2*cols)})
		_, err = primitives.Conv1D(ctx, e, x, kernel, primitives.Conv1DOptions{}).Get(ctx)
		cleanup()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "bad.csv") {
			return fmt.Errorf("conv1d of a bad file: error %v, want one naming bad.csv and saying %q", err, c.want)
		}
	}
	// The Env still pairs collectives after the failures.
	path, cleanup, err := writeCSVFile("good.csv", g, cols, "")
	if err != nil {
		return err
	}
	defer cleanup()
	s, err := primitives.Sum(ctx, e, primitives.ReadCSV(ctx, e, path, primitives.CSVOptions{})).Get(ctx)
	if err != nil {
		return err
	}
	want := 0.0
	for _, v := range g {
		want += v
	}
	if s != want {
		return fmt.Errorf("sum of good.csv %v, want %v", s, want)
	}
	return nil
}
