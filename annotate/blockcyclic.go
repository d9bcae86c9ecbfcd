package annotate

import (
	"fmt"
	"slices"
	"strings"
)

// Cyclic describes ScaLAPACK's 2-D block-cyclic layout of a matrix: the
// matrix is cut into RowBlock x ColBlock blocks (the last row and column of
// blocks may be smaller), and block (bi, bj) belongs to the locality at
// position (bi mod GridRows, bj mod GridCols) of a GridRows x GridCols
// process grid. Localities are numbered along the grid in row-major order
// (locality r*GridCols+c at (r, c)), or column-major when ColMajor
// (locality c*GridRows+r), as BLACS_GRIDINIT's "R" and "C".
//
// A locality stores its blocks as ScaLAPACK does, as one local matrix (row
// major here): its block rows in increasing order, and within them its
// block columns in increasing order. The tiles of a block-cyclic Tiling
// describe that storage: they are the blocks of the matrix with its rows
// and columns permuted so that each locality's rows (columns) are
// consecutive, grid row 0's first. Tile.Owned is therefore in storage
// coordinates; Storage maps a global block to them, Regions lists the
// global blocks a locality owns.
type Cyclic struct {
	RowBlock, ColBlock int  // block size: rows and columns of a block
	GridRows, GridCols int  // process grid: p x q
	ColMajor           bool // localities numbered down the grid's columns
}

// String prints the layout as "16x16 blocks on a 2x3 grid".
func (c Cyclic) String() string {
	s := fmt.Sprintf("%dx%d blocks on a %dx%d grid", c.RowBlock, c.ColBlock, c.GridRows, c.GridCols)
	if c.ColMajor {
		s += " (column-major)"
	}
	return s
}

// Position returns the grid row and column of locality l.
func (c Cyclic) Position(l int) (r, col int) {
	if c.ColMajor {
		return l % c.GridRows, l / c.GridRows
	}
	return l / c.GridCols, l % c.GridCols
}

// Locality returns the locality at grid position (r, col).
func (c Cyclic) Locality(r, col int) int {
	if c.ColMajor {
		return col*c.GridRows + r
	}
	return r*c.GridCols + col
}

// Owner returns the locality owning block (bi, bj).
func (c Cyclic) Owner(bi, bj int) int { return c.Locality(bi%c.GridRows, bj%c.GridCols) }

// LocalCount is ScaLAPACK's NUMROC: the number of the n indices cut in
// blocks of nb that process proc of nprocs holds.
func LocalCount(n, nb, proc, nprocs int) int {
	blocks := n / nb
	k := (blocks / nprocs) * nb
	switch extra := blocks % nprocs; {
	case proc < extra:
		k += nb
	case proc == extra:
		k += n % nb
	}
	return k
}

// cyclicAxis is one dimension of a block-cyclic layout: n indices in
// blocks of nb over procs processes.
type cyclicAxis struct{ n, nb, procs int }

// offset is where process proc's indices start in storage coordinates.
func (a cyclicAxis) offset(proc int) int {
	o := 0
	for r := range proc {
		o += LocalCount(a.n, a.nb, r, a.procs)
	}
	return o
}

// storage maps global index g to storage coordinates.
func (a cyclicAxis) storage(g int) int {
	b := g / a.nb
	return a.offset(b%a.procs) + (b/a.procs)*a.nb + g%a.nb
}

// blocks is the number of blocks along the axis.
func (a cyclicAxis) blocks() int { return (a.n + a.nb - 1) / a.nb }

// span is block b's global span.
func (a cyclicAxis) span(b int) Span { return Span{b * a.nb, min(a.n, (b+1)*a.nb)} }

func (c Cyclic) axes(shape []int) (rows, cols cyclicAxis) {
	return cyclicAxis{shape[0], c.RowBlock, c.GridRows}, cyclicAxis{shape[1], c.ColBlock, c.GridCols}
}

// NewBlockCyclic lays a matrix of the given shape (2-D) out block-cyclically
// as c says, on c.GridRows*c.GridCols localities. Blocks must be at least
// 1x1 and no larger than the matrix, and every grid row and column must
// hold at least one block (empty tiles are not allowed): errors name what
// was expected.
func NewBlockCyclic(shape []int, c Cyclic) (Tiling, error) {
	if err := checkShape(shape); err != nil {
		return Tiling{}, err
	}
	if len(shape) != 2 {
		return Tiling{}, fmt.Errorf("annotate: block-cyclic tiling of shape %v: want a 2-D matrix", shape)
	}
	if c.RowBlock < 1 || c.ColBlock < 1 {
		return Tiling{}, fmt.Errorf("annotate: block-cyclic tiling with %dx%d blocks: want blocks of at least 1x1", c.RowBlock, c.ColBlock)
	}
	if c.GridRows < 1 || c.GridCols < 1 {
		return Tiling{}, fmt.Errorf("annotate: block-cyclic tiling on a %dx%d grid: want at least a 1x1 grid", c.GridRows, c.GridCols)
	}
	if c.RowBlock > shape[0] || c.ColBlock > shape[1] {
		return Tiling{}, fmt.Errorf("annotate: block-cyclic tiling of a %dx%d matrix with %dx%d blocks: the block is larger than the matrix (want at most %dx%d)",
			shape[0], shape[1], c.RowBlock, c.ColBlock, shape[0], shape[1])
	}
	rows, cols := c.axes(shape)
	if rows.blocks() < c.GridRows || cols.blocks() < c.GridCols {
		return Tiling{}, fmt.Errorf("annotate: block-cyclic tiling of a %dx%d matrix in %dx%d blocks has %dx%d blocks, fewer than the %dx%d grid (empty tiles are not allowed)",
			shape[0], shape[1], c.RowBlock, c.ColBlock, rows.blocks(), cols.blocks(), c.GridRows, c.GridCols)
	}
	return Tiling{Shape: slices.Clone(shape), Tiles: cyclicTiles(shape, c), Cyclic: &c}, nil
}

// cyclicTiles returns the storage tiles of the layout (see Cyclic).
func cyclicTiles(shape []int, c Cyclic) []Tile {
	rows, cols := c.axes(shape)
	tiles := make([]Tile, c.GridRows*c.GridCols)
	for l := range tiles {
		r, col := c.Position(l)
		ro, co := rows.offset(r), cols.offset(col)
		b := Block{
			{ro, ro + LocalCount(shape[0], c.RowBlock, r, c.GridRows)},
			{co, co + LocalCount(shape[1], c.ColBlock, col, c.GridCols)},
		}
		tiles[l] = Tile{Owned: b, Halo: b.Clone()}
	}
	return tiles
}

// validateCyclic checks that a block-cyclic tiling's tiles are those of its
// layout.
func (t Tiling) validateCyclic() error {
	c := *t.Cyclic
	u, err := NewBlockCyclic(t.Shape, c)
	if err != nil {
		return err
	}
	if len(u.Tiles) != len(t.Tiles) {
		return fmt.Errorf("annotate: block-cyclic tiling (%v) of shape %v has %d tiles, want %d", c, t.Shape, len(t.Tiles), len(u.Tiles))
	}
	for i := range u.Tiles {
		if !u.Tiles[i].Owned.Equal(t.Tiles[i].Owned) || !u.Tiles[i].Halo.Equal(t.Tiles[i].Halo) {
			return fmt.Errorf("annotate: block-cyclic tiling (%v) of shape %v: tile %d is %v, want %v", c, t.Shape, i, t.Tiles[i].Halo, u.Tiles[i].Owned)
		}
	}
	return nil
}

// Regions returns the blocks of the whole array, in global indices, that
// locality l holds: its held block for a tiling that is not block-cyclic,
// its blocks of the layout (block rows outer) for a block-cyclic one.
func (t Tiling) Regions(l int) []Block {
	if t.Cyclic == nil {
		return []Block{t.Tiles[l].Halo.Clone()}
	}
	c := *t.Cyclic
	rows, cols := c.axes(t.Shape)
	r, col := c.Position(l)
	var out []Block
	for bi := r; bi < rows.blocks(); bi += c.GridRows {
		for bj := col; bj < cols.blocks(); bj += c.GridCols {
			out = append(out, Block{rows.span(bi), cols.span(bj)})
		}
	}
	return out
}

// Storage returns the block of storage coordinates (those of the tiles)
// that holds the global block b: b itself for a tiling that is not
// block-cyclic. For a block-cyclic one b must lie inside one block of the
// layout; false otherwise.
func (t Tiling) Storage(b Block) (Block, bool) {
	if t.Cyclic == nil {
		return b.Clone(), true
	}
	if len(b) != 2 || b.Empty() {
		return nil, false
	}
	rows, cols := t.Cyclic.axes(t.Shape)
	out := make(Block, 2)
	for d, a := range []cyclicAxis{rows, cols} {
		s := b[d]
		if s.Start < 0 || s.Stop > a.n || s.Start/a.nb != (s.Stop-1)/a.nb {
			return nil, false
		}
		o := a.storage(s.Start)
		out[d] = Span{o, o + s.Len()}
	}
	return out, true
}

// planCyclic is Plan when src or dst is block-cyclic: every region of a
// target tile (Regions) meets the source's regions; each piece lies in
// one region of both, so that Storage maps it on either side.
func planCyclic(src, dst Tiling) []Piece {
	var out []Piece
	for j := range dst.Tiles {
		for _, want := range dst.Regions(j) {
			if src.Cyclic == nil {
				for i, st := range src.Tiles {
					if b, ok := st.Owned.Intersect(want); ok {
						out = append(out, Piece{From: i, To: j, Block: b})
					}
				}
				continue
			}
			c := *src.Cyclic
			rows, cols := c.axes(src.Shape)
			for bi := want[0].Start / rows.nb; bi*rows.nb < want[0].Stop; bi++ {
				for bj := want[1].Start / cols.nb; bj*cols.nb < want[1].Stop; bj++ {
					if b, ok := (Block{rows.span(bi), cols.span(bj)}).Intersect(want); ok {
						out = append(out, Piece{From: c.Owner(bi, bj), To: j, Block: b})
					}
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Piece) int {
		if a.To != b.To {
			return a.To - b.To
		}
		return a.From - b.From
	})
	return out
}

// writeCyclic prints the layout entry of a block-cyclic annotation:
// ["blockcyclic", ["rows", <block>, <grid rows>], ["columns", <block>,
// <grid columns>], ["order", "row"|"column"]].
func writeCyclic(sb *strings.Builder, c Cyclic) {
	order := "row"
	if c.ColMajor {
		order = "column"
	}
	fmt.Fprintf(sb, `["blockcyclic", ["rows", %d, %d], ["columns", %d, %d], ["order", %q]]`,
		c.RowBlock, c.GridRows, c.ColBlock, c.GridCols, order)
}

// cyclicEntry reads the entry writeCyclic prints.
func cyclicEntry(e node) (Cyclic, error) {
	const want = `["blockcyclic", ["rows", <block>, <grid rows>], ["columns", <block>, <grid columns>], ["order", "row"|"column"]]`
	if len(e.list) != 4 {
		return Cyclic{}, bad(e, want)
	}
	var c Cyclic
	for k, name := range []string{"rows", "columns"} {
		s := e.list[1+k]
		if s.kind != nList || len(s.list) != 3 || s.list[0].kind != nString || s.list[0].str != name ||
			s.list[1].kind != nInt || s.list[2].kind != nInt {
			return Cyclic{}, bad(s, fmt.Sprintf(`[%q, <block>, <grid %s>]`, name, name))
		}
		if k == 0 {
			c.RowBlock, c.GridRows = s.list[1].num, s.list[2].num
		} else {
			c.ColBlock, c.GridCols = s.list[1].num, s.list[2].num
		}
	}
	o := e.list[3]
	if o.kind != nList || len(o.list) != 2 || o.list[0].kind != nString || o.list[0].str != "order" ||
		o.list[1].kind != nString || (o.list[1].str != "row" && o.list[1].str != "column") {
		return Cyclic{}, bad(o, `["order", "row"|"column"]`)
	}
	c.ColMajor = o.list[1].str == "column"
	return c, nil
}
