package primitives

import (
	"context"
	"fmt"
	"math"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// CannonProduct returns the matrix product C = A·B of two 2-D arrays
// (cannon_product_d), computed where the tiles are: no locality ever holds
// a gathered matrix.
//
// On a square number of localities p = q² it runs Cannon's algorithm.
// A and B must then be tiled as a q x q grid, tile (i, j) on locality
// i*q+j — the sym tiling (Tiled(annotate.Sym)) of a matrix with at least q
// rows and q columns — and A's column spans must equal B's row spans; an
// input tiled otherwise is an error naming it and the grid wanted (retile
// it first). After an initial skew (locality (i, j) gets A(i, i+j mod q)
// and B(i+j mod q, j)) come q steps, each a local Dgemm into C's tile
// while A's tiles shift one locality left and B's one up. The shifts are
// point-to-point messages over a runtime.Channel of the call, each tile
// one raw chunk, and the next step's tiles are sent before the current
// multiply (double buffering; on a locality of one lane the sending tasks
// run once the multiply has given the lane back). A row's tiles of A come
// back to their owners at one step (row i at step q-i, row 0 at the
// skew), a column's tiles of B likewise: that shift moves nothing and
// each locality takes its own tile again (on 2 x 2 localities 8 tiles
// travel instead of 12).
//
// On any other number of localities it runs SUMMA on the grid r x c (r*c
// = p) that A and B share: row tiling (p x 1), column tiling (1 x p) or
// any sym grid, the same for both. For every panel of the inner dimension
// (the spans cut by A's column and B's row boundaries together) the owner
// of A's panel broadcasts it along its grid row and the owner of B's panel
// along its grid column, through communicators of the call over those
// sites; the next panel's broadcasts run during the current multiply.
//
// C's tile (i, j) holds A's rows of grid row i and B's columns of grid
// column j, on locality i*c+j; C is a result derived from A and B (named
// after A with a "~<k>" suffix, generation one more than the inputs'). Per locality the memory is its own tiles of A, B and C
// plus at most two tiles (Cannon) or panels (SUMMA) of each operand in
// flight, the current one and the next; the buffers that hold those are
// counted in Env.Counters' array memory while they live.
//
// Local products use gonum's blas64.Gemm: pure Go, or OpenBLAS in a build
// with -tags openblas (Register). Validation happens on every locality from
// the annotations alone; then one collective on the Env's communicator,
// reserved when the primitive is called, lets every locality start only
// when all have valid inputs, so a failed or bad input fails the result
// everywhere instead of leaving a locality waiting for tiles.
func CannonProduct(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array] {
	const op = "CannonProduct"
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
		p, err := e.productPlan(op, x, y)
		if err != nil {
			return nil, err
		}
		// Every locality validated the same annotations; this barrier,
		// in the reserved generation, fails on all of them when one
		// cancelled instead (a failed input of its own).
		if _, err := r.Barrier(ctx).Get(ctx); err != nil {
			return nil, e.wrap(op, err)
		}
		ann, err := p.annotation(derivedAnnotation(k, x, y))
		if err != nil {
			return nil, e.wrap(op, err)
		}
		// C's tile is counted while it is computed; newArray counts it
		// from then on.
		data := e.tile(ann.Local().Owned.Size())
		e.track(int64(8 * len(data)))
		base := fmt.Sprintf("%s/cannonproduct~%d", CommunicatorName, k)
		if p.square {
			err = e.cannon(ctx, op, base, p, data)
		} else {
			err = e.summa(ctx, op, base, p, data)
		}
		e.track(-int64(8 * len(data)))
		if err != nil {
			return nil, err
		}
		return e.newArray(op, ann, data)
	})
}

// grid is a 2-D tiling seen as an r x c grid of blocks, tile k at grid
// position (k/c, k%c): rows[i] are the rows of grid row i, cols[j] the
// columns of grid column j.
type grid struct {
	rows, cols []annotate.Span
}

func (g grid) r() int { return len(g.rows) }
func (g grid) c() int { return len(g.cols) }

func (g grid) String() string { return fmt.Sprintf("%dx%d", g.r(), g.c()) }

// gridOf returns the grid of a 2-D tiling's owned blocks, or false when
// the tiles do not form one (numbered row-major).
func gridOf(t annotate.Tiling) (grid, bool) {
	n := len(t.Tiles)
	if len(t.Shape) != 2 || n == 0 {
		return grid{}, false
	}
	first := t.Tiles[0].Owned
	c := 1
	for c < n && t.Tiles[c].Owned[0] == first[0] {
		c++
	}
	if n%c != 0 {
		return grid{}, false
	}
	g := grid{rows: make([]annotate.Span, n/c), cols: make([]annotate.Span, c)}
	for j := range c {
		g.cols[j] = t.Tiles[j].Owned[1]
	}
	for i := range n / c {
		g.rows[i] = t.Tiles[i*c].Owned[0]
	}
	if !contiguous(g.rows, t.Shape[0]) || !contiguous(g.cols, t.Shape[1]) {
		return grid{}, false
	}
	for k, tile := range t.Tiles {
		if tile.Owned[0] != g.rows[k/c] || tile.Owned[1] != g.cols[k%c] {
			return grid{}, false
		}
	}
	return g, true
}

// contiguous reports whether spans cut [0, n) in order, none empty.
func contiguous(spans []annotate.Span, n int) bool {
	at := 0
	for _, s := range spans {
		if s.Start != at || s.Stop <= s.Start {
			return false
		}
		at = s.Stop
	}
	return at == n
}

// productPlan is a checked product: C (m x n) = A (m x k) · B (k x n) on
// the r x c grid a and b share.
type productPlan struct {
	x, y   *Array
	ga, gb grid
	square bool // Cannon: r == c
}

// productPlan checks the operands of a product and picks the algorithm.
func (e *Env) productPlan(op string, x, y *Array) (productPlan, error) {
	for _, z := range []*Array{x, y} {
		if z.NDim() != 2 || z.Size() == 0 {
			return productPlan{}, e.errorf(op, "array %s of shape %v: want a non-empty 2-D matrix", z.Name(), z.ann.Tiling.Shape)
		}
	}
	sx, sy := x.ann.Tiling.Shape, y.ann.Tiling.Shape
	if sx[1] != sy[0] {
		return productPlan{}, e.errorf(op, "arrays %s of shape %v and %s of shape %v are not conformable: %d columns against %d rows",
			x.Name(), sx, y.Name(), sy, sx[1], sy[0])
	}
	p := e.Size()
	q := int(math.Round(math.Sqrt(float64(p))))
	square := q*q == p
	gs := make([]grid, 2)
	for i, z := range []*Array{x, y} {
		g, ok := gridOf(z.ann.Tiling)
		switch {
		case square && (!ok || g.r() != q || g.c() != q):
			got := "tiles that form no grid"
			if ok {
				got = "a " + g.String() + " grid"
			}
			return productPlan{}, e.errorf(op, "array %s of shape %v is tiled as %s: Cannon on %d localities wants a %dx%d grid, tile (i, j) on locality i*%d+j (Tiled(annotate.Sym) cuts it for a square matrix of at least %d rows, Layout.Tiling for any other); retile it first",
				z.Name(), z.ann.Tiling.Shape, got, p, q, q, q, q)
		case !ok:
			return productPlan{}, e.errorf(op, "array %s of shape %v: its tiles form no grid (tile k at row k/c, column k%%c of an r x c grid); SUMMA on %d localities wants a row, column or sym tiling",
				z.Name(), z.ann.Tiling.Shape, p)
		}
		gs[i] = g
	}
	ga, gb := gs[0], gs[1]
	if !square && (ga.r() != gb.r() || ga.c() != gb.c()) {
		return productPlan{}, e.errorf(op, "arrays %s (a %s grid) and %s (a %s grid): SUMMA wants both tiled on the same grid of %d localities",
			x.Name(), ga, y.Name(), gb, p)
	}
	if square {
		for k := range q {
			if ga.cols[k] != gb.rows[k] {
				// The first locality holding a tile of the mismatched span.
				return productPlan{}, e.errorf(op, "arrays %s and %s do not conform for Cannon: tile (0, %d) of %s on locality %d holds columns %v, but tile (%d, 0) of %s on locality %d holds rows %v; want %s's column spans equal to %s's row spans",
					x.Name(), y.Name(), k, x.Name(), k, ga.cols[k], k, y.Name(), k*q, gb.rows[k], x.Name(), y.Name())
			}
		}
	}
	return productPlan{x: x, y: y, ga: ga, gb: gb, square: square}, nil
}

// annotation returns the product's annotation: ann (named as a result
// derived from A and B) with A's grid rows by B's grid columns as tiling.
func (p productPlan) annotation(ann annotate.Annotation) (annotate.Annotation, error) {
	c := p.ga.c()
	blocks := make([]annotate.Block, p.ga.r()*c)
	for k := range blocks {
		blocks[k] = annotate.Block{p.ga.rows[k/c], p.gb.cols[k%c]}
	}
	t, err := annotate.NewUser([]int{p.x.ann.Tiling.Shape[0], p.y.ann.Tiling.Shape[1]}, blocks)
	if err != nil {
		return annotate.Annotation{}, err
	}
	ann.Tiling = t
	return ann, ann.Validate()
}

// general is a row-major rows x cols matrix over data with the given row
// stride, as BLAS takes it.
func general(rows, cols, stride int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: data}
}

// gemm sets c to a·b for the first product into a fresh tile (first) and
// adds a·b to c afterwards. Setting rather than adding the first writes
// the fresh memory without reading it first: reading first would map each
// new page to the shared zero page and fault again on the write.
func gemm(a, b, c blas64.General, first bool) {
	beta := 1.0
	if first {
		beta = 0
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, beta, c)
}

// inFlight is a buffer of a tile or panel received or packed by a product,
// counted in the Env's array memory until released; memory the product
// took from the runtime or received is owned by mem, which Env.recycle
// releases.
type inFlight struct {
	e    *Env
	data []float64
	mem  *runtime.Tile // data's owner; nil: an array's tile or a copy of it
	own  bool          // counted: the product allocated or received it
}

func (e *Env) counted(data []float64) inFlight {
	e.track(int64(8 * len(data)))
	return inFlight{e: e, data: data, own: true}
}

// countedTile is counted for memory the product owns as mem.
func (e *Env) countedTile(mem *runtime.Tile) inFlight {
	f := e.counted(mem.Float64s())
	f.mem = mem
	return f
}

func borrowed(data []float64) inFlight { return inFlight{data: data} }

func (f *inFlight) release() {
	if f.own {
		f.e.track(-int64(8 * len(f.data)))
	}
	*f = inFlight{}
}

// ownedTile returns the owned elements of x's tile: the tile itself, or a
// counted copy when the tiling has an overlap.
func (e *Env) ownedTile(x *Array) inFlight {
	t := x.ann.Local()
	if t.Owned.Equal(t.Halo) {
		return borrowed(x.data)
	}
	return e.counted(x.ownedData())
}
