package primitives

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Broadcasting follows NumPy's rules: shapes are aligned at their last
// dimension, and two dimensions agree when they are equal or one of them
// is 1 (a missing leading dimension counts as 1); the result has the
// larger extent in every dimension. A 0-d array (Scalar) broadcasts
// against anything.
//
// The result is tiled like the first operand that has the result's shape;
// when none has it ((n, 1) with (1, m)), like the operand with the most
// elements, stretched along its dimensions of length 1 (every tile then
// holds them whole). Each locality computes the block of the result its
// tile holds, and reads from every other operand the block that the
// result's block broadcasts from: its own memory when its tile holds that
// block, the missing pieces fetched from their owners otherwise (each
// piece once, as one raw chunk: Env.Counters' BytesFetched counts them).
// So an operand tiled like the result moves nothing, a vector broadcast
// against the rows of a matrix moves the parts of the vector a locality
// does not hold, and operands of different tilings are aligned by moving
// the blocks of the one that is not the result's model once. No collective
// is used.

// Scalar returns a 0-d array holding v (numpy's np.float64(v) as an
// operand): every locality holds the one element, so it broadcasts
// against any array without communication. Its tiling has the empty shape
// and one tile per locality holding the element; it is meant as an operand
// of the broadcasting primitives (element-wise operations, Where, Clip,
// SetBlock) and is what the axis reductions give for every axis without
// keepdims. The whole-array reductions (Sum, Mean, ...) take arrays of 1
// to 3 dimensions.
func Scalar(ctx context.Context, e *Env, v float64) *runtime.Future[*Array] {
	ann := annotate.Annotation{Name: e.newName("scalar"), Locality: e.Locality(), Tiling: scalarTiling(e.Size())}
	data := e.tileToSet(1)
	data[0] = v
	a, err := e.newArray("Scalar", ann, data)
	if err != nil {
		return runtime.MakeFailed[*Array](err)
	}
	return runtime.MakeReady(a)
}

// scalarTiling is the tiling of a 0-d array on p localities: each holds
// the one element.
func scalarTiling(p int) annotate.Tiling {
	t := annotate.Tiling{Shape: []int{}, Tiles: make([]annotate.Tile, p)}
	for i := range t.Tiles {
		t.Tiles[i] = annotate.Tile{Owned: annotate.Block{}, Halo: annotate.Block{}}
	}
	return t
}

// numpyShape prints a shape as NumPy does: (7,5), (3,), ().
func numpyShape(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	if len(s) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// broadcastShapes returns the shape NumPy broadcasts shapes to, and
// whether they broadcast.
func broadcastShapes(shapes ...[]int) ([]int, bool) {
	n := 0
	for _, s := range shapes {
		n = max(n, len(s))
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := n - len(s)
		for d, v := range s {
			switch o := out[off+d]; {
			case v == o || v == 1:
			case o == 1:
				out[off+d] = v
			default:
				return nil, false
			}
		}
	}
	return out, true
}

// broadcastError names the arrays, their shapes and NumPy's message.
func broadcastError(e *Env, op string, xs ...*Array) error {
	names := make([]string, len(xs))
	shapes := make([]string, len(xs))
	for i, x := range xs {
		names[i] = x.Name() + " of shape " + shapeString(x.ann.Tiling.Shape)
		shapes[i] = numpyShape(x.ann.Tiling.Shape)
	}
	return e.errorf(op, "arrays %s are not conformable: operands could not be broadcast together with shapes %s",
		strings.Join(names, " and "), strings.Join(shapes, " "))
}

// shapeString prints a shape as Go does ([7 5]).
func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// stretchTiling is x's tiling stretched to the broadcast shape out: the
// leading dimensions x lacks and its dimensions of length 1 are whole in
// every tile. ok is false when that is no valid tiling (a 0-d x on more
// than one locality).
func stretchTiling(x *Array, out []int) (annotate.Tiling, bool) {
	xs := x.ann.Tiling.Shape
	off := len(out) - len(xs)
	t := annotate.Tiling{Shape: slices.Clone(out), Tiles: make([]annotate.Tile, len(x.ann.Tiling.Tiles))}
	stretch := func(b annotate.Block) annotate.Block {
		s := annotate.WholeBlock(out)
		for d := range xs {
			if xs[d] != 1 || out[off+d] == 1 {
				s[off+d] = b[d]
			}
		}
		return s
	}
	for i, tl := range x.ann.Tiling.Tiles {
		t.Tiles[i] = annotate.Tile{Owned: stretch(tl.Owned), Halo: stretch(tl.Halo)}
	}
	if len(out) == 0 {
		return t, len(t.Tiles) == 1 || len(xs) == 0
	}
	return t, t.Validate() == nil
}

// broadcastTiling chooses the result's tiling (see the comment at the top
// of the file).
func broadcastTiling(xs []*Array, out []int) (annotate.Tiling, bool) {
	if len(out) == 0 {
		return scalarTiling(len(xs[0].ann.Tiling.Tiles)), true
	}
	for _, x := range xs {
		if slices.Equal(x.ann.Tiling.Shape, out) {
			return x.ann.Tiling.Clone(), true
		}
	}
	best := xs[0]
	for _, x := range xs[1:] {
		if x.Size() > best.Size() {
			best = x
		}
	}
	return stretchTiling(best, out)
}

// aligned is an operand's elements over the block a result block
// broadcasts from, with the strides (padded to 3-D, 0 along broadcast
// dimensions) of the result block's local coordinates into data.
type aligned struct {
	data []float64
	st   [3]int
	mem  *runtime.Tile // to release when done; nil: x's own memory
}

// align reads the elements of x that the block h of the broadcast shape
// out needs (see the top of the file).
func (e *Env) align(ctx context.Context, op string, x *Array, out []int, h annotate.Block) (aligned, error) {
	xs := x.ann.Tiling.Shape
	off := len(out) - len(xs)
	xb := make(annotate.Block, len(xs))
	var st [3]int
	s := 1
	for d := len(xs) - 1; d >= 0; d-- {
		if xs[d] == 1 {
			xb[d] = annotate.Span{Start: 0, Stop: 1}
		} else {
			xb[d] = h[off+d]
			st[3-len(xs)+d] = s
		}
		s *= xb[d].Len()
	}
	data, mem, err := e.blockOf(ctx, op, x, xb)
	if err != nil {
		return aligned{}, err
	}
	return aligned{data: data, st: st, mem: mem}, nil
}

// broadcast computes the element-wise fn of the operands xs broadcast
// together, over the held block of this locality's tile of the result.
// fn gets the result's tile, its extents padded to 3-D and the aligned
// operands.
func (e *Env) broadcast(ctx context.Context, op string, k uint64, xs []*Array, fn func(out []float64, n [3]int, ops []aligned)) (*Array, error) {
	shapes := make([][]int, len(xs))
	for i, x := range xs {
		shapes[i] = x.ann.Tiling.Shape
	}
	out, ok := broadcastShapes(shapes...)
	if !ok {
		return nil, broadcastError(e, op, xs...)
	}
	t, ok := broadcastTiling(xs, out)
	if !ok {
		return nil, e.errorf(op, "arrays of shapes %v: no tiling of the result of shape %v on %d localities", shapes, out, e.Size())
	}
	for _, x := range xs {
		if err := e.adopt(op, x); err != nil {
			return nil, err
		}
	}
	h := t.Tiles[e.Locality()].Halo
	ops := make([]aligned, len(xs))
	defer func() {
		for _, a := range ops {
			a.mem.Release()
		}
	}()
	for i, x := range xs {
		a, err := e.align(ctx, op, x, out, h)
		if err != nil {
			return nil, err
		}
		ops[i] = a
	}
	data := e.tileToSet(h.Size())
	_, hs := pad3(out, h)
	fn(data, [3]int{hs[0].Len(), hs[1].Len(), hs[2].Len()}, ops)
	ann := derivedAnnotation(k, xs...)
	ann.Tiling = t
	return e.newArray(op, ann, data)
}

// zip2 sets out[i] = fn(a[i], b[i]) over a block of extents n.
func zip2(out []float64, n [3]int, a, b aligned, fn func(x, y float64) float64) {
	zip2Rows(out, n, a, b, noArith, fn, 0, n[0]*n[1])
}

// zip2Par is zip2 with ar's written-out loop unless it is noArith, its
// rows split over this process's cores.
func zip2Par(out []float64, n [3]int, a, b aligned, ar arith, fn func(x, y float64) float64) {
	split(n[0]*n[1], max(1, parallelGrain/max(1, n[2])), func(lo, hi int) {
		zip2Rows(out, n, a, b, ar, fn, lo, hi)
	})
}

// zip2Rows is zip2 over the rows [lo, hi) of the block (a row: the
// innermost extent, at one pair of outer coordinates).
func zip2Rows(out []float64, n [3]int, a, b aligned, ar arith, fn func(x, y float64) float64, lo, hi int) {
	nc := n[2]
	for q := lo; q < hi; q++ {
		p, r := q/n[1], q%n[1]
		ao := p*a.st[0] + r*a.st[1]
		bo := p*b.st[0] + r*b.st[1]
		o := q * nc
		dst := out[o : o+nc]
		switch {
		case a.st[2] == 1 && b.st[2] == 1:
			x, y := a.data[ao:ao+nc], b.data[bo:bo+nc]
			if ar != noArith {
				ar.vv(dst, x, y)
				continue
			}
			for c := range dst {
				dst[c] = fn(x[c], y[c])
			}
		case a.st[2] == 1 && b.st[2] == 0:
			x, y := a.data[ao:ao+nc], b.data[bo]
			if ar != noArith {
				ar.vs(dst, x, y)
				continue
			}
			for c := range dst {
				dst[c] = fn(x[c], y)
			}
		case a.st[2] == 0 && b.st[2] == 1:
			x, y := a.data[ao], b.data[bo:bo+nc]
			if ar != noArith {
				ar.sv(dst, x, y)
				continue
			}
			for c := range dst {
				dst[c] = fn(x, y[c])
			}
		default:
			for c := range dst {
				dst[c] = fn(a.data[ao+c*a.st[2]], b.data[bo+c*b.st[2]])
			}
		}
	}
}

// zip3 sets out[i] = fn(a[i], b[i], c[i]) over a block of extents n.
func zip3(out []float64, n [3]int, a, b, c aligned, fn func(x, y, z float64) float64) {
	o := 0
	for p := range n[0] {
		for r := range n[1] {
			ao := p*a.st[0] + r*a.st[1]
			bo := p*b.st[0] + r*b.st[1]
			co := p*c.st[0] + r*c.st[1]
			for j := range n[2] {
				out[o] = fn(a.data[ao+j*a.st[2]], b.data[bo+j*b.st[2]], c.data[co+j*c.st[2]])
				o++
			}
		}
	}
}

// broadcast2 is broadcast of fn (ar's loop unless noArith) between x
// and y.
func (e *Env) broadcast2(ctx context.Context, op string, k uint64, x, y *Array, ar arith, fn func(x, y float64) float64) (*Array, error) {
	return e.broadcast(ctx, op, k, []*Array{x, y}, func(out []float64, n [3]int, ops []aligned) {
		zip2Par(out, n, ops[0], ops[1], ar, fn)
	})
}

// zip3Op is the primitive of a three-operand element-wise fn.
func zip3Op(ctx context.Context, e *Env, op string, a, b, c *runtime.Future[*Array], fn func(x, y, z float64) float64) *runtime.Future[*Array] {
	k := e.derive()
	return runtime.Dataflow(ctx, func(ctx context.Context, xs []*Array) (*Array, error) {
		if err := pinAll(e, op, xs...); err != nil {
			return nil, err
		}
		defer unpinAll(xs...)
		return e.broadcast(ctx, op, k, xs, func(out []float64, n [3]int, ops []aligned) {
			zip3(out, n, ops[0], ops[1], ops[2], fn)
		})
	}, a, b, c)
}

// pinAll pins every array of xs (see pin), or none.
func pinAll(e *Env, op string, xs ...*Array) error {
	for i, x := range xs {
		if err := x.pin(e, op); err != nil {
			unpinAll(xs[:i]...)
			return err
		}
	}
	return nil
}

// unpinAll unpins every array of xs.
func unpinAll(xs ...*Array) {
	for _, x := range xs {
		x.unpin()
	}
}

// Maximum returns the element-wise maximum of a and b, broadcast
// together (numpy's maximum: NaN if either is NaN).
func Maximum(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Maximum", a, b, noArith, math.Max)
}

// Minimum returns the element-wise minimum of a and b, broadcast
// together (numpy's minimum: NaN if either is NaN).
func Minimum(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Minimum", a, b, noArith, math.Min)
}

// LessEqual returns the mask a <= b, broadcast together.
func LessEqual(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "LessEqual", a, b, noArith, func(x, y float64) float64 { return boolf(x <= y) })
}

// GreaterEqual returns the mask a >= b, broadcast together.
func GreaterEqual(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "GreaterEqual", a, b, noArith, func(x, y float64) float64 { return boolf(x >= y) })
}

// Pow returns a**b element-wise, broadcast together (math.Pow).
func Pow(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zipOp(ctx, e, "Pow", a, b, noArith, math.Pow)
}

// Where returns a where mask is not 0 and b elsewhere (numpy's where(mask,
// a, b); NaN counts as true, as numpy's bool(nan)), the three broadcast
// together.
func Where(ctx context.Context, e *Env, mask, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zip3Op(ctx, e, "Where", mask, a, b, func(m, x, y float64) float64 {
		if m != 0 {
			return x
		}
		return y
	})
}

// Clip returns a limited to [lo, hi] element-wise (numpy's clip(a, lo,
// hi): minimum(maximum(a, lo), hi), so hi wins where lo > hi and NaN
// propagates), the three broadcast together; lo and hi may be 0-d
// (Scalar) or arrays.
func Clip(ctx context.Context, e *Env, a, lo, hi *runtime.Future[*Array]) *runtime.Future[*Array] {
	return zip3Op(ctx, e, "Clip", a, lo, hi, func(x, l, h float64) float64 { return math.Min(math.Max(x, l), h) })
}

// ClipScalar returns a limited to [lo, hi]: Clip with two scalars, no
// communication.
func ClipScalar(ctx context.Context, e *Env, a *runtime.Future[*Array], lo, hi float64) *runtime.Future[*Array] {
	return mapOp(ctx, e, "ClipScalar", a, func(x float64) float64 { return math.Min(math.Max(x, lo), hi) })
}
