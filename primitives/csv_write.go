package primitives

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// CSVWriteOptions says how WriteCSV prints an array.
type CSVWriteOptions struct {
	// Header, if not empty, is written as the first line (without its
	// newline).
	Header string
	// Precision is the number of significant digits; 0 prints the
	// shortest text that reads back as the same float64.
	Precision int
}

// WriteCSV writes a to one CSV file: one line per row, numbers separated
// by commas (a vector: one number per line; a 3-D array: its pages' rows
// one after the other, as ReadCSV with RowsPerPage reads them), rows in
// order. Each locality prints an equal share of the rows — its own tile's
// rows when a is tiled so, else fetched — and writes them at their byte
// offset: one all-gather of the localities' byte counts (locality 0
// creates the file before it takes part) and a last barrier, both reserved
// when called.
func WriteCSV(ctx context.Context, e *Env, a *runtime.Future[*Array], file string, opts CSVWriteOptions) *runtime.Future[struct{}] {
	const op = "WriteCSV"
	r2, err := e.reserve(op)
	if err != nil {
		return runtime.MakeFailed[struct{}](err)
	}
	return collective(ctx, e, op, func(ctx context.Context, r1 *runtime.Reservation) (_ struct{}, err error) {
		defer func() {
			if err != nil {
				r2.Cancel(err)
			}
		}()
		x, err := a.Get(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if err := x.pin(e, op); err != nil {
			return struct{}{}, err
		}
		defer x.unpin()
		fail := func(format string, args ...any) error {
			return e.errorf(op, "array %s to %s: %s", x.ann.FullName(), file, fmt.Sprintf(format, args...))
		}
		shape := x.ann.Tiling.Shape
		kind := annotate.Row
		if len(shape) == 3 {
			kind = annotate.Page
		}
		share := annotate.WholeBlock(shape)
		if shape[0] >= e.Size() {
			t, err := annotate.New(kind, shape, e.Size())
			if err != nil {
				return struct{}{}, fail("%v", err)
			}
			share = t.Tiles[e.Locality()].Owned
		} else if e.Locality() != 0 {
			share[0] = annotate.Span{} // fewer rows than localities: locality 0 prints them
		}
		var vals []float64
		if held := x.ann.Local().Halo; held.Contains(share) || share.Empty() {
			vals = make([]float64, share.Size())
			if !share.Empty() {
				copyBlock(vals, share, x.data, held, share)
			}
		} else if vals, err = x.Fetch(ctx, share).Get(ctx); err != nil {
			return struct{}{}, e.wrap(op, err)
		}
		text := formatCSV(vals, shape, share, opts.Precision)
		if e.Locality() == 0 {
			if opts.Header != "" {
				text = append([]byte(opts.Header+"\n"), text...)
			}
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return struct{}{}, fail("%v", err)
			}
			if err := os.WriteFile(file, nil, 0o644); err != nil {
				return struct{}{}, fail("%v", err)
			}
		}
		sizes, err := r1.AllGather(ctx, []float64{float64(len(text))}).Get(ctx)
		if err != nil {
			return struct{}{}, e.wrap(op, err)
		}
		off := int64(0)
		for _, s := range sizes[:e.Locality()] {
			off += int64(s)
		}
		if len(text) > 0 {
			f, err := os.OpenFile(file, os.O_WRONLY, 0)
			if err != nil {
				return struct{}{}, fail("%v", err)
			}
			_, err = f.WriteAt(text, off)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return struct{}{}, fail("%v", err)
			}
		}
		if _, err := r2.Barrier(ctx).Get(ctx); err != nil {
			return struct{}{}, e.wrap(op, err)
		}
		return struct{}{}, nil
	})
}

// formatCSV prints the rows of block b (its elements vals, row-major).
func formatCSV(vals []float64, shape []int, b annotate.Block, precision int) []byte {
	cols := 1
	if len(shape) > 1 {
		cols = b[len(b)-1].Len()
	}
	prec := -1
	if precision > 0 {
		prec = precision
	}
	out := make([]byte, 0, 20*len(vals))
	for i, v := range vals {
		if i%cols != 0 {
			out = append(out, ',')
		}
		out = strconv.AppendFloat(out, v, 'g', prec, 64)
		if i%cols == cols-1 {
			out = append(out, '\n')
		}
	}
	return out
}
