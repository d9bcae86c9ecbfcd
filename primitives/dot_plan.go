package primitives

import (
	"context"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// DotGatherLimit is the most elements (8 MiB of float64) an operand of Dot
// may have for a plan to gather it whole on every locality, unless no
// other plan is possible (an inner dimension shorter than the number of
// localities and neither output dimension splittable).
const DotGatherLimit = 1 << 20

// Dot returns the product of a and b as numpy's dot (dot_d) for vectors
// and matrices of any tiling: 1·1 (the inner product, a 0-d array held by
// every locality), 2·1 (matrix times vector), 1·2 (vector times matrix)
// and 2·2. A vector on the left is a row, on the right a column.
//
// Dot chooses among three plans the one that moves the fewest bytes,
// counted from the annotations (the same choice on every locality):
//
//   - rows: the result is tiled by rows; each locality reads its rows of a
//     (its own tile's rows when a's tiles hold whole rows: then the result
//     has a's owned and held rows, and a moves nothing; else a retile to
//     Row tiling) and all of b.
//   - columns: the mirror image, tiled by b's columns, reading all of a.
//   - inner: the inner dimension is split (as a's column tiling or b's
//     row tiling when they have one, else evenly): each locality reads its
//     span of a's columns and b's rows (a retile), multiplies them, and
//     one AllGather of the Env's communicator brings every locality the
//     partial products, which each sums in locality order. The result is
//     replicated: owned blocks cut as by Row tiling, every tile holding the
//     whole (as the reductions along a split axis), which suits the small
//     results it wins for (a Gram matrix, a vector times a matrix).
//
// Reading all of an operand is a full gather: the rows and columns plans
// are taken only when that operand has at most DotGatherLimit elements, or
// when no other plan exists. Blocks are fetched from their owners, each
// piece once, as Retile does; nothing else moves. Two large matrices are
// better multiplied by CannonProduct, which holds no gathered operand.
//
// The collective is reserved when Dot is called and left unused on every
// locality alike when the plan needs none. Shapes other than 1-D or 2-D,
// or inner dimensions that differ, fail the future naming both arrays.
func Dot(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	const op = "Dot"
	k := e.derive()
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (*Array, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return nil, err
		}
		y, err := b.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := pinBoth(e, op, x, y); err != nil {
			return nil, err
		}
		defer x.unpin()
		defer y.unpin()
		d, err := newDotForm(e, x, y)
		if err != nil {
			return nil, err
		}
		for _, z := range []*Array{x, y} {
			if err := e.adopt(op, z); err != nil {
				return nil, err
			}
		}
		plan, ok := d.choose()
		if !ok {
			return nil, e.errorf(op, "arrays %s of shape %v and %s of shape %v: no plan on %d localities (inner dimension %d, result %v)",
				x.Name(), x.ann.Tiling.Shape, y.Name(), y.ann.Tiling.Shape, e.Size(), d.k, d.shape)
		}
		return d.run(ctx, r, plan, derivedAnnotation(k, x, y))
	})
}

// DotWhole is Dot splitting the inner dimension (the inner plan) and
// returning the result as a Whole on every locality: for results with
// too few elements to be tiled over the localities (a 4 x 4 Gram matrix on
// 5 localities), which Dot refuses. One AllGather, reserved when called.
func DotWhole(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[Whole] {
	const op = "DotWhole"
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (Whole, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return Whole{}, err
		}
		y, err := b.Get(ctx)
		if err != nil {
			return Whole{}, err
		}
		if err := pinBoth(e, op, x, y); err != nil {
			return Whole{}, err
		}
		defer x.unpin()
		defer y.unpin()
		d, err := newDotForm(e, x, y)
		if err != nil {
			return Whole{}, err
		}
		for _, z := range []*Array{x, y} {
			if err := e.adopt(op, z); err != nil {
				return Whole{}, err
			}
		}
		p := d.inner()
		if p == nil {
			return Whole{}, e.errorf(op, "arrays %s of shape %v and %s of shape %v: the inner dimension %d cannot be split over %d localities",
				x.Name(), x.ann.Tiling.Shape, y.Name(), y.ann.Tiling.Shape, d.k, e.Size())
		}
		data, err := d.innerProduct(ctx, r, p)
		if err != nil {
			return Whole{}, err
		}
		return Whole{Shape: d.shape, Data: data}, nil
	})
}

// dotForm is a product a·b seen as (m x k)·(k x n): a vector on the left
// is one row, on the right one column.
type dotForm struct {
	e          *Env
	x, y       *Array
	m, k, n    int
	aVec, bVec bool
	shape      []int // the result's
}

func newDotForm(e *Env, x, y *Array) (*dotForm, error) {
	const op = "Dot"
	xs, ys := x.ann.Tiling.Shape, y.ann.Tiling.Shape
	if len(xs) < 1 || len(xs) > 2 || len(ys) < 1 || len(ys) > 2 {
		return nil, e.errorf(op, "arrays %s of shape %v and %s of shape %v: want vectors or matrices", x.Name(), xs, y.Name(), ys)
	}
	d := &dotForm{e: e, x: x, y: y, aVec: len(xs) == 1, bVec: len(ys) == 1, m: 1, n: 1}
	d.k = xs[len(xs)-1]
	if !d.aVec {
		d.m = xs[0]
		d.shape = append(d.shape, d.m)
	}
	if ys[0] != d.k {
		return nil, e.errorf(op, "arrays %s of shape %v and %s of shape %v are not conformable: %d columns against %d rows (numpy: shapes %s and %s not aligned)",
			x.Name(), xs, y.Name(), ys, d.k, ys[0], numpyShape(xs), numpyShape(ys))
	}
	if !d.bVec {
		d.n = ys[1]
		d.shape = append(d.shape, d.n)
	}
	if d.shape == nil {
		d.shape = []int{}
	}
	return d, nil
}

// aBlock is the block of a over rows and inner span s; bBlock of b over
// inner span s and columns.
func (d *dotForm) aBlock(rows, s annotate.Span) annotate.Block {
	if d.aVec {
		return annotate.Block{s}
	}
	return annotate.Block{rows, s}
}

func (d *dotForm) bBlock(s, cols annotate.Span) annotate.Block {
	if d.bVec {
		return annotate.Block{s}
	}
	return annotate.Block{s, cols}
}

// outBlock is the block of the result over rows and columns.
func (d *dotForm) outBlock(rows, cols annotate.Span) annotate.Block {
	var b annotate.Block
	if !d.aVec {
		b = append(b, rows)
	}
	if !d.bVec {
		b = append(b, cols)
	}
	return b
}

// dotPlan is a plan of Dot: for each locality, the block of a and of b it
// reads, and the result's tiling.
type dotPlan struct {
	kind   string // "rows", "columns" or "inner"
	aBlk   []annotate.Block
	bBlk   []annotate.Block
	tiling annotate.Tiling
	bytes  int // moved, over every locality
	gather bool
	whole  bool // the result has no tiling: DotWhole only
}

// fetchCost is the elements locality i fetches to read block b of x (as
// Env.blockOf does).
func fetchCost(x *Array, b annotate.Block, i int) int {
	t := x.ann.Tiling.Tiles[i]
	if t.Halo.Contains(b) {
		return 0
	}
	own := 0
	if p, ok := t.Owned.Intersect(b); ok {
		own = p.Size()
	}
	return b.Size() - own
}

func span(n int) annotate.Span { return annotate.Span{Start: 0, Stop: n} }

// evenSpans cuts n into p spans as annotate's Row tiling does.
func evenSpans(n, p int) ([]annotate.Span, bool) {
	t, err := annotate.New(annotate.Row, []int{n}, p)
	if err != nil {
		return nil, false
	}
	out := make([]annotate.Span, p)
	for i, tl := range t.Tiles {
		out[i] = tl.Owned[0]
	}
	return out, true
}

// finish sums the plan's bytes and reports whether its tiling is valid.
func (d *dotForm) finish(p *dotPlan, extra int) bool {
	for i := range p.aBlk {
		p.bytes += 8 * (fetchCost(d.x, p.aBlk[i], i) + fetchCost(d.y, p.bBlk[i], i))
	}
	p.bytes += extra
	return len(d.shape) == 0 || p.tiling.Validate() == nil
}

// rows is the plan tiled by result rows, nil when a is a vector.
func (d *dotForm) rows() *dotPlan {
	np := d.e.Size()
	if d.aVec {
		return nil
	}
	p := &dotPlan{kind: "rows", aBlk: make([]annotate.Block, np), bBlk: make([]annotate.Block, np), gather: np > 1}
	p.tiling = annotate.Tiling{Shape: d.shape, Tiles: make([]annotate.Tile, np)}
	whole := true
	for _, t := range d.x.ann.Tiling.Tiles {
		whole = whole && t.Halo[1] == span(d.k)
	}
	spans, ok := evenSpans(d.m, np)
	if !whole && !ok {
		return nil
	}
	for i := range np {
		owned, held := spans, spans
		if whole {
			t := d.x.ann.Tiling.Tiles[i]
			owned, held = []annotate.Span{t.Owned[0]}, []annotate.Span{t.Halo[0]}
			p.tiling.Tiles[i] = annotate.Tile{Owned: d.outBlock(owned[0], span(d.n)), Halo: d.outBlock(held[0], span(d.n))}
		} else {
			p.tiling.Tiles[i] = annotate.Tile{Owned: d.outBlock(spans[i], span(d.n)), Halo: d.outBlock(spans[i], span(d.n))}
			held = []annotate.Span{spans[i]}
		}
		p.aBlk[i] = d.aBlock(held[0], span(d.k))
		p.bBlk[i] = d.bBlock(span(d.k), span(d.n))
	}
	if !d.finish(p, 0) {
		return nil
	}
	p.gather = p.gather && d.y.Size() > DotGatherLimit
	return p
}

// columns is the plan tiled by result columns, nil when b is a vector.
func (d *dotForm) columns() *dotPlan {
	np := d.e.Size()
	if d.bVec {
		return nil
	}
	p := &dotPlan{kind: "columns", aBlk: make([]annotate.Block, np), bBlk: make([]annotate.Block, np)}
	p.tiling = annotate.Tiling{Shape: d.shape, Tiles: make([]annotate.Tile, np)}
	whole := true
	for _, t := range d.y.ann.Tiling.Tiles {
		whole = whole && t.Owned[0] == span(d.k)
	}
	spans, ok := evenSpans(d.n, np)
	if !whole && !ok {
		return nil
	}
	for i := range np {
		c := spans
		if whole {
			c = []annotate.Span{d.y.ann.Tiling.Tiles[i].Owned[1]}
		} else {
			c = []annotate.Span{spans[i]}
		}
		blk := d.outBlock(span(d.m), c[0])
		p.tiling.Tiles[i] = annotate.Tile{Owned: blk, Halo: blk.Clone()}
		p.aBlk[i] = d.aBlock(span(d.m), span(d.k))
		p.bBlk[i] = d.bBlock(span(d.k), c[0])
	}
	if !d.finish(p, 0) {
		return nil
	}
	p.gather = np > 1 && d.x.Size() > DotGatherLimit
	return p
}

// inner is the plan that splits the inner dimension, nil when it cannot
// be split or the result cannot be replicated.
func (d *dotForm) inner() *dotPlan {
	np := d.e.Size()
	t, ok := replicatedTiling(d.shape, np)
	if !ok {
		t = annotate.Tiling{Shape: d.shape}
	}
	// The spans: a's tiles' inner spans when they partition it, else b's,
	// else even.
	var ks []annotate.Span
	aWhole, bWhole := true, true
	for i := range np {
		at, bt := d.x.ann.Tiling.Tiles[i], d.y.ann.Tiling.Tiles[i]
		aWhole = aWhole && (d.aVec || at.Owned[0] == span(d.m))
		bWhole = bWhole && (d.bVec || bt.Owned[1] == span(d.n))
	}
	switch {
	case aWhole:
		for _, at := range d.x.ann.Tiling.Tiles {
			ks = append(ks, at.Owned[len(at.Owned)-1])
		}
	case bWhole:
		for _, bt := range d.y.ann.Tiling.Tiles {
			ks = append(ks, bt.Owned[0])
		}
	default:
		if ks, ok = evenSpans(d.k, np); !ok {
			return nil
		}
	}
	p := &dotPlan{kind: "inner", aBlk: make([]annotate.Block, np), bBlk: make([]annotate.Block, np), tiling: t}
	for i := range np {
		p.aBlk[i] = d.aBlock(span(d.m), ks[i])
		p.bBlk[i] = d.bBlock(ks[i], span(d.n))
	}
	p.whole = !d.finish(p, 8*d.m*d.n*np*(np-1))
	return p
}

// choose picks the plan moving the fewest bytes among those that gather
// no large operand, or among all when each does.
func (d *dotForm) choose() (*dotPlan, bool) {
	var best, bestAny *dotPlan
	for _, p := range []*dotPlan{d.rows(), d.columns(), d.inner()} {
		if p == nil || p.whole {
			continue
		}
		if bestAny == nil || p.bytes < bestAny.bytes {
			bestAny = p
		}
		if !p.gather && (best == nil || p.bytes < best.bytes) {
			best = p
		}
	}
	if best == nil {
		best = bestAny
	}
	return best, best != nil
}

// run carries out plan on this locality.
func (d *dotForm) run(ctx context.Context, r *runtime.Reservation, p *dotPlan, ann annotate.Annotation) (*Array, error) {
	const op = "Dot"
	e := d.e
	ann.Tiling = p.tiling
	if p.kind == "inner" {
		whole, err := d.innerProduct(ctx, r, p)
		if err != nil {
			return nil, err
		}
		data := e.tileToSet(len(whole))
		copy(data, whole)
		return e.newArray(op, ann, data)
	}
	here := e.Locality()
	ab, bb := p.aBlk[here], p.bBlk[here]
	av, amem, err := e.blockOf(ctx, op, d.x, ab)
	if err != nil {
		return nil, err
	}
	defer amem.Release()
	bv, bmem, err := e.blockOf(ctx, op, d.y, bb)
	if err != nil {
		return nil, err
	}
	defer bmem.Release()
	rows, inner := 1, ab[len(ab)-1].Len()
	if !d.aVec {
		rows = ab[0].Len()
	}
	cols := 1
	if !d.bVec {
		cols = bb[1].Len()
	}
	h := p.tiling.Tiles[here].Halo
	data := e.tile(h.Size())
	dotGemm(rows, inner, cols, av, bv, data)
	return e.newArray(op, ann, data)
}

// innerProduct multiplies this locality's blocks of the inner plan p and
// sums every locality's partial products (one AllGather through r, summed
// in locality order): the whole result.
func (d *dotForm) innerProduct(ctx context.Context, r *runtime.Reservation, p *dotPlan) ([]float64, error) {
	const op = "Dot"
	e := d.e
	here := e.Locality()
	ab, bb := p.aBlk[here], p.bBlk[here]
	av, amem, err := e.blockOf(ctx, op, d.x, ab)
	if err != nil {
		return nil, err
	}
	defer amem.Release()
	bv, bmem, err := e.blockOf(ctx, op, d.y, bb)
	if err != nil {
		return nil, err
	}
	defer bmem.Release()
	part := make([]float64, d.m*d.n)
	dotGemm(d.m, ab[len(ab)-1].Len(), d.n, av, bv, part)
	all, err := r.AllGather(ctx, part).Get(ctx)
	if err != nil {
		return nil, e.wrap(op, err)
	}
	if len(all) != len(part)*e.Size() {
		return nil, e.errorf(op, "arrays %s and %s: gathered %d partial products, want %d", d.x.Name(), d.y.Name(), len(all), len(part)*e.Size())
	}
	out := make([]float64, len(part))
	copy(out, all[:len(part)])
	for i := 1; i < e.Size(); i++ {
		for j, v := range all[i*len(part) : (i+1)*len(part)] {
			out[j] += v
		}
	}
	return out, nil
}

// dotGemm sets c (m x n) to a (m x k) times b (k x n), all row-major.
func dotGemm(m, k, n int, a, b, c []float64) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(c[:m*n])
		return
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas64.General{Rows: m, Cols: k, Data: a, Stride: k},
		blas64.General{Rows: k, Cols: n, Data: b, Stride: n}, 0,
		blas64.General{Rows: m, Cols: n, Data: c, Stride: n})
}
