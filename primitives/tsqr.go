package primitives

import (
	"context"
	"fmt"
	"math"
	goruntime "runtime"
	"sync"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// QRFactors is the result of TSQR on one locality: A = Q·R.
type QRFactors struct {
	// R is the n x n upper triangular factor, the same on every locality.
	R *mat.Dense
	// Q is the explicit m x n factor with orthonormal columns in a's row
	// tiling, when TSQR was asked for it; nil otherwise.
	Q *Array
	// tree is Q held implicitly: this locality's Householder factors of
	// its rows and of the tree nodes it combined (ApplyQT).
	tree *tsqrTree
	x    *Array // the factored matrix, for ApplyQT's checks
}

// TSQR factors a tall-skinny matrix, A = Q·R, by a reduction tree of
// local QRs (Demmel et al.'s TSQR): a is row-tiled (every tile whole rows,
// Tiled(annotate.Row)), with at least as many rows as columns. Each
// locality factors its rows (geqrf), then the R factors combine up a
// binary tree over the localities, two stacked n x n triangles factored at
// each node, so that locality 0 holds R after ⌈log2 p⌉ rounds of one n x n
// message; R travels back down the tree to every locality. Q stays
// implicit, as the Householder factors of the leaves and the nodes
// (QRFactors.ApplyQT); with explicit set, Q is also formed: each node
// multiplies its Q by the block its parent sends down, and each locality
// ends with Q's rows of its tile. Tiles with fewer rows than columns are
// allowed (their R is padded with zero rows).
//
// A matrix with NaN or Inf, or wider than tall, fails the result on every
// locality with an error naming the array.
func TSQR(ctx context.Context, e *Env, a *runtime.Future[*Array], explicit bool) *runtime.Future[QRFactors] {
	const op = "TSQR"
	k := e.derive()
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (QRFactors, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return QRFactors{}, err
		}
		if err := x.pin(e, op); err != nil {
			return QRFactors{}, err
		}
		defer x.unpin()
		if err := e.adopt(op, x); err != nil {
			return QRFactors{}, err
		}
		if err := e.checkRowTiled(ctx, op, r, x, true); err != nil {
			return QRFactors{}, err
		}
		ch, err := runtime.NewChannel(e.rt, fmt.Sprintf("%s/tsqr~%d", CommunicatorName, k), nil)
		if err != nil {
			return QRFactors{}, e.wrap(op, err)
		}
		defer ch.Close()
		b := x.ann.Local().Owned
		local := blas64.General{Rows: b[0].Len(), Cols: b[1].Len(), Stride: b[1].Len(), Data: e.ownTileToSet(len(x.data))}
		copy(local.Data, x.data)
		t := &tsqrRun{e: e, ch: ch, ctx: ctx}
		tree, q, err := t.factor(local, explicit)
		if err != nil {
			return QRFactors{}, e.wrap(op, fmt.Errorf("array %s: %w", x.Name(), err))
		}
		out := QRFactors{R: mat.NewDense(tree.n, tree.n, tree.r), tree: tree, x: x}
		if explicit {
			ann := derivedAnnotation(k, x)
			if out.Q, err = e.newArray(op, ann, q.Data); err != nil {
				return QRFactors{}, err
			}
		}
		return out, nil
	})
}

// checkRowTiled checks that x is a row-tiled 2-D matrix, at least as tall
// as wide when tall, and, with every locality (the reserved AllReduce),
// that no element is NaN or Inf.
func (e *Env) checkRowTiled(ctx context.Context, op string, r *runtime.Reservation, x *Array, tall bool) error {
	if bad := e.rowTiledShape(op, x, tall); bad != nil {
		r.Cancel(bad)
		return bad
	}
	got, err := r.AllReduce(ctx, []float64{nonFinite(x.data)}, nanMax).Get(ctx)
	if err != nil {
		return e.wrap(op, err)
	}
	if math.IsNaN(got[0]) || math.IsInf(got[0], 0) {
		return e.errorf(op, "array %s holds NaN or Inf: want finite elements", x.Name())
	}
	return nil
}

// rowTiledShape is checkRowTiled's check of x's shape and tiling alone,
// which needs no other locality.
func (e *Env) rowTiledShape(op string, x *Array, tall bool) error {
	s := x.ann.Tiling.Shape
	var bad error
	switch {
	case len(s) != 2 || x.ann.Tiling.Cyclic != nil:
		bad = e.errorf(op, "array %s of shape %v: want a row-tiled 2-D matrix", x.Name(), s)
	case s[1] == 0 || (tall && s[0] < s[1]):
		bad = e.errorf(op, "array %s of shape %v: want a tall-skinny matrix, at least as many rows as columns and one column", x.Name(), s)
	default:
		for l, t := range x.ann.Tiling.Tiles {
			if c := t.Owned[1]; c.Start != 0 || c.Stop != s[1] || !t.Halo.Equal(t.Owned) {
				bad = e.errorf(op, "array %s of shape %v: the tile of locality %d holds columns %v (halo %v); want a row tiling without overlap (Tiled(annotate.Row)), every tile whole rows: retile it first", x.Name(), s, l, c, t.Halo)
				break
			}
		}
	}
	return bad
}

// nonFinite returns NaN if an element of v is NaN or ±Inf, else 0: the
// sum of v[i] − v[i], in four chains without branches, as fast as the
// memory brings v in (the 800 MB of a 50,000 x 2,000 matrix are read
// once more for the check).
func nonFinite(v []float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		w := v[i : i+4 : i+4]
		s0 += w[0] - w[0]
		s1 += w[1] - w[1]
		s2 += w[2] - w[2]
		s3 += w[3] - w[3]
	}
	for _, x := range v[i:] {
		s0 += x - x
	}
	return s0 + s1 + s2 + s3
}

// tsqrRun is one primitive's use of its channel: each tree operation
// takes the next block of tags.
type tsqrRun struct {
	e    *Env
	ch   *runtime.Channel
	ctx  context.Context
	tags uint64
	// qInto, when it has room, is where factor writes this locality's
	// rows of an explicit Q, instead of a new tile.
	qInto []float64
}

// nextTags returns the base of a fresh block of 256 tags.
func (t *tsqrRun) nextTags() uint64 {
	b := t.tags
	t.tags += 256
	return b
}

// tsqrNode is a node of the tree this locality combined: the geqrf of
// [R_here; R_partner] (2n x n).
type tsqrNode struct {
	level, partner int
	f              blas64.General
	tau            []float64
}

// tsqrTree is Q held implicitly on one locality.
type tsqrTree struct {
	n      int
	leaf   *leafQR    // the QR of this locality's rows
	nodes  []tsqrNode // bottom-up
	parent int        // the locality this one sent its R to; -1 at the root
	level  int        // the level of that send
	r      []float64  // R, n x n, row-major
}

// treeLevels calls fn for each level s of the binary tree over p
// localities with this locality's role there: combine with partner (it
// receives), or send to partner (and stop).
func treeLevels(p, me int, fn func(s, partner int, combine bool) bool) {
	for s := 0; 1<<s < p; s++ {
		step := 1 << s
		switch me % (2 * step) {
		case 0:
			if me+step < p && !fn(s, me+step, true) {
				return
			}
		case step:
			fn(s, me-step, false)
			return
		}
	}
}

// factor runs TSQR on this locality's rows a (m_i x n, overwritten): the
// tree, with R everywhere, and with explicit this locality's rows of Q.
func (t *tsqrRun) factor(a blas64.General, explicit bool) (*tsqrTree, blas64.General, error) {
	n := a.Cols
	tree := &tsqrTree{n: n, parent: -1}
	var r []float64
	tree.leaf, r = factorLeaf(a)
	up := t.nextTags()
	var err error
	treeLevels(t.ch.Size(), t.ch.Site(), func(s, partner int, combine bool) bool {
		if !combine {
			tree.parent, tree.level = partner, s
			err = t.ch.Set(t.ctx, partner, up+uint64(s), r).Err(t.ctx)
			return false
		}
		var got []float64
		if got, err = t.ch.Get(t.ctx, partner, up+uint64(s)).Get(t.ctx); err != nil {
			return false
		}
		if len(got) != n*n {
			err = fmt.Errorf("TSQR level %d: R from locality %d has %d elements, want %dx%d", s, partner, len(got), n, n)
			return false
		}
		f := blas64.General{Rows: 2 * n, Cols: n, Stride: n, Data: append(r, got...)}
		tau := geqrf(f)
		tree.nodes = append(tree.nodes, tsqrNode{level: s, partner: partner, f: f, tau: tau})
		r = upperPadded(f, n)
		return true
	})
	if err != nil {
		return nil, blas64.General{}, err
	}
	// Down the tree: R, and with explicit the block of Q each subtree's
	// rows multiply.
	down := t.nextTags()
	c := eye(n)
	if tree.parent >= 0 {
		msg, err := t.ch.Get(t.ctx, tree.parent, down+uint64(tree.level)).Get(t.ctx)
		if err != nil {
			return nil, blas64.General{}, err
		}
		want := n * n
		if explicit {
			want *= 2
		}
		if len(msg) != want {
			return nil, blas64.General{}, fmt.Errorf("TSQR: the message from locality %d has %d elements, want %d", tree.parent, len(msg), want)
		}
		r = msg[:n*n]
		if explicit {
			c = msg[n*n:]
		}
	}
	tree.r = r
	for i := len(tree.nodes) - 1; i >= 0; i-- {
		nd := tree.nodes[i]
		msg := r
		if explicit {
			// [C_here; C_partner] = Q_node·[C; 0].
			qc := blas64.General{Rows: 2 * n, Cols: n, Stride: n, Data: make([]float64, 2*n*n)}
			copy(qc.Data, c)
			ormqr(blas.NoTrans, nd.f, nd.tau, qc)
			c = qc.Data[:n*n]
			msg = append(append([]float64(nil), r...), qc.Data[n*n:]...)
		}
		if err := t.ch.Set(t.ctx, nd.partner, down+uint64(nd.level), msg).Err(t.ctx); err != nil {
			return nil, blas64.General{}, err
		}
	}
	if !explicit {
		return tree, blas64.General{}, nil
	}
	// This locality's rows of Q: Q_leaf·[C; 0].
	m := a.Rows
	q := blas64.General{Rows: m, Cols: n, Stride: n, Data: t.qInto}
	if len(q.Data) < m*n {
		q.Data = t.e.ownTileToSet(m * n)
	}
	tree.leaf.applyQ(c, q)
	return tree, q, nil
}

// applyQT returns Qᵀ·b (n x r, on every locality) for this locality's rows
// b (m_i x r) of B, through the implicit Q of tree.
func (t *tsqrRun) applyQT(tree *tsqrTree, b blas64.General) ([]float64, error) {
	n, r := tree.n, b.Cols
	top := tree.leaf.applyQT(b)
	up, down := t.nextTags(), t.nextTags()
	for _, nd := range tree.nodes {
		got, err := t.ch.Get(t.ctx, nd.partner, up+uint64(nd.level)).Get(t.ctx)
		if err != nil {
			return nil, err
		}
		if len(got) != n*r {
			return nil, fmt.Errorf("Qᵀb from locality %d has %d elements, want %dx%d", nd.partner, len(got), n, r)
		}
		s := blas64.General{Rows: 2 * n, Cols: r, Stride: r, Data: append(top, got...)}
		ormqr(blas.Trans, nd.f, nd.tau, s)
		top = s.Data[:n*r]
	}
	if tree.parent >= 0 {
		if err := t.ch.Set(t.ctx, tree.parent, up+uint64(tree.level), top).Err(t.ctx); err != nil {
			return nil, err
		}
		got, err := t.ch.Get(t.ctx, tree.parent, down+uint64(tree.level)).Get(t.ctx)
		if err != nil {
			return nil, err
		}
		top = got
	}
	for i := len(tree.nodes) - 1; i >= 0; i-- {
		nd := tree.nodes[i]
		if err := t.ch.Set(t.ctx, nd.partner, down+uint64(nd.level), top).Err(t.ctx); err != nil {
			return nil, err
		}
	}
	return top, nil
}

// ApplyQT returns Qᵀ·B (n x r, the same on every locality) for b tiled as
// the factored matrix was (rows), through Q's implicit form: each locality
// applies its leaf's reflectors to its rows, and the n x r blocks combine up
// the tree as R did, then travel back down. Every locality calls it.
func (f QRFactors) ApplyQT(ctx context.Context, e *Env, b *runtime.Future[*Array]) *runtime.Future[*mat.Dense] {
	return applyQT(ctx, e, runtime.MakeReady(f), b)
}

// applyQT is ApplyQT of factors still to come (reserved now).
func applyQT(ctx context.Context, e *Env, qr *runtime.Future[QRFactors], b *runtime.Future[*Array]) *runtime.Future[*mat.Dense] {
	const op = "ApplyQT"
	k := e.derive()
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (*mat.Dense, error) {
		f, err := qr.Get(ctx)
		if err != nil {
			return nil, err
		}
		y, err := b.Get(ctx)
		if err != nil {
			return nil, err
		}
		if err := y.pin(e, op); err != nil {
			return nil, err
		}
		defer y.unpin()
		if f.tree == nil {
			err := e.errorf(op, "array %s: no factors (QRFactors from TSQR)", y.Name())
			r.Cancel(err)
			return nil, err
		}
		if got, want := y.ann.Local().Owned[0], f.x.ann.Local().Owned[0]; got != want || y.ann.Tiling.Shape[0] != f.x.ann.Tiling.Shape[0] {
			err := e.errorf(op, "array %s of shape %v holds rows %v here, the factored matrix %s of shape %v rows %v: want the same rows, tiled alike",
				y.Name(), y.ann.Tiling.Shape, got, f.x.Name(), f.x.ann.Tiling.Shape, want)
			r.Cancel(err)
			return nil, err
		}
		if err := e.checkRowTiled(ctx, op, r, y, false); err != nil {
			return nil, err
		}
		ch, err := runtime.NewChannel(e.rt, fmt.Sprintf("%s/applyqt~%d", CommunicatorName, k), nil)
		if err != nil {
			return nil, e.wrap(op, err)
		}
		defer ch.Close()
		bl := y.ann.Local().Owned
		t := &tsqrRun{e: e, ch: ch, ctx: ctx}
		out, err := t.applyQT(f.tree, blas64.General{Rows: bl[0].Len(), Cols: bl[1].Len(), Stride: bl[1].Len(), Data: y.data})
		if err != nil {
			return nil, e.wrap(op, err)
		}
		return mat.NewDense(f.tree.n, bl[1].Len(), out), nil
	})
}

// LeastSquares returns X minimising ‖A·X − B‖ (n x r, the same on every
// locality) for a tall-skinny a of full column rank, through TSQR: R·X =
// Qᵀ·B, with Qᵀ·B from Q's implicit form (ApplyQT). a and b are row-tiled
// alike. A rank-deficient a (a diagonal element of R at most n·ε·max|R|)
// fails the result with a *SingularError naming the column.
func LeastSquares(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*mat.Dense] {
	const op = "LeastSquares"
	qr := TSQR(ctx, e, a, false)
	qtb := applyQT(ctx, e, qr, b)
	return runtime.Dataflow2(ctx, func(_ context.Context, f QRFactors, c *mat.Dense) (*mat.Dense, error) {
		n := f.tree.n
		r := f.R.RawMatrix()
		big := 0.0
		for i := range n {
			for j := i; j < n; j++ {
				big = math.Max(big, math.Abs(r.Data[i*r.Stride+j]))
			}
		}
		for j := range n {
			if !(math.Abs(r.Data[j*r.Stride+j]) > float64(n)*0x1p-52*big) {
				return nil, e.wrap(op, &SingularError{Array: f.x.Name(), Column: j})
			}
		}
		x := mat.DenseCopyOf(c)
		blas64.Trsm(blas.Left, blas.NoTrans, 1, blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: n, Stride: r.Stride, Data: r.Data}, x.RawMatrix())
		return x, nil
	}, qr, qtb)
}

// geqrf factors a in place (lapack64.Geqrf) and returns tau.
func geqrf(a blas64.General) []float64 {
	tau := make([]float64, min(a.Rows, a.Cols))
	work := []float64{0}
	lapack64.Geqrf(a, tau, work, -1)
	work = make([]float64, max(int(work[0]), a.Cols, 1))
	lapack64.Geqrf(a, tau, work, len(work))
	return tau
}

// ormqr sets c to Q·c (or Qᵀ·c) for the Q whose reflectors geqrf left in
// a and tau. It works on a copy of the reflectors: LAPACK's dorm2r writes
// into them while it runs (a diagonal element set to one and restored),
// and other tasks may be reading the same panel at the time.
func ormqr(trans blas.Transpose, a blas64.General, tau []float64, c blas64.General) {
	k := len(tau)
	a = blas64.General{Rows: a.Rows, Cols: k, Stride: k, Data: packed(blas64.General{Rows: a.Rows, Cols: k, Stride: a.Stride, Data: a.Data})}
	work := []float64{0}
	lapack64.Ormqr(blas.Left, trans, a, tau, c, work, -1)
	work = make([]float64, max(int(work[0]), c.Cols, 1))
	lapack64.Ormqr(blas.Left, trans, a, tau, c, work, len(work))
}

// upperPadded returns the n x n upper triangle of a's first min(rows, n)
// rows, zero below and in the rows a lacks.
func upperPadded(a blas64.General, n int) []float64 {
	r := make([]float64, n*n)
	for i := range min(a.Rows, n) {
		copy(r[i*n+i:(i+1)*n], a.Data[i*a.Stride+i:i*a.Stride+n])
	}
	return r
}

// eye is the n x n identity, row-major.
func eye(n int) []float64 {
	c := make([]float64, n*n)
	for i := range n {
		c[i*n+i] = 1
	}
	return c
}

// leafBytes is the most bytes of a block of rows that the leaf of TSQR
// factors at once: the block stays in the L2 cache while LAPACK's
// unblocked QR (dgeqr2, dorm2r) runs over it once per column. A 50,000 x
// 30 leaf and its explicit Q take about half as long so as whole, and
// 7 times as long as 12,500 x 30 whole (BenchmarkLeafQR).
const leafBytes = 256 << 10

// leafQR is the QR of one locality's rows, A = Q·R, in blocks of rows:
// each block factored (geqrf) in place, and the R factors chained, R_0
// with R_1, the result with R_2, and so on, each link the geqrf of two
// stacked n x n triangles.
type leafQR struct {
	n      int
	blocks []blas64.General // geqrf of the rows of each block, in place
	taus   [][]float64
	links  []tsqrNode // links[i] combines blocks 0..i with block i+1
}

// factorLeaf factors a (m x n, overwritten) in blocks of rows and returns
// the factors and R, n x n, row-major (zero rows padding it when m < n).
// The blocks run on up to GOMAXPROCS goroutines.
func factorLeaf(a blas64.General) (*leafQR, []float64) {
	n := a.Cols
	bs := max(2*n, leafBytes/8/max(n, 1))
	nb := max(1, a.Rows/bs)
	f := &leafQR{n: n, blocks: make([]blas64.General, nb), taus: make([][]float64, nb)}
	for i := range nb {
		r0, r1 := i*a.Rows/nb, (i+1)*a.Rows/nb
		f.blocks[i] = blas64.General{Rows: r1 - r0, Cols: n, Stride: a.Stride, Data: a.Data[r0*a.Stride:]}
		if r1 == r0 {
			f.blocks[i].Data = nil
		}
	}
	parallelBlocks(nb, func(i int) { f.taus[i] = geqrf(f.blocks[i]) })
	r := upperPadded(f.blocks[0], n)
	for i := 1; i < nb; i++ {
		s := blas64.General{Rows: 2 * n, Cols: n, Stride: n, Data: append(r, upperPadded(f.blocks[i], n)...)}
		tau := geqrf(s)
		f.links = append(f.links, tsqrNode{f: s, tau: tau})
		r = upperPadded(s, n)
	}
	return f, r
}

// applyQ sets q (m x n, the rows factored) to Q·[C; 0] for the n x n c.
func (f *leafQR) applyQ(c []float64, q blas64.General) {
	n := f.n
	cs := make([][]float64, len(f.blocks))
	for i := len(f.links) - 1; i >= 0; i-- {
		// [C_0..i; C_i+1] = Q_link·[C; 0].
		s := blas64.General{Rows: 2 * n, Cols: n, Stride: n, Data: make([]float64, 2*n*n)}
		copy(s.Data, c)
		ormqr(blas.NoTrans, f.links[i].f, f.links[i].tau, s)
		c, cs[i+1] = s.Data[:n*n], s.Data[n*n:]
	}
	cs[0] = c
	row := make([]int, len(f.blocks)+1)
	for i, b := range f.blocks {
		row[i+1] = row[i] + b.Rows
	}
	parallelBlocks(len(f.blocks), func(i int) {
		b := f.blocks[i]
		qb := blas64.General{Rows: b.Rows, Cols: n, Stride: q.Stride, Data: q.Data[row[i]*q.Stride:]}
		for r := range b.Rows {
			d := qb.Data[r*qb.Stride : r*qb.Stride+n]
			if r < n {
				copy(d, cs[i][r*n:(r+1)*n])
			} else {
				clear(d)
			}
		}
		if b.Rows > 0 {
			ormqr(blas.NoTrans, b, f.taus[i], qb)
		}
	})
}

// applyQT returns the first n rows of Qᵀ·b (n x r) for b (m x r) in the
// rows factored, b untouched.
func (f *leafQR) applyQT(b blas64.General) []float64 {
	n, r := f.n, b.Cols
	tops := make([][]float64, len(f.blocks))
	row := 0
	for i, blk := range f.blocks {
		c := blas64.General{Rows: blk.Rows, Cols: r, Stride: r, Data: packed(blas64.General{Rows: blk.Rows, Cols: r, Stride: b.Stride, Data: b.Data[row*b.Stride:]})}
		row += blk.Rows
		if blk.Rows > 0 {
			ormqr(blas.Trans, blk, f.taus[i], c)
		}
		tops[i] = make([]float64, n*r)
		copy(tops[i], c.Data[:min(blk.Rows, n)*r])
	}
	top := tops[0]
	for i, l := range f.links {
		s := blas64.General{Rows: 2 * n, Cols: r, Stride: r, Data: append(top, tops[i+1]...)}
		ormqr(blas.Trans, l.f, l.tau, s)
		top = s.Data[:n*r]
	}
	return top
}

// parallelBlocks runs fn(0), …, fn(nb-1) on up to GOMAXPROCS goroutines.
func parallelBlocks(nb int, fn func(i int)) {
	w := min(nb, goruntime.GOMAXPROCS(0))
	if w <= 1 {
		for i := range nb {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	for g := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < nb; i += w {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
