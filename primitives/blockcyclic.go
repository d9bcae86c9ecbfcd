package primitives

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas/blas64"
)

// BlockCyclic returns the Layout of a matrix of the given shape laid out in
// ScaLAPACK's 2-D block-cyclic way: nb x nb blocks on a p x q grid of
// localities numbered in row-major order (annotate.NewBlockCyclic). The
// job must have p*q localities: another count fails the primitive given
// the layout.
//
// Each locality's tile is its local matrix, its blocks packed as ScaLAPACK
// packs them (annotate.Cyclic). Element-wise primitives between arrays of
// one layout, Retile (to and from any tiling) and the dense linear algebra
// (Cholesky, SolveTriangular, SolveSPD, LU, SolveLU, QR) understand it;
// primitives that
// address elements by global index (FromGlobal, Fetch, AllGather, Slice,
// Transpose, the products) see the local matrices as if they were one:
// retile to a row or column tiling first.
func BlockCyclic(shape []int, nb, p, q int) (Layout, error) {
	t, err := annotate.NewBlockCyclic(shape, annotate.Cyclic{RowBlock: nb, ColBlock: nb, GridRows: p, GridCols: q})
	if err != nil {
		return Layout{}, fmt.Errorf("primitives: BlockCyclic: %w", err)
	}
	return Layout{Tiling: &t}, nil
}

// fillCyclic is fillPieces for a retile from or to a block-cyclic tiling:
// every piece lies in one block of both tilings, which Storage maps to the
// source's tile and to dst's. Remote pieces are fetched (fetch_block, one
// raw chunk each) while the local ones are copied.
func (e *Env) fillCyclic(ctx context.Context, x *Array, pieces []annotate.Piece, dst annotate.Tiling, data []float64) error {
	here := e.Locality()
	h := dst.Tiles[here].Halo
	type pending struct {
		f        *runtime.Future[[]float64]
		buf      *runtime.Tile
		src, out annotate.Block
	}
	var fs []pending
	defer func() {
		for _, p := range fs {
			p.buf.Release()
		}
	}()
	stored := func(p annotate.Piece) (annotate.Block, annotate.Block, error) {
		s, ok1 := x.ann.Tiling.Storage(p.Block)
		d, ok2 := dst.Storage(p.Block)
		if !ok1 || !ok2 {
			return nil, nil, fmt.Errorf("array %s: piece %v crosses a block of the layout", x.Name(), p)
		}
		return s, d, nil
	}
	for _, p := range pieces {
		if p.To != here || p.Local() {
			continue
		}
		s, d, err := stored(p)
		if err != nil {
			return err
		}
		buf := runtime.NewTile(e.rt, s.Size(), runtime.TileOptions{Uncleared: true})
		fs = append(fs, pending{f: e.fetchTile(ctx, x, p.From, s, buf), buf: buf, src: s, out: d})
	}
	for _, p := range pieces {
		if p.To == here && p.Local() {
			s, d, err := stored(p)
			if err != nil {
				return err
			}
			copyMoved(data, h, d, x.data, x.ann.Local().Halo, s)
		}
	}
	for _, p := range fs {
		if _, err := p.f.Get(ctx); err != nil {
			return fmt.Errorf("array %s: %w", x.Name(), err)
		}
		copyMoved(data, h, p.out, p.buf.Float64s(), p.src, p.src)
	}
	return nil
}

// copyMoved copies the 2-D block sb of src (row-major over block sh) to
// block db of dst (row-major over block dh); sb and db have one shape.
func copyMoved(dst []float64, dh, db annotate.Block, src []float64, sh, sb annotate.Block) {
	dc, sc := dh[1].Len(), sh[1].Len()
	n := db[1].Len()
	for r := range db[0].Len() {
		do := (db[0].Start-dh[0].Start+r)*dc + db[1].Start - dh[1].Start
		so := (sb[0].Start-sh[0].Start+r)*sc + sb[1].Start - sh[1].Start
		copy(dst[do:do+n], src[so:so+n])
	}
}

// cyclicMatrix is this locality's part of a block-cyclic matrix: its
// local matrix (row-major, ld columns) and the layout, seen as nbr x nbc
// tiles, tile (i, j) of rows [i*nb, min(m, (i+1)*nb)).
type cyclicMatrix struct {
	c        annotate.Cyclic
	m, n     int
	nbr, nbc int // tiles per column, per row
	me       int
	ld       int
	data     []float64
}

func newCyclicMatrix(t annotate.Tiling, me int, data []float64) *cyclicMatrix {
	c := *t.Cyclic
	m, n := t.Shape[0], t.Shape[1]
	return &cyclicMatrix{c: c, m: m, n: n, me: me,
		nbr: (m + c.RowBlock - 1) / c.RowBlock, nbc: (n + c.ColBlock - 1) / c.ColBlock,
		ld: t.Tiles[me].Owned[1].Len(), data: data}
}

// owner is the locality of tile (i, j).
func (v *cyclicMatrix) owner(i, j int) int { return v.c.Owner(i, j) }

// mine reports whether tile (i, j) is this locality's.
func (v *cyclicMatrix) mine(i, j int) bool { return v.owner(i, j) == v.me }

func (v *cyclicMatrix) rows(i int) int { return min(v.c.RowBlock, v.m-i*v.c.RowBlock) }
func (v *cyclicMatrix) cols(j int) int { return min(v.c.ColBlock, v.n-j*v.c.ColBlock) }

// tile is the local tile (i, j) as a strided view of the local matrix.
func (v *cyclicMatrix) tile(i, j int) blas64.General {
	r0 := (i / v.c.GridRows) * v.c.RowBlock
	c0 := (j / v.c.GridCols) * v.c.ColBlock
	rows, cols := v.rows(i), v.cols(j)
	off := r0*v.ld + c0
	return blas64.General{Rows: rows, Cols: cols, Stride: v.ld, Data: v.data[off : off+(rows-1)*v.ld+cols]}
}

// packed returns a contiguous copy of g.
func packed(g blas64.General) []float64 {
	out := make([]float64, g.Rows*g.Cols)
	packInto(out, g)
	return out
}

// packInto copies g's elements row after row into out (g.Rows·g.Cols).
func packInto(out []float64, g blas64.General) {
	for r := range g.Rows {
		copy(out[r*g.Cols:(r+1)*g.Cols], g.Data[r*g.Stride:r*g.Stride+g.Cols])
	}
}

// checkCyclic checks that x is a 2-D block-cyclic matrix with square
// blocks, square when square is set.
func (e *Env) checkCyclic(op string, x *Array, square bool) error {
	t := x.ann.Tiling
	if len(t.Shape) != 2 || t.Cyclic == nil {
		return e.errorf(op, "array %s of shape %v: want a 2-D matrix laid out block-cyclically (BlockCyclic), retile it first", x.Name(), t.Shape)
	}
	if c := t.Cyclic; c.RowBlock != c.ColBlock {
		return e.errorf(op, "array %s: %v: want square blocks", x.Name(), *c)
	}
	if square && t.Shape[0] != t.Shape[1] {
		return e.errorf(op, "array %s of shape %v: want a square matrix", x.Name(), t.Shape)
	}
	return nil
}
