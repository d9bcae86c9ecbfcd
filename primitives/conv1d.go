package primitives

import (
	"context"
	goruntime "runtime"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Padding is how Conv1D pads the time axis, as Keras names it.
type Padding string

const (
	// PadValid adds no padding: every output step sees kernel_size input steps
	// (the zero Padding).
	PadValid Padding = "valid"
	// PadSame pads with zeros so that the output has ceil(steps/stride)
	// steps, the extra zero on the right when the padding is odd.
	PadSame Padding = "same"
	// PadCausal pads (kernel_size-1)*dilation zeros on the left only: output
	// step t sees no input after t*stride.
	PadCausal Padding = "causal"
)

// Conv1DOptions are the parameters of Conv1D. The zero value is a valid
// convolution with stride 1 and dilation 1.
type Conv1DOptions struct {
	// Padding is PadValid (also ""), PadSame or PadCausal.
	Padding Padding
	// Stride is the step between output steps, in input steps; 0 means 1.
	Stride int
	// Dilation is the step between kernel taps, in input steps; 0 means 1.
	Dilation int
}

// conv1dGeom is the geometry of a convolution along the time axis.
type conv1dGeom struct {
	steps, in, out  int // input steps, input and output channels
	k, stride, dil  int
	padLeft, outLen int
}

// Conv1D returns the 1-D convolution of x with kernel (conv1d_d), as Keras'
// Conv1D computes it (a cross-correlation; the kernel is not flipped) with
// no bias:
//
//	out[b, t, o] = sum over k, c of x[b, t*stride + k*dilation - padLeft, c] * kernel[k, c, o]
//
// where x is zero outside its steps. x is 3-D (batch pages, time steps,
// input channels) or 2-D (time steps, input channels; one sequence).
// kernel is a Whole of shape (kernel size, input channels, output
// channels): not distributed, every locality holds all of it (Listing 2's
// non-distributed parameters; runtime.MakeReady of a Whole, or
// AllGather's result).
//
// A 3-D x must be tiled on its pages only (every tile holds all steps and
// channels of its pages, as page tiling gives): each locality convolves its
// own pages and nothing is communicated; the result keeps x's page spans.
// A 2-D x may be tiled in any way: the result is row-tiled over its output
// steps, and each locality first receives the input steps its output steps
// need — its neighbours' halo of (kernel size-1)*dilation steps when x is
// row-tiled — in one AllToAllV of the Env's communicator (reserved when
// Conv1D is called; the 3-D case leaves that reservation unused on every
// locality alike, so no locality waits for it).
//
// Each locality computes its tile as a matrix product: the im2col matrix
// of its output steps (rows of kernel size x input channels) times the
// kernel as a (kernel size x input channels, output channels) matrix,
// through gonum's blas64 (so the openblas build tag applies). The rows are
// shared out to one task per worker lane, and each multiplies blocks of
// 256 rows, whose im2col block stays in the cache. The result is named as
// a derived result of x (its base name with "~k", generation + 1) and has
// shape (pages, output steps, output channels) or (output steps, output
// channels).
func Conv1D(ctx context.Context, e *Env, x *runtime.Future[*Array], kernel *runtime.Future[Whole], opts Conv1DOptions) *runtime.Future[*Array] {
	const op = "Conv1D"
	k := e.derive()
	r, err := e.reserve(op)
	if err != nil {
		return runtime.MakeFailed[*Array](err)
	}
	return runtime.SpawnNamed(ctx, e.rt, "primitives.Conv1D", func(ctx context.Context) (out *Array, err error) {
		defer func() {
			if err != nil {
				r.Cancel(err) // no effect once issued
			}
		}()
		a, err := x.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := a.pin(e, op); err != nil {
			return nil, err
		}
		defer a.unpin()
		w, err := kernel.Get(ctx)
		if err != nil {
			return nil, err
		}
		g, err := conv1dGeometry(e, a, w, opts)
		if err != nil {
			return nil, err
		}
		if a.NDim() == 3 {
			return conv1dPages(ctx, e, k, a, w, g)
		}
		return conv1dSteps(ctx, e, r, k, a, w, g)
	})
}

// conv1dGeometry checks x, the kernel and the options and returns the
// convolution's geometry.
func conv1dGeometry(e *Env, x *Array, w Whole, opts Conv1DOptions) (conv1dGeom, error) {
	const op = "Conv1D"
	shape := x.ann.Tiling.Shape
	if len(shape) != 2 && len(shape) != 3 {
		return conv1dGeom{}, e.errorf(op, "array %s of shape %v: want a 2-D (steps, channels) or 3-D (pages, steps, channels) array", x.Name(), shape)
	}
	if len(w.Shape) != 3 || w.Shape[0] < 1 || w.Shape[2] < 1 {
		return conv1dGeom{}, e.errorf(op, "kernel of shape %v: want (kernel size, input channels, output channels), each at least 1", w.Shape)
	}
	if want := w.Shape[0] * w.Shape[1] * w.Shape[2]; len(w.Data) != want {
		return conv1dGeom{}, e.errorf(op, "kernel of shape %v holds %d elements, want %d", w.Shape, len(w.Data), want)
	}
	g := conv1dGeom{steps: shape[len(shape)-2], in: shape[len(shape)-1], k: w.Shape[0], out: w.Shape[2], stride: opts.Stride, dil: opts.Dilation}
	if w.Shape[1] != g.in {
		return conv1dGeom{}, e.errorf(op, "kernel of shape %v has %d input channels, array %s of shape %v has %d", w.Shape, w.Shape[1], x.Name(), shape, g.in)
	}
	if g.stride == 0 {
		g.stride = 1
	}
	if g.dil == 0 {
		g.dil = 1
	}
	if g.stride < 0 || g.dil < 0 {
		return conv1dGeom{}, e.errorf(op, "array %s: stride %d and dilation %d: want 1 or more (0 means 1)", x.Name(), opts.Stride, opts.Dilation)
	}
	span := (g.k-1)*g.dil + 1 // input steps one output step sees
	switch opts.Padding {
	case PadValid, "":
		if g.steps < span {
			return conv1dGeom{}, e.errorf(op, "array %s of %d steps is shorter than the kernel's span of %d steps (size %d, dilation %d): no valid output step", x.Name(), g.steps, span, g.k, g.dil)
		}
		g.outLen = (g.steps-span)/g.stride + 1
	case PadSame:
		g.outLen = (g.steps + g.stride - 1) / g.stride
		g.padLeft = max((g.outLen-1)*g.stride+span-g.steps, 0) / 2
	case PadCausal:
		g.outLen = (g.steps + g.stride - 1) / g.stride
		g.padLeft = span - 1
	default:
		return conv1dGeom{}, e.errorf(op, "array %s: padding %q: want %q, %q or %q", x.Name(), opts.Padding, PadValid, PadSame, PadCausal)
	}
	if g.outLen < 1 {
		return conv1dGeom{}, e.errorf(op, "array %s of shape %v has no step", x.Name(), shape)
	}
	return g, nil
}

// conv1dPages convolves the pages of this locality's tile of a page-tiled
// 3-D x; nothing is communicated.
func conv1dPages(ctx context.Context, e *Env, k uint64, x *Array, w Whole, g conv1dGeom) (*Array, error) {
	shape := x.ann.Tiling.Shape
	for i, t := range x.ann.Tiling.Tiles {
		if t.Halo[1].Len() != shape[1] || t.Halo[2].Len() != shape[2] {
			return nil, e.errorf("Conv1D", "array %s of shape %v: locality %d holds %v; a 3-D array must be tiled on pages only, every tile holding all steps and channels (page tiling; retile it)",
				x.Name(), shape, i, t.Halo)
		}
	}
	outShape := []int{shape[0], g.outLen, g.out}
	t := annotate.Tiling{Shape: outShape, Tiles: make([]annotate.Tile, len(x.ann.Tiling.Tiles))}
	for i, tile := range x.ann.Tiling.Tiles {
		t.Tiles[i] = annotate.Tile{
			Owned: annotate.Block{tile.Owned[0], {Start: 0, Stop: g.outLen}, {Start: 0, Stop: g.out}},
			Halo:  annotate.Block{tile.Halo[0], {Start: 0, Stop: g.outLen}, {Start: 0, Stop: g.out}},
		}
	}
	ann := derivedAnnotation(k, x)
	ann.Tiling = t
	h := ann.Local().Halo
	data := e.tileToSet(h.Size()) // every element: pages h[0] x all steps x all filters
	if err := conv1dLocal(ctx, e.rt, x.data, h[0].Len(), 0, g.steps, 0, g.outLen, w.Data, g, data); err != nil {
		return nil, err
	}
	return e.newArray("Conv1D", ann, data)
}

// conv1dSteps convolves a 2-D x: the result is row-tiled over the output
// steps, and each locality receives the input steps its own need through
// one AllToAllV on reservation r.
func conv1dSteps(ctx context.Context, e *Env, r *runtime.Reservation, k uint64, x *Array, w Whole, g conv1dGeom) (*Array, error) {
	const op = "Conv1D"
	outShape := []int{g.outLen, g.out}
	t, err := annotate.New(annotate.Row, outShape, e.Size())
	if err != nil {
		return nil, e.errorf(op, "array %s: the output of %d steps: %v", x.Name(), g.outLen, err)
	}
	// need returns the input block locality j needs: the steps its output
	// steps see, all channels.
	need := func(j int) annotate.Block {
		o := t.Tiles[j].Owned[0]
		lo := max(o.Start*g.stride-g.padLeft, 0)
		hi := min((o.Stop-1)*g.stride-g.padLeft+(g.k-1)*g.dil+1, g.steps)
		return annotate.Block{{Start: lo, Stop: max(lo, hi)}, {Start: 0, Stop: g.in}}
	}
	shape := x.ann.Tiling.Shape
	mine := x.ann.Local()
	blocks := make([][]float64, e.Size())
	for j := range blocks {
		if p, ok := mine.Owned.Intersect(need(j)); ok {
			buf := make([]float64, 0, p.Size())
			walk(shape, mine.Halo, p, func(local, _ int) { buf = append(buf, x.data[local]) })
			blocks[j] = buf
		}
	}
	got, err := r.AllToAllV(ctx, blocks).Get(ctx)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	nb := need(e.Locality())
	srcTile := runtime.NewTile(e.rt, nb.Size(), runtime.TileOptions{})
	src := srcTile.Float64s()
	for i, tile := range x.ann.Tiling.Tiles {
		p, ok := tile.Owned.Intersect(nb)
		if !ok {
			continue
		}
		if len(got[i]) != p.Size() {
			return nil, e.errorf(op, "array %s: locality %d sent %d elements for %v, want %d", x.Name(), i, len(got[i]), p, p.Size())
		}
		k := 0
		walk(shape, nb, p, func(local, _ int) { src[local] = got[i][k]; k++ })
	}
	ann := derivedAnnotation(k, x)
	ann.Tiling = t
	o := ann.Local().Owned[0]
	// The product sets the owned rows, the whole tile where it has no
	// halo beyond them (row tiling has none); a halo would stay zero.
	n := ann.Local().Halo.Size()
	data := e.tileToSet(n)
	if n != o.Len()*g.out {
		clear(data)
	}
	if err := conv1dLocal(ctx, e.rt, src, 1, nb[0].Start, nb[0].Len(), o.Start, o.Stop, w.Data, g, data); err != nil {
		return nil, err // parts may still read src: left to the collector
	}
	srcTile.Release()
	return e.newArray("Conv1D", ann, data)
}

// conv1dMinRows is the fewest im2col rows worth a task of their own.
const conv1dMinRows = 4096

// conv1dLocal computes output steps [t0, t1) of pages sequences held in
// src: page b's input steps [first, first+held) are the rows of src from
// b*held on, each of g.in channels. dst gets (pages, t1-t0, g.out)
// row-major, every element set (conv1dRows), whatever it held before.
// The output rows (page, step) are cut into one part per
// worker lane (GOMAXPROCS; parts of at least conv1dMinRows rows), each a
// task (conv1dRows), so a single-threaded BLAS (the openblas build) still
// uses every core of a locality.
func conv1dLocal(ctx context.Context, rt *runtime.Runtime, src []float64, pages, first, held, t0, t1 int, kernel []float64, g conv1dGeom, dst []float64) error {
	rows := pages * (t1 - t0)
	parts := min(goruntime.GOMAXPROCS(0), max(1, rows/conv1dMinRows))
	if parts <= 1 {
		conv1dRows(src, first, held, t0, t1, kernel, g, dst, 0, rows)
		return nil
	}
	fs := make([]*runtime.Future[struct{}], parts)
	for p := range parts {
		r0, r1 := rows*p/parts, rows*(p+1)/parts
		fs[p] = runtime.SpawnNamed(ctx, rt, "primitives.Conv1D.rows", func(context.Context) (struct{}, error) {
			conv1dRows(src, first, held, t0, t1, kernel, g, dst, r0, r1)
			return struct{}{}, nil
		})
	}
	for _, f := range fs {
		if _, err := f.Get(ctx); err != nil {
			return err
		}
	}
	return nil
}

// conv1dBlockRows is how many output rows one Gemm computes: the im2col
// block of 256 rows (60 KiB for Listing 2's 30 columns) stays in the
// cache between its filling and the product. Measured on Listing 2's
// convolution, one Gemm over a whole tile's im2col matrix (34 MB, written
// to memory and read back) took 3x the time of blocks of 256 rows with
// OpenBLAS and 1.15x with gonum.
const conv1dBlockRows = 256

// conv1dRows computes the output rows [r0, r1) of conv1dLocal (row r is
// output step t0 + r%(t1-t0) of page r/(t1-t0)), conv1dBlockRows at a
// time: their im2col block, in one buffer allocated once, then one Gemm
// setting their part of dst (beta 0), whatever it held: the caller need
// not clear it. OpenBLAS clears C itself for beta 0 before adding to it
// (the pass over memory the caller no longer makes), the pure build's
// AVX-512 Gemm stores without reading C.
func conv1dRows(src []float64, first, held, t0, t1 int, kernel []float64, g conv1dGeom, dst []float64, r0, r1 int) {
	n := t1 - t0
	if r1 <= r0 {
		return
	}
	kc := g.k * g.in
	cols := make([]float64, min(conv1dBlockRows, r1-r0)*kc)
	w := blas64.General{Rows: kc, Cols: g.out, Stride: g.out, Data: slices.Clip(kernel)}
	for b0 := r0; b0 < r1; b0 += conv1dBlockRows {
		b1 := min(b0+conv1dBlockRows, r1)
		for r := b0; r < b1; r++ {
			b, t := r/n, t0+r%n
			page := src[b*held*g.in : (b+1)*held*g.in]
			row := cols[(r-b0)*kc : (r-b0+1)*kc]
			s := t*g.stride - g.padLeft - first
			if g.dil == 1 && s >= 0 && s+g.k <= held { // one run of the page
				copy(row, page[s*g.in:(s+g.k)*g.in])
				continue
			}
			clear(row) // the taps that fall outside the page (padding) stay zero
			for k := range g.k {
				if s >= 0 && s < held {
					copy(row[k*g.in:(k+1)*g.in], page[s*g.in:(s+1)*g.in])
				}
				s += g.dil
			}
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas64.General{Rows: b1 - b0, Cols: kc, Stride: kc, Data: cols[:(b1-b0)*kc]},
			w, 0, blas64.General{Rows: b1 - b0, Cols: g.out, Stride: g.out, Data: dst[b0*g.out : b1*g.out]})
	}
}
