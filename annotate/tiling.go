package annotate

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// MaxDims is the largest dimensionality a tiling describes (pages, rows,
// columns), as in Phylanx.
const MaxDims = 3

// Kind is a tiling type: how New cuts an array into tiles.
type Kind int

// The tiling types of Phylanx's retile_d and generative primitives.
const (
	// Row splits the rows (the only axis of a 1-D vector).
	Row Kind = iota + 1
	// Column splits the columns (the only axis of a 1-D vector).
	Column
	// Page splits the pages of a 3-D array.
	Page
	// Sym cuts a near-square grid; see New for the rule.
	Sym
	// User marks explicit spans given to NewUser.
	User
	// BlockCyclic is ScaLAPACK's 2-D block-cyclic layout (NewBlockCyclic).
	BlockCyclic
)

var kindNames = [...]string{Row: "row", Column: "column", Page: "page", Sym: "sym", User: "user", BlockCyclic: "blockcyclic"}

// String returns the name Phylanx uses: "row", "column", "page", "sym",
// "user"; BlockCyclic is "blockcyclic".
func (k Kind) String() string {
	if k >= Row && k <= BlockCyclic {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// ParseKind returns the Kind named s ("row", "column", "page", "sym",
// "user" or "blockcyclic").
func ParseKind(s string) (Kind, error) {
	for k := Row; k <= BlockCyclic; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("annotate: unknown tiling type %q (want row, column, page, sym, user or blockcyclic)", s)
}

// Tile is the part of an array one locality holds.
type Tile struct {
	// Owned is the block the locality owns. The owned blocks of a
	// tiling partition the array: every element is owned exactly once.
	Owned Block
	// Halo is Owned grown by the overlap at interior edges: the block the
	// locality stores. It equals Owned when the tiling has no overlap.
	Halo Block
}

// Tiling is an array's shape and its tiles; Tiles[i] is held by locality
// i. Shape is outermost first (pages, rows, columns), as every Block.
//
// A block-cyclic tiling (Cyclic not nil) holds its tiles in storage
// coordinates; see Cyclic.
type Tiling struct {
	Shape []int
	Tiles []Tile
	// Cyclic is the layout of a block-cyclic tiling (NewBlockCyclic), nil
	// for the others.
	Cyclic *Cyclic
}

// New cuts an array of the given shape (1 to 3 dimensions, outermost first)
// into n tiles of the given kind; tile i goes to locality i.
//
// Along a split dimension of length d the first d%n tiles get one element
// more than the others. A tiling with more tiles than elements along a
// split dimension is an error naming that dimension: tiles are never
// empty (except the single tile of an array with no element).
//
// Row splits the rows and Column the columns; on a 1-D vector both split
// its only dimension. Page splits the pages and needs a 3-D array.
//
// Sym cuts a grid with f_i tiles along dimension i, where the f_i multiply
// to n and f_i <= shape[i]. Among those grids it picks the one whose
// average tile extents shape[i]/f_i are closest to equal: the smallest
// ratio of the largest extent to the smallest. On a tie it splits the
// outer dimensions more (the lexicographically largest f). So 4 tiles of
// a square matrix are 2x2, 2 tiles split the longer dimension (rows when
// square), 6 tiles of a 300x200 matrix are 3x2 and of a 200x300 matrix
// 2x3, and 4 tiles of a 1000x10 matrix are 4x1. Grid tiles are numbered
// in row-major order of the grid (the last dimension varies fastest).
//
// User is not accepted here; explicit spans go to NewUser.
func New(kind Kind, shape []int, n int) (Tiling, error) {
	if err := checkShape(shape); err != nil {
		return Tiling{}, err
	}
	if n < 1 {
		return Tiling{}, fmt.Errorf("annotate: %s tiling of %d tiles: need at least one tile", kind, n)
	}
	nd := len(shape)
	grid := make([]int, nd)
	for i := range grid {
		grid[i] = 1
	}
	switch kind {
	case Row:
		grid[max(0, nd-2)] = n
	case Column:
		grid[nd-1] = n
	case Page:
		if nd != 3 {
			return Tiling{}, fmt.Errorf("annotate: page tiling needs a 3-D array, shape %v has %d dimension(s)", shape, nd)
		}
		grid[0] = n
	case Sym:
		if n > 1 {
			g, ok := symGrid(shape, n)
			if !ok {
				return Tiling{}, fmt.Errorf("annotate: sym tiling of %d tiles does not fit shape %v: no grid of %d tiles has at most one tile per element along every dimension", n, shape, n)
			}
			grid = g
		}
	case User:
		return Tiling{}, fmt.Errorf("annotate: user tiling needs explicit spans (use NewUser)")
	case BlockCyclic:
		return Tiling{}, fmt.Errorf("annotate: block-cyclic tiling needs a block size and a grid (use NewBlockCyclic)")
	default:
		return Tiling{}, fmt.Errorf("annotate: unknown tiling type %v", kind)
	}
	splits := make([][]Span, nd)
	for i, f := range grid {
		if f > 1 && f > shape[i] {
			return Tiling{}, fmt.Errorf("annotate: %s tiling of %d tiles over %d %s: more tiles than %s (empty tiles are not allowed)",
				kind, f, shape[i], DimName(nd, i), DimName(nd, i))
		}
		splits[i] = split(shape[i], f)
	}
	t := Tiling{Shape: slices.Clone(shape), Tiles: make([]Tile, 0, n)}
	idx := make([]int, nd)
	for {
		b := make(Block, nd)
		for i := range b {
			b[i] = splits[i][idx[i]]
		}
		t.Tiles = append(t.Tiles, Tile{Owned: b, Halo: b.Clone()})
		// Advance the grid index, last dimension fastest.
		i := nd - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < grid[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			break
		}
	}
	return t, nil
}

// split cuts [0, d) into n consecutive spans; the first d%n get one extra
// element.
func split(d, n int) []Span {
	out := make([]Span, n)
	q, r := d/n, d%n
	start := 0
	for i := range out {
		l := q
		if i < r {
			l++
		}
		out[i] = Span{start, start + l}
		start += l
	}
	return out
}

// symGrid returns the grid of n tiles described at New, and false when
// none fits the shape.
func symGrid(shape []int, n int) ([]int, bool) {
	nd := len(shape)
	var best []int
	cur := make([]int, nd)
	var rec func(i, rem int)
	rec = func(i, rem int) {
		if i == nd-1 {
			if rem > shape[i] {
				return
			}
			cur[i] = rem
			if best == nil || symBetter(cur, best, shape) {
				best = slices.Clone(cur)
			}
			return
		}
		for f := 1; f <= rem && f <= shape[i]; f++ {
			if rem%f == 0 {
				cur[i] = f
				rec(i+1, rem/f)
			}
		}
	}
	rec(0, n)
	return best, best != nil
}

// symRatio returns the ratio of the largest average tile extent to the
// smallest as the fraction p/q (all shape[i] >= grid[i] >= 1).
func symRatio(grid, shape []int) (p, q uint64) {
	hi, lo := 0, 0
	for i := range grid {
		// shape[i]/grid[i] > shape[hi]/grid[hi] ?
		if uint64(shape[i])*uint64(grid[hi]) > uint64(shape[hi])*uint64(grid[i]) {
			hi = i
		}
		if uint64(shape[i])*uint64(grid[lo]) < uint64(shape[lo])*uint64(grid[i]) {
			lo = i
		}
	}
	return uint64(shape[hi]) * uint64(grid[lo]), uint64(grid[hi]) * uint64(shape[lo])
}

// symBetter reports whether grid a is preferred to grid b (see New).
func symBetter(a, b, shape []int) bool {
	pa, qa := symRatio(a, shape)
	pb, qb := symRatio(b, shape)
	// Compare pa/qa with pb/qb exactly in 128 bits.
	h1, l1 := bits.Mul64(pa, qb)
	h2, l2 := bits.Mul64(pb, qa)
	if h1 != h2 || l1 != l2 {
		return h1 < h2 || (h1 == h2 && l1 < l2)
	}
	return slices.Compare(a, b) > 0
}

// NewUser builds a tiling from explicit owned blocks; tile i goes to
// locality i. The blocks must have one span per dimension of shape, lie in
// the array, be non-empty (unless the array has no element and there is
// one tile), and cover every element exactly once: overlaps and gaps are
// errors naming the tiles or the first uncovered element.
func NewUser(shape []int, owned []Block) (Tiling, error) {
	t := Tiling{Shape: slices.Clone(shape), Tiles: make([]Tile, len(owned))}
	for i, b := range owned {
		t.Tiles[i] = Tile{Owned: b.Clone(), Halo: b.Clone()}
	}
	if err := t.Validate(); err != nil {
		return Tiling{}, err
	}
	return t, nil
}

// WithHalo returns a copy of t whose tiles overlap by k elements: each
// tile's Halo is its Owned block grown by k at every interior edge (an edge
// not on the array's boundary), clipped to the array. k = 0 removes the
// overlap. A negative k is an error.
func (t Tiling) WithHalo(k int) (Tiling, error) {
	if k < 0 {
		return Tiling{}, fmt.Errorf("annotate: negative halo %d", k)
	}
	if t.Cyclic != nil && k != 0 {
		return Tiling{}, fmt.Errorf("annotate: a halo of %d on a block-cyclic tiling (%v): want no halo", k, *t.Cyclic)
	}
	u := t.Clone()
	for i := range u.Tiles {
		h := u.Tiles[i].Owned.Clone()
		for d := range h {
			if d >= len(u.Shape) {
				break
			}
			if h[d].Start > 0 {
				h[d].Start = max(0, h[d].Start-k)
			}
			if h[d].Stop < u.Shape[d] {
				h[d].Stop = min(u.Shape[d], h[d].Stop+k)
			}
		}
		u.Tiles[i].Halo = h
	}
	return u, nil
}

// Transpose returns the tiling of the transposed array: the order of the
// dimensions reversed in the shape and in every block (rows and columns
// swap in 2-D; a 1-D tiling is unchanged), as transpose_d needs.
func (t Tiling) Transpose() Tiling {
	u := t.Clone()
	if c := u.Cyclic; c != nil {
		*c = Cyclic{RowBlock: c.ColBlock, ColBlock: c.RowBlock, GridRows: c.GridCols, GridCols: c.GridRows, ColMajor: !c.ColMajor}
	}
	slices.Reverse(u.Shape)
	for _, tl := range u.Tiles {
		slices.Reverse(tl.Owned)
		slices.Reverse(tl.Halo)
	}
	return u
}

// Clone returns a deep copy of t.
func (t Tiling) Clone() Tiling {
	u := Tiling{Shape: slices.Clone(t.Shape), Tiles: make([]Tile, len(t.Tiles))}
	for i, tl := range t.Tiles {
		u.Tiles[i] = Tile{Owned: tl.Owned.Clone(), Halo: tl.Halo.Clone()}
	}
	if t.Cyclic != nil {
		c := *t.Cyclic
		u.Cyclic = &c
	}
	return u
}

// Equal reports whether t and u have the same shape and tiles.
func (t Tiling) Equal(u Tiling) bool {
	if !slices.Equal(t.Shape, u.Shape) || len(t.Tiles) != len(u.Tiles) {
		return false
	}
	if (t.Cyclic == nil) != (u.Cyclic == nil) || (t.Cyclic != nil && *t.Cyclic != *u.Cyclic) {
		return false
	}
	for i := range t.Tiles {
		if !t.Tiles[i].Owned.Equal(u.Tiles[i].Owned) || !t.Tiles[i].Halo.Equal(u.Tiles[i].Halo) {
			return false
		}
	}
	return true
}

// Validate checks that t describes a tiling: a shape of 1 to 3
// non-negative dimensions, at least one tile, owned blocks that are
// non-empty, inside the array and cover it exactly once, and halo blocks
// that contain their owned block and stay inside the array.
func (t Tiling) Validate() error {
	if err := checkShape(t.Shape); err != nil {
		return err
	}
	if len(t.Tiles) == 0 {
		return fmt.Errorf("annotate: tiling of shape %v has no tile", t.Shape)
	}
	nd := len(t.Shape)
	whole := WholeBlock(t.Shape)
	var sum int
	for i, tl := range t.Tiles {
		if len(tl.Owned) != nd {
			return fmt.Errorf("annotate: tile %d has %d dimension(s), the array %d (shape %v)", i, len(tl.Owned), nd, t.Shape)
		}
		if len(tl.Halo) != nd {
			return fmt.Errorf("annotate: tile %d halo has %d dimension(s), the array %d (shape %v)", i, len(tl.Halo), nd, t.Shape)
		}
		for d, s := range tl.Owned {
			if s.Start < 0 || s.Stop > t.Shape[d] || s.Stop < s.Start {
				return fmt.Errorf("annotate: tile %d %s span %v is outside [0, %d)", i, DimName(nd, d), s, t.Shape[d])
			}
			if s.Empty() && len(t.Tiles) > 1 {
				return fmt.Errorf("annotate: tile %d %s span %v is empty (empty tiles are not allowed)", i, DimName(nd, d), s)
			}
		}
		for d, s := range tl.Halo {
			if s.Start < 0 || s.Stop > t.Shape[d] {
				return fmt.Errorf("annotate: tile %d halo %s span %v is outside [0, %d)", i, DimName(nd, d), s, t.Shape[d])
			}
		}
		if !tl.Halo.Contains(tl.Owned) {
			return fmt.Errorf("annotate: tile %d halo %v does not contain its owned block %v", i, tl.Halo, tl.Owned)
		}
		sum += tl.Owned.Size()
	}
	for i := range t.Tiles {
		for j := i + 1; j < len(t.Tiles); j++ {
			if x, ok := t.Tiles[i].Owned.Intersect(t.Tiles[j].Owned); ok {
				return fmt.Errorf("annotate: tiles %d and %d overlap in %v", i, j, x)
			}
		}
	}
	if total := whole.Size(); sum != total {
		msg := fmt.Sprintf("annotate: tiles cover %d of the %d elements of shape %v", sum, total, t.Shape)
		if p := uncovered(t); p != nil {
			msg += fmt.Sprintf("; element %s is in no tile", pointString(p))
		}
		return fmt.Errorf("%s", msg)
	}
	if t.Cyclic != nil {
		return t.validateCyclic()
	}
	return nil
}

// uncovered returns the first element (in row-major order of the cells cut
// by the tile boundaries) that no owned block holds, or nil when the
// search would be too large or finds none.
func uncovered(t Tiling) []int {
	nd := len(t.Shape)
	cuts := make([][]int, nd)
	cells := 1
	for d := range cuts {
		c := []int{0, t.Shape[d]}
		for _, tl := range t.Tiles {
			c = append(c, tl.Owned[d].Start, tl.Owned[d].Stop)
		}
		slices.Sort(c)
		c = slices.Compact(c)
		cuts[d] = c
		cells *= len(c) - 1
		if cells > 1<<20 {
			return nil
		}
	}
	idx := make([]int, nd)
	p := make([]int, nd)
	for {
		empty := false
		for d := range p {
			if idx[d] >= len(cuts[d])-1 {
				empty = true
				break
			}
			p[d] = cuts[d][idx[d]]
		}
		if empty {
			return nil
		}
		covered := false
		for _, tl := range t.Tiles {
			in := true
			for d, s := range tl.Owned {
				if p[d] < s.Start || p[d] >= s.Stop {
					in = false
					break
				}
			}
			if in {
				covered = true
				break
			}
		}
		if !covered {
			return p
		}
		d := nd - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < len(cuts[d])-1 {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return nil
		}
	}
}

func pointString(p []int) string {
	parts := make([]string, len(p))
	for d, v := range p {
		parts[d] = fmt.Sprintf("%s %d", DimName(len(p), d), v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func checkShape(shape []int) error {
	if len(shape) < 1 || len(shape) > MaxDims {
		return fmt.Errorf("annotate: shape %v has %d dimensions, want 1 to %d", shape, len(shape), MaxDims)
	}
	for d, v := range shape {
		if v < 0 {
			return fmt.Errorf("annotate: shape %v has negative %s", shape, DimName(len(shape), d))
		}
	}
	return nil
}
