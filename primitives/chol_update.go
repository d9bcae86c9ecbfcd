package primitives

import (
	"fmt"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// cholChunk is how many of a locality's tile rows one trailing-update
// kernel of Cholesky covers: a locality's tiles of one block column lie
// one below the other in its local matrix, so the update of up to
// cholChunk of them is one gemm of cholChunk·nb rows, which BLAS runs
// faster than as many nb x nb products, while a chunk stays small enough
// for the panel's kernels to overtake the rest of a step's update.
const cholChunk = 8

// cholLookahead is how many block columns after a step's panel Cholesky
// updates ahead of the rest of the step (rank in cholesky).
const cholLookahead = 2

// cholUpdates is the trailing update of Cholesky on one locality: for
// each step k and each block column j > k of this locality, the tiles
// (i, j), i > j, of each chunk of its tile rows are updated by one gemm,
// C -= L(i.., k)·L(j, k)ᵀ, named gemm(i0:i1,j,k) after the first and
// last tile row (gemm(i,j,k) for one). The diagonal tile is updated on
// its own, as soon as L(j, k) is here, and whole (gemm(j,j,k): BLAS's
// gemm is faster than its syrk on a tile): only its lower triangle is
// read, and zeroUpper clears the rest at the end.
type cholUpdates struct {
	v      *cyclicMatrix
	pr, pc int // this locality's place in the grid
	g      *tileGraph
	rank   func(i, j, k int) int64
	// ver[c][j]: the latest update of the tiles of chunk c in column j
	// but the diagonal tile; diag[j]: of the diagonal tile (j, j).
	ver  [][]tileFuture
	diag []tileFuture
	// loaded[j]: block column j copied from the input (load).
	loaded []tileFuture
}

func newCholUpdates(v *cyclicMatrix, g *tileGraph, rank func(i, j, k int) int64) *cholUpdates {
	chunks := (v.nbr/v.c.GridRows)/cholChunk + 1
	u := &cholUpdates{v: v, g: g, rank: rank, ver: make([][]tileFuture, chunks), diag: make([]tileFuture, v.nbc)}
	for r := range v.c.GridRows {
		for c := range v.c.GridCols {
			if v.c.Locality(r, c) == v.me {
				u.pr, u.pc = r, c
			}
		}
	}
	for c := range u.ver {
		u.ver[c] = make([]tileFuture, v.nbc)
	}
	return u
}

// chunk is the chunk of this locality's tile row i.
func (u *cholUpdates) chunk(i int) int { return i / u.v.c.GridRows / cholChunk }

// version is the future of the latest update of this locality's tile
// (i, j): ready when no update touched it yet.
func (u *cholUpdates) version(i, j int) tileFuture {
	f := u.ver[u.chunk(i)][j]
	if i == j {
		f = u.diag[j]
	}
	if f == nil {
		f = u.loaded[j]
	}
	if f != nil {
		return f
	}
	return runtime.MakeReady(u.v.tile(i, j))
}

// load fills the local matrix from src, this locality's tile of the
// input (the same layout; nil: the matrix holds it already), one block
// column per kernel (load(j)), ranked
// before every other kernel of its column and after those of the columns
// before it: the factorisation starts once its first column is here,
// rather than after the whole copy. The tiles above the diagonal are
// cleared instead of copied.
func (u *cholUpdates) load(src []float64) {
	v := u.v
	u.loaded = make([]tileFuture, v.nbc)
	nt := int64(v.nbr)
	for j := u.pc; j < v.nbc; j += v.c.GridCols {
		c0 := (j / v.c.GridCols) * v.c.ColBlock
		cols := v.cols(j)
		u.loaded[j] = u.g.ranked(fmt.Sprintf("load(%d)", j), int64(j)*nt*nt-1, func([]blas64.General) (blas64.General, error) {
			for i := u.pr; i < v.nbr; i += v.c.GridRows {
				r0 := (i / v.c.GridRows) * v.c.RowBlock
				for r := r0; r < r0+v.rows(i); r++ {
					row := v.data[r*v.ld+c0 : r*v.ld+c0+cols]
					if i < j {
						clear(row)
					} else if src != nil {
						copy(row, src[r*v.ld+c0:r*v.ld+c0+cols])
					}
				}
			}
			return blas64.General{}, nil
		})
	}
}

// rowsOf lists this locality's tile rows i >= from in chunk c.
func (u *cholUpdates) rowsOf(c, from int) []int {
	v := u.v
	var rows []int
	for i := from; i < v.nbr; i++ {
		if i%v.c.GridRows == u.pr && u.chunk(i) == c {
			rows = append(rows, i)
		}
	}
	return rows
}

// span is the view of this locality's tiles (rows[0], j) .. (rows[len-1],
// j) of its local matrix, one below the other.
func (u *cholUpdates) span(rows []int, j int) blas64.General {
	v := u.v
	h := 0
	for _, i := range rows {
		h += v.rows(i)
	}
	off := (rows[0]/v.c.GridRows)*v.c.RowBlock*v.ld + (j/v.c.GridCols)*v.c.ColBlock
	cols := v.cols(j)
	return blas64.General{Rows: h, Cols: cols, Stride: v.ld, Data: v.data[off : off+(h-1)*v.ld+cols]}
}

// step adds the kernels of step k's update, given the panel's tiles
// L(i, k) that this locality has or receives.
func (u *cholUpdates) step(k int, panel []tileFuture) {
	v := u.v
	var mine []int // this locality's block columns j > k
	for j := k + 1; j < v.nbc; j++ {
		if j%v.c.GridCols == u.pc {
			mine = append(mine, j)
		}
	}
	if len(mine) == 0 {
		return
	}
	for c := range u.ver {
		// Rows above this locality's first column need no update here.
		rows := u.rowsOf(c, mine[0])
		if len(rows) == 0 {
			continue
		}
		// The panel's tiles of these rows, one below the other.
		lp := u.stacked(k, rows, panel)
		at := 0 // lp's first row of tile row rows[r]
		r := 0
		for _, j := range mine {
			for r < len(rows) && rows[r] < j {
				at += v.rows(rows[r])
				r++
			}
			if r == len(rows) {
				break
			}
			sub, off := rows[r:], at
			if sub[0] == j {
				// The diagonal tile on its own: the next panel starts
				// with it, and it needs L(j, k) only.
				dst := v.tile(j, j)
				u.diag[j] = u.g.ranked(fmt.Sprintf("gemm(%d,%d,%d)", j, j, k), u.rank(j, j, k), func(vs []blas64.General) (blas64.General, error) {
					blas64.Gemm(blas.NoTrans, blas.Trans, -1, vs[0], vs[0], 1, dst)
					return dst, nil
				}, panel[j], u.version(j, j))
				if sub = sub[1:]; len(sub) == 0 {
					continue
				}
				off += v.rows(j)
			}
			name := fmt.Sprintf("gemm(%d,%d,%d)", sub[0], j, k)
			if len(sub) > 1 {
				name = fmt.Sprintf("gemm(%d:%d,%d,%d)", sub[0], sub[len(sub)-1], j, k)
			}
			dst := u.span(sub, j)
			prev := u.ver[c][j] // the chunk's last update, else its load
			if prev == nil {
				prev = u.loaded[j]
			}
			if prev == nil {
				prev = runtime.MakeReady(dst)
			}
			u.ver[c][j] = u.g.ranked(name, u.rank(sub[0], j, k), func(vs []blas64.General) (blas64.General, error) {
				a, b := vs[0], vs[1]
				a = blas64.General{Rows: dst.Rows, Cols: a.Cols, Stride: a.Stride, Data: a.Data[off*a.Stride:]}
				blas64.Gemm(blas.NoTrans, blas.Trans, -1, a, b, 1, dst)
				return dst, nil
			}, lp, panel[j], prev)
		}
	}
}

// stacked is the panel's tiles L(i, k) of the given rows one below the
// other: a view of the local matrix where this locality made them, else a
// copy of the tiles received (a kernel named pack(i0:i1,k)) in the
// step's scratch memory.
func (u *cholUpdates) stacked(k int, rows []int, panel []tileFuture) tileFuture {
	v := u.v
	in := make([]tileFuture, len(rows))
	for r, i := range rows {
		in[r] = panel[i]
	}
	if v.mine(rows[0], k) {
		view := u.span(rows, k)
		out, fulfil := runtime.NewPromise[blas64.General](u.g.e.rt)
		all := runtime.WhenAll(in...)
		runtime.Finally(all, func() {
			_, err := all.Get(u.g.ctx) // ready: does not wait
			fulfil(view, err)
		})
		u.g.waits = append(u.g.waits, out.Err)
		return out
	}
	cols := v.cols(k)
	h := 0
	for _, i := range rows {
		h += v.rows(i)
	}
	step := u.g.cur
	return u.g.ranked(fmt.Sprintf("pack(%d:%d,%d)", rows[0], rows[len(rows)-1], k), u.rank(rows[0], k+1, k), func(vs []blas64.General) (blas64.General, error) {
		out := u.g.scratch(step, h, cols)
		at := 0
		for _, t := range vs {
			for r := range t.Rows {
				copy(out.Data[(at+r)*cols:(at+r+1)*cols], t.Data[r*t.Stride:r*t.Stride+cols])
			}
			at += t.Rows
		}
		return out, nil
	}, in...)
}
