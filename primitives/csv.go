package primitives

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// CSVOptions says how ReadCSV reads a file.
type CSVOptions struct {
	// RowsPerPage, when positive, makes the array 3-D: (pages,
	// RowsPerPage, columns), every RowsPerPage consecutive rows of the
	// file forming one page (a sample of Listing 2). The number of rows
	// must be a multiple of it. Zero reads a 2-D array (rows, columns).
	RowsPerPage int
	// Header skips the first line of the file.
	Header bool
	// Layout names and tiles the array. Its zero Kind means annotate.Page
	// for a 3-D array and annotate.Row for a 2-D one; an empty Name gives
	// "<base>_csv_<k>", base being the file's name without directory and
	// extension and k the Env's count of named arrays (Listing 3's
	// "HAR_csv_1" for the first array read from HAR.csv).
	Layout Layout
}

// ReadCSV reads a distributed array of float64 from a CSV file that every
// locality can open (file_read_csv_d): one row per line, numbers separated
// by commas, blank lines skipped. Each locality reads the bytes of its own
// rows only, in three steps, each with one collective reserved when
// ReadCSV is called:
//
//  1. The file is cut into as many byte ranges as there are localities; a
//     line belongs to the range holding its first byte. Each locality finds
//     the lines of its range and the number of columns of its first row,
//     and every locality gathers the counts: the array's shape and the
//     line number of every range's first line follow.
//  2. The tiling of the shape gives each locality the rows of its tile;
//     the localities whose ranges hold the first and the end of a tile tell
//     everyone their byte offsets (one all-reduce).
//  3. Each locality reads and parses its tile's bytes; a last barrier
//     makes the result fail on every locality when one of them found a
//     bad row.
//
// A missing file, a row with another number of columns than the first, a
// field that is not a number (named by file, line and column), no data row,
// or a number of rows that is not a multiple of RowsPerPage fails the
// future on every locality.
func ReadCSV(ctx context.Context, e *Env, file string, opts CSVOptions) *runtime.Future[*Array] {
	const op = "ReadCSV"
	l := opts.Layout
	if l.Name == "" {
		l.Name = e.newName(csvBase(file) + "_csv")
	}
	if l.Kind == 0 && l.Tiling == nil {
		l.Kind = annotate.Row
		if opts.RowsPerPage > 0 {
			l.Kind = annotate.Page
		}
	}
	var rs [3]*runtime.Reservation
	for i := range rs {
		r, err := e.reserve(op)
		if err != nil {
			for _, q := range rs[:i] {
				q.Cancel(err)
			}
			return runtime.MakeFailed[*Array](err)
		}
		rs[i] = r
	}
	return runtime.SpawnNamed(ctx, e.rt, "primitives.ReadCSV", func(ctx context.Context) (a *Array, err error) {
		defer func() {
			if err != nil {
				for _, r := range rs {
					r.Cancel(err) // no effect on those issued
				}
			}
		}()
		rd := &csvReader{e: e, file: file, opts: opts, layout: l}
		return rd.read(ctx, rs)
	})
}

// csvBase is the file's base name without its extension, with the
// characters an array name may not hold replaced by '_'.
func csvBase(file string) string {
	b := filepath.Base(file)
	b = strings.TrimSuffix(b, filepath.Ext(b))
	b = strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, b)
	if b == "" || b == "." {
		b = "file"
	}
	return b
}

// csvReader is one locality's state while reading a file.
type csvReader struct {
	e      *Env
	file   string
	opts   CSVOptions
	layout Layout
	f      *os.File
	size   int64

	// This locality's byte range [lo, hi) and what it holds.
	lo, hi    int64
	lines     int     // lines starting in the range
	rowStarts []int64 // byte offset of each data row starting in the range
	rowLines  []int   // their line numbers, counted from 0 in the range
	cols      int     // columns of the first data row in the range, -1 if none
}

func (rd *csvReader) errorf(format string, args ...any) error {
	return rd.e.errorf("ReadCSV", "file %q: %s", rd.file, fmt.Sprintf(format, args...))
}

func (rd *csvReader) read(ctx context.Context, rs [3]*runtime.Reservation) (*Array, error) {
	e := rd.e
	f, err := os.Open(rd.file)
	if err != nil {
		return nil, e.wrap("ReadCSV", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, e.wrap("ReadCSV", err)
	}
	if st.IsDir() {
		return nil, rd.errorf("is a directory")
	}
	rd.f, rd.size = f, st.Size()
	n, me := int64(e.Size()), int64(e.Locality())
	rd.lo, rd.hi = me*rd.size/n, (me+1)*rd.size/n
	if err := rd.scan(); err != nil {
		return nil, err
	}

	// Step 1: every locality's line and row counts and first row's columns.
	counts, err := rs[0].AllGather(ctx, []float64{float64(rd.lines), float64(len(rd.rowStarts)), float64(rd.cols)}).Get(ctx)
	if err != nil {
		return nil, e.wrap("ReadCSV", err)
	}
	firstLine := make([]int, n+1) // line number (from 0) of each range's first line
	firstRow := make([]int, n+1)  // global index of each range's first data row
	cols := -1
	for i := range int(n) {
		firstLine[i+1] = firstLine[i] + int(counts[3*i])
		firstRow[i+1] = firstRow[i] + int(counts[3*i+1])
		if cols < 0 && counts[3*i+1] > 0 {
			cols = int(counts[3*i+2])
		}
	}
	rows := firstRow[n]
	if rows == 0 {
		return nil, rd.errorf("no data row")
	}
	rpp := rd.opts.RowsPerPage
	var shape []int
	switch {
	case rpp < 0:
		return nil, rd.errorf("RowsPerPage %d: want 0 (a 2-D array) or more", rpp)
	case rpp == 0:
		shape = []int{rows, cols}
	case rows%rpp != 0:
		return nil, rd.errorf("%d rows are not a multiple of %d rows per page", rows, rpp)
	default:
		shape = []int{rows / rpp, rpp, cols}
	}
	ann, err := e.annotation("ReadCSV", shape, rd.layout)
	if err != nil {
		return nil, err
	}

	// Step 2: the byte offsets and line numbers of every tile's first row
	// and end (the first row after it, or the end of the file).
	bounds := make([]float64, 4*n)
	for i := range bounds {
		bounds[i] = -1
	}
	mine := firstRow[me]
	for j, t := range ann.Tiling.Tiles {
		g0, g1 := rd.rowRange(shape, t.Halo)
		for k, g := range []int{g0, g1} {
			switch {
			case g >= mine && g < mine+len(rd.rowStarts):
				bounds[4*j+2*k] = float64(rd.rowStarts[g-mine])
				bounds[4*j+2*k+1] = float64(firstLine[me] + rd.rowLines[g-mine])
			case g == rows:
				bounds[4*j+2*k] = float64(rd.size)
				bounds[4*j+2*k+1] = float64(firstLine[n])
			}
		}
	}
	bounds, err = rs[1].AllReduce(ctx, bounds, runtime.ReduceMax).Get(ctx)
	if err != nil {
		return nil, e.wrap("ReadCSV", err)
	}

	// Step 3: read and parse this locality's tile.
	h := ann.Local().Halo
	g0, g1 := rd.rowRange(shape, h)
	data := e.tile(h.Size())
	if g1 > g0 {
		from, to := int64(bounds[4*me]), int64(bounds[4*me+2])
		line := int(bounds[4*me+1])
		if err := rd.parse(shape, h, g0, g1, from, to, line, cols, data); err != nil {
			return nil, err
		}
	}
	if _, err := rs[2].Barrier(ctx).Get(ctx); err != nil {
		return nil, e.wrap("ReadCSV", err)
	}
	return e.newArray("ReadCSV", ann, data)
}

// rowRange returns the rows of the file, [g0, g1), that block b of an
// array of the given shape takes its elements from.
func (rd *csvReader) rowRange(shape []int, b annotate.Block) (int, int) {
	if b.Empty() {
		return 0, 0
	}
	if len(shape) == 2 {
		return b[0].Start, b[0].Stop
	}
	rpp := shape[1]
	return b[0].Start*rpp + b[1].Start, (b[0].Stop-1)*rpp + b[1].Stop
}

// scan finds the lines starting in this locality's byte range: a line
// starts at offset 0 and after every '\n'.
func (rd *csvReader) scan() error {
	rd.cols = -1
	if rd.lo >= rd.hi {
		return nil
	}
	from := max(rd.lo-1, 0)
	buf := make([]byte, rd.hi+1-from)
	k, err := rd.f.ReadAt(buf, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return rd.e.wrap("ReadCSV", err)
	}
	buf = buf[:k]
	base := from // file offset of buf[0]
	start := rd.lo
	if rd.lo > 0 && buf[0] != '\n' {
		i := bytes.IndexByte(buf[1:], '\n')
		if i < 0 {
			return nil // no line starts in the range
		}
		start = rd.lo + int64(i) + 1
	}
	for p := start; p < rd.hi; {
		i := p - base
		blank := i >= int64(len(buf)) || buf[i] == '\n' || (buf[i] == '\r' && i+1 < int64(len(buf)) && buf[i+1] == '\n')
		skip := rd.opts.Header && p == 0
		if !blank && !skip {
			rd.rowStarts = append(rd.rowStarts, p)
			rd.rowLines = append(rd.rowLines, rd.lines)
		}
		rd.lines++
		j := bytes.IndexByte(buf[i:], '\n')
		if j < 0 {
			break
		}
		p += int64(j) + 1
	}
	if len(rd.rowStarts) > 0 {
		c, err := rd.countColumns(rd.rowStarts[0])
		if err != nil {
			return err
		}
		rd.cols = c
	}
	return nil
}

// countColumns returns the number of fields of the line at offset off.
func (rd *csvReader) countColumns(off int64) (int, error) {
	c := 1
	buf := make([]byte, 4096)
	for {
		k, err := rd.f.ReadAt(buf, off)
		chunk := buf[:k]
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			return c + bytes.Count(chunk[:i], []byte{','}), nil
		}
		c += bytes.Count(chunk, []byte{','})
		off += int64(k)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return c, nil
			}
			return 0, rd.e.wrap("ReadCSV", err)
		}
	}
}

// parse reads bytes [from, to) of the file, which hold the data rows g0 to
// g1-1 (and maybe blank lines), the first on line number line (from 0),
// and stores the elements of block h into dst, h's row-major data.
func (rd *csvReader) parse(shape []int, h annotate.Block, g0, g1 int, from, to int64, line, cols int, dst []float64) error {
	if to < from {
		return rd.errorf("bad byte range [%d, %d) for rows [%d, %d)", from, to, g0, g1)
	}
	buf := make([]byte, to-from)
	if _, err := rd.f.ReadAt(buf, from); err != nil && !(errors.Is(err, io.EOF) && to == rd.size) {
		return rd.e.wrap("ReadCSV", err)
	}
	text := string(buf)
	// The block's pages, rows and columns, as global spans of the file's
	// row numbering.
	var rowSpan, colSpan annotate.Span
	rpp := 0
	if len(shape) == 2 {
		rowSpan, colSpan = h[0], h[1]
	} else {
		rpp = shape[1]
		rowSpan, colSpan = h[1], h[2]
	}
	k := 0 // next element of dst
	g := g0
	for len(text) > 0 {
		var ln string
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			ln, text = text[:i], text[i+1:]
		} else {
			ln, text = text, ""
		}
		ln = strings.TrimSuffix(ln, "\r")
		line++
		if ln == "" {
			continue
		}
		if g >= g1 {
			return rd.errorf("line %d: row %d beyond the rows [%d, %d) of this tile", line, g, g0, g1)
		}
		keep := true
		if rpp > 0 {
			r := g % rpp
			keep = r >= rowSpan.Start && r < rowSpan.Stop
		}
		c := 0
		for field := range strings.SplitSeq(ln, ",") {
			if c >= cols {
				return rd.errorf("line %d, column %d: a row of %d columns, want %d as the first row", line, c+1, strings.Count(ln, ",")+1, cols)
			}
			if keep && c >= colSpan.Start && c < colSpan.Stop {
				v, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
				if err != nil {
					return rd.errorf("line %d, column %d: %q is not a number", line, c+1, field)
				}
				dst[k] = v
				k++
			} else if _, err := strconv.ParseFloat(strings.TrimSpace(field), 64); err != nil {
				return rd.errorf("line %d, column %d: %q is not a number", line, c+1, field)
			}
			c++
		}
		if c != cols {
			return rd.errorf("line %d, column %d: a row of %d columns, want %d as the first row", line, c+1, c, cols)
		}
		g++
	}
	if g != g1 || k != len(dst) {
		return rd.errorf("read %d rows (%d elements) for rows [%d, %d) (%d elements): did the file change while it was read?", g-g0, k, g0, g1, len(dst))
	}
	return nil
}
