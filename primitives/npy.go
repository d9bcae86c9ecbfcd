package primitives

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/internal/npy"
	"github.com/tessera-amt/tessera/runtime"
)

// NPYOptions says how ReadNPY lays out the array it reads and how WriteNPY
// stores one.
type NPYOptions struct {
	// Layout names and tiles the array ReadNPY reads; an empty Name gives
	// "<base>_npy_<k>".
	Layout Layout
	// Dtype is what WriteNPY writes: "<f8" (the default) or "<i8".
	Dtype string
}

// npyBatch bounds the bytes read or written at once.
const npyBatch = 8 << 20

// ReadNPY reads a .npy file (C order, "<f8" or "<i8", 1 to 3 dimensions)
// that every locality can open into an array laid out by opts.Layout. Each
// locality reads the header and only the outermost-dimension rows its tile
// holds (for a row tiling, exactly its own rows). One barrier, reserved
// when called, makes a bad file — Fortran order, big-endian or another
// dtype, a size that does not match the header — fail the future on every
// locality, naming the file, the locality and what was expected.
func ReadNPY(ctx context.Context, e *Env, file string, opts NPYOptions) *runtime.Future[*Array] {
	const op = "ReadNPY"
	l := opts.Layout
	if l.Name == "" {
		l.Name = e.newName(csvBase(file) + "_npy")
	}
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (*Array, error) {
		x, err := readNPY(e, file, l)
		if err != nil {
			return nil, err
		}
		if _, err := r.Barrier(ctx).Get(ctx); err != nil {
			return nil, e.wrap(op, err)
		}
		return x, nil
	})
}

// readNPY reads this locality's tile.
func readNPY(e *Env, file string, l Layout) (*Array, error) {
	const op = "ReadNPY"
	fail := func(format string, args ...any) error {
		return e.errorf(op, "npy file %s: %s", file, fmt.Sprintf(format, args...))
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	defer f.Close()
	h, err := npy.ReadHeader(file, f)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, e.wrap(op, err)
	}
	whole := annotate.WholeBlock(h.Shape)
	if want := h.DataOffset + int64(8*whole.Size()); st.Size() != want {
		return nil, fail("%d bytes: want %d (a %d-byte header and %v elements of %s)", st.Size(), want, h.DataOffset, h.Shape, h.Descr)
	}
	ann, err := e.annotation(op, h.Shape, l)
	if err != nil {
		return nil, err
	}
	held := ann.Local().Halo
	data := e.tileToSet(held.Size())         // every row of the tile is read below
	row := whole.Size() / max(h.Shape[0], 1) // elements per outermost index
	per := max(1, npyBatch/(8*max(row, 1)))
	buf := make([]byte, 8*row*min(per, held[0].Len()))
	vals := make([]float64, row*min(per, held[0].Len()))
	for g := held[0].Start; g < held[0].Stop; g += per {
		g1 := min(g+per, held[0].Stop)
		n := (g1 - g) * row
		if _, err := f.ReadAt(buf[:8*n], h.DataOffset+int64(8*g*row)); err != nil && err != io.EOF {
			return nil, fail("rows [%d, %d): %v", g, g1, err)
		}
		npy.Decode(h.Descr, buf[:8*n], vals[:n])
		src := whole.Clone()
		src[0] = annotate.Span{Start: g, Stop: g1}
		sub, _ := src.Intersect(held)
		copyBlock(data, held, vals[:n], src, sub)
	}
	return e.newArray(op, ann, data)
}

// WriteNPY stores a as one .npy file (C order, opts.Dtype). Locality 0
// writes the header and sizes the file; after one barrier every locality
// writes the elements of its own tile at their offsets, in parallel; a
// second barrier ends the write everywhere (both reserved when called).
func WriteNPY(ctx context.Context, e *Env, a *runtime.Future[*Array], file string, opts NPYOptions) *runtime.Future[struct{}] {
	const op = "WriteNPY"
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
			return e.errorf(op, "array %s to npy file %s: %s", x.ann.FullName(), file, fmt.Sprintf(format, args...))
		}
		dtype := opts.Dtype
		if dtype == "" {
			dtype = npy.Float64
		}
		shape := x.ann.Tiling.Shape
		hdr, err := npy.EncodeHeader(dtype, shape)
		if err != nil {
			return struct{}{}, fail("%v", err)
		}
		if e.Locality() == 0 {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return struct{}{}, fail("%v", err)
			}
			err := os.WriteFile(file, hdr, 0o644)
			if err == nil {
				err = os.Truncate(file, int64(len(hdr)+8*x.Size()))
			}
			if err != nil {
				return struct{}{}, fail("%v", err)
			}
		}
		if _, err := r1.Barrier(ctx).Get(ctx); err != nil {
			return struct{}{}, e.wrap(op, err)
		}
		if err := writeNPYTile(x, file, dtype, int64(len(hdr))); err != nil {
			return struct{}{}, fail("%v", err)
		}
		if _, err := r2.Barrier(ctx).Get(ctx); err != nil {
			return struct{}{}, e.wrap(op, err)
		}
		return struct{}{}, nil
	})
}

// writeNPYTile writes x's owned elements into the file whose data starts
// at off: one write per run of contiguous elements (one in all for a
// tile of whole rows), in batches.
func writeNPYTile(x *Array, file, dtype string, off int64) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	shape := x.ann.Tiling.Shape
	owned, held := x.ann.Local().Owned, x.ann.Local().Halo
	// The owned block as runs of whole outermost rows when it spans the
	// inner dimensions, else as one run per innermost row.
	inner := true
	for d := 1; d < len(shape); d++ {
		inner = inner && owned[d].Len() == shape[d]
	}
	var runs []annotate.Block
	if inner || len(shape) == 1 {
		runs = []annotate.Block{owned}
	} else {
		walkRows(owned, func(b annotate.Block) { runs = append(runs, b) })
	}
	var buf []byte
	var vals []float64
	for _, run := range runs {
		if run.Empty() {
			continue
		}
		rowElems := run.Size() / run[0].Len()
		per := max(1, npyBatch/(8*rowElems))
		for g := run[0].Start; g < run[0].Stop; g += per {
			part := run.Clone()
			part[0] = annotate.Span{Start: g, Stop: min(g+per, run[0].Stop)}
			vals = append(vals[:0], make([]float64, part.Size())...)
			copyBlock(vals, part, x.data, held, part)
			if buf, err = npy.Encode(dtype, vals, buf[:0]); err != nil {
				f.Close()
				return err
			}
			if _, err := f.WriteAt(buf, off+8*int64(linearIndex(shape, part))); err != nil {
				f.Close()
				return err
			}
		}
	}
	return f.Close()
}

// walkRows calls fn with every innermost row of b (b with its outer spans
// cut to one index each).
func walkRows(b annotate.Block, fn func(annotate.Block)) {
	switch len(b) {
	case 1:
		fn(b)
	case 2:
		for r := b[0].Start; r < b[0].Stop; r++ {
			fn(annotate.Block{{Start: r, Stop: r + 1}, b[1]})
		}
	case 3:
		for p := b[0].Start; p < b[0].Stop; p++ {
			for r := b[1].Start; r < b[1].Stop; r++ {
				fn(annotate.Block{{Start: p, Stop: p + 1}, {Start: r, Stop: r + 1}, b[2]})
			}
		}
	}
}

// linearIndex is the row-major index of block b's first element.
func linearIndex(shape []int, b annotate.Block) int {
	g := 0
	for d := range shape {
		g = g*shape[d] + b[d].Start
	}
	return g
}
