package primitives

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// gridOfSize is the p x q grid the tests use on n localities.
func gridOfSize(n int) (p, q int) {
	switch n {
	case 4:
		return 2, 2
	case 6:
		return 2, 3
	case 2:
		return 1, 2
	}
	return n, 1
}

// spdMatrix returns a reproducible symmetric positive definite n x n
// matrix, row-major: M·Mᵀ/n + I with M uniform in [-1, 1).
func spdMatrix(n int, seed uint64) []float64 {
	m := mat.NewDense(n, n, globalData([]int{n, n}, seed, -1, 1))
	var a mat.Dense
	a.Mul(m, m.T())
	a.Scale(1/float64(n), &a)
	for i := range n {
		a.Set(i, i, a.At(i, i)+1)
	}
	return a.RawMatrix().Data
}

// toCyclic puts the global row-major matrix g of shape into a block-cyclic
// layout through a row tiling and Retile.
func toCyclic(ctx context.Context, e *Env, shape []int, g []float64, nb, p, q int) (*runtime.Future[*Array], error) {
	a, err := FromGlobal(e, shape, Tiled(annotate.Row), g)
	if err != nil {
		return nil, err
	}
	l, err := BlockCyclic(shape, nb, p, q)
	if err != nil {
		return nil, err
	}
	return Retile(ctx, e, runtime.MakeReady(a), l), nil
}

// gatheredDense returns a block-cyclic (or any) array whole, through a row
// tiling.
func gatheredDense(ctx context.Context, e *Env, a *runtime.Future[*Array]) (*mat.Dense, error) {
	w, err := AllGather(ctx, e, Retile(ctx, e, a, Tiled(annotate.Row))).Get(ctx)
	if err != nil {
		return nil, err
	}
	return w.Dense()
}

// relResidual is ‖a − b‖_F / ‖a‖_F.
func relResidual(a, b mat.Matrix) float64 {
	var d mat.Dense
	d.Sub(a, b)
	return mat.Norm(&d, 2) / mat.Norm(a, 2)
}

// tolerance is 10·n·ε.
func tolerance(n int) float64 { return 10 * float64(n) * 0x1p-52 }

func TestBlockCyclicRetileRoundTrip(t *testing.T) {
	for n := 1; n <= 6; n++ {
		p, q := gridOfSize(n)
		for _, sz := range [][2]int{{11, 9}, {16, 13}} {
			shape := []int{sz[0], sz[1]}
			t.Run(fmt.Sprintf("%d-localities/%v", n, shape), func(t *testing.T) {
				ref := globalData(shape, 3, -1, 1)
				runJob(t, n, func(ctx context.Context, e *Env) error {
					c, err := toCyclic(ctx, e, shape, ref, 2, p, q)
					if err != nil {
						return err
					}
					x, err := c.Get(ctx)
					if err != nil {
						return err
					}
					// This locality's tile holds its blocks as ScaLAPACK
					// packs them.
					tl := x.ann.Tiling
					st := tl.Tiles[e.Locality()].Owned
					for _, reg := range tl.Regions(e.Locality()) {
						sb, _ := tl.Storage(reg)
						for i := reg[0].Start; i < reg[0].Stop; i++ {
							for j := reg[1].Start; j < reg[1].Stop; j++ {
								k := (sb[0].Start+i-reg[0].Start-st[0].Start)*st[1].Len() + sb[1].Start + j - reg[1].Start - st[1].Start
								if got, want := x.Local()[k], ref[i*shape[1]+j]; got != want {
									return fmt.Errorf("locality %d: element (%d, %d) stored as %v, want %v", e.Locality(), i, j, got, want)
								}
							}
						}
					}
					for _, back := range []annotate.Kind{annotate.Row, annotate.Column, annotate.Sym} {
						y, err := Retile(ctx, e, c, Tiled(back)).Get(ctx)
						if err != nil {
							return err
						}
						if err := checkTile(y, ref, fmt.Sprintf("back to %v", back)); err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
	}
}

func TestCholesky(t *testing.T) {
	for n := 1; n <= 6; n++ {
		p, q := gridOfSize(n)
		for _, c := range []struct{ size, nb int }{{23, 4}, {13, 3}, {12, 12 / max(p, q)}} {
			t.Run(fmt.Sprintf("%d-localities/n=%d,nb=%d", n, c.size, c.nb), func(t *testing.T) {
				shape := []int{c.size, c.size}
				ref := spdMatrix(c.size, uint64(c.size))
				runJob(t, n, func(ctx context.Context, e *Env) error {
					a, err := toCyclic(ctx, e, shape, ref, c.nb, p, q)
					if err != nil {
						return err
					}
					l, err := gatheredDense(ctx, e, Cholesky(ctx, e, a))
					if err != nil {
						return err
					}
					for i := range c.size {
						for j := i + 1; j < c.size; j++ {
							if l.At(i, j) != 0 {
								return fmt.Errorf("L(%d, %d) = %v above the diagonal", i, j, l.At(i, j))
							}
						}
					}
					var llt mat.Dense
					llt.Mul(l, l.T())
					A := mat.NewDense(c.size, c.size, ref)
					if r := relResidual(A, &llt); !(r <= tolerance(c.size)) {
						return fmt.Errorf("‖A − LLᵀ‖/‖A‖ = %g, want at most %g", r, tolerance(c.size))
					}
					return nil
				})
			})
		}
	}
}

// TestCholeskyColumnMajorGrid runs Cholesky on a 2 x 3 grid whose
// localities are numbered down its columns.
func TestCholeskyColumnMajorGrid(t *testing.T) {
	const size, nb = 19, 3
	shape := []int{size, size}
	ref := spdMatrix(size, 13)
	runJob(t, 6, func(ctx context.Context, e *Env) error {
		a, err := FromGlobal(e, shape, Tiled(annotate.Row), ref)
		if err != nil {
			return err
		}
		ct, err := annotate.NewBlockCyclic(shape, annotate.Cyclic{RowBlock: nb, ColBlock: nb, GridRows: 2, GridCols: 3, ColMajor: true})
		if err != nil {
			return err
		}
		c := Retile(ctx, e, runtime.MakeReady(a), Layout{Tiling: &ct})
		l, err := gatheredDense(ctx, e, Cholesky(ctx, e, c))
		if err != nil {
			return err
		}
		var llt mat.Dense
		llt.Mul(l, l.T())
		if r := relResidual(mat.NewDense(size, size, ref), &llt); !(r <= tolerance(size)) {
			return fmt.Errorf("‖A − LLᵀ‖/‖A‖ = %g, want at most %g", r, tolerance(size))
		}
		return nil
	})
}

func TestCholeskyNotPositiveDefinite(t *testing.T) {
	const size, nb = 14, 3
	for _, n := range []int{1, 3, 4} {
		p, q := gridOfSize(n)
		for _, col := range []int{0, 7, 13} {
			for _, bad := range []float64{-1, math.NaN()} {
				t.Run(fmt.Sprintf("%d-localities/column-%d/%v", n, col, bad), func(t *testing.T) {
					g := spdMatrix(size, 5)
					// A negative or NaN pivot in column col once the columns
					// before it are eliminated: a zero row and column but
					// the diagonal.
					for k := range size {
						g[col*size+k], g[k*size+col] = 0, 0
					}
					g[col*size+col] = bad
					runJob(t, n, func(ctx context.Context, e *Env) error {
						a, err := toCyclic(ctx, e, []int{size, size}, g, nb, p, q)
						if err != nil {
							return err
						}
						_, err = Cholesky(ctx, e, a).Get(ctx)
						var npd *NotPositiveDefiniteError
						if !errors.As(err, &npd) {
							return fmt.Errorf("locality %d: got %v, want a NotPositiveDefiniteError", e.Locality(), err)
						}
						if npd.Column != col || !strings.Contains(err.Error(), fmt.Sprintf("column %d", col)) {
							return fmt.Errorf("locality %d: %v: want column %d", e.Locality(), err, col)
						}
						if !strings.Contains(err.Error(), "matrix fromglobal_") {
							return fmt.Errorf("locality %d: %v: want the array named", e.Locality(), err)
						}
						return nil
					})
				})
			}
		}
	}
}

func TestCholeskyBadInput(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		sq := globalData([]int{6, 6}, 1, 0, 1)
		row, err := FromGlobal(e, []int{6, 6}, Layout{Name: "rowtiled"}, sq)
		if err != nil {
			return err
		}
		if _, err := Cholesky(ctx, e, runtime.MakeReady(row)).Get(ctx); err == nil || !strings.Contains(err.Error(), "rowtiled/0") || !strings.Contains(err.Error(), "block-cyclically") {
			return fmt.Errorf("row-tiled input: got %v", err)
		}
		rect, err := toCyclic(ctx, e, []int{6, 4}, globalData([]int{6, 4}, 1, 0, 1), 2, 1, 2)
		if err != nil {
			return err
		}
		if _, err := Cholesky(ctx, e, rect).Get(ctx); err == nil || !strings.Contains(err.Error(), "want a square matrix") {
			return fmt.Errorf("6x4 input: got %v", err)
		}
		if _, err := BlockCyclic([]int{6, 6}, 7, 1, 2); err == nil || !strings.Contains(err.Error(), "larger than the matrix") {
			return fmt.Errorf("block of 7 on 6x6: got %v", err)
		}
		l, err := BlockCyclic([]int{6, 6}, 2, 2, 2)
		if err != nil {
			return err
		}
		if _, err := Retile(ctx, e, runtime.MakeReady(row), l).Get(ctx); err == nil || !strings.Contains(err.Error(), "4 tiles on 2 localities") {
			return fmt.Errorf("2x2 grid on 2 localities: got %v", err)
		}
		return nil
	})
}

// gateObserver holds the task named gate at its start until the task
// named awaited has ended (or a few seconds passed), and records which.
type gateObserver struct {
	gate, awaited string
	done          chan struct{}
	once          sync.Once
	mu            sync.Mutex
	names         map[string]bool
	heldUntilDone bool
}

func (o *gateObserver) TaskStart(i runtime.TaskInfo) {
	o.mu.Lock()
	o.names[i.Name] = true
	o.mu.Unlock()
	if i.Name != o.gate {
		return
	}
	select {
	case <-o.done:
		o.mu.Lock()
		o.heldUntilDone = true
		o.mu.Unlock()
	case <-time.After(5 * time.Second):
	}
}

func (o *gateObserver) TaskStop(i runtime.TaskInfo) {
	if i.Name == o.awaited {
		o.once.Do(func() { close(o.done) })
	}
}
func (o *gateObserver) TaskYield(runtime.TaskInfo)  {}
func (o *gateObserver) TaskResume(runtime.TaskInfo) {}

// TestCholeskyLookahead checks that the tile tasks are named after their
// kernel and tiles (an update of a chunk of a column's tiles after its
// first and last tile row), and that the panel of step 1 is factored while
// the trailing update of step 0 has not ended: the last gemm of step 0 is
// held at its start until potrf(1,1) has run, which it could not if the
// panel waited for the whole update.
func TestCholeskyLookahead(t *testing.T) {
	const size, nb = 48, 4
	nt := size / nb
	o := &gateObserver{gate: fmt.Sprintf("gemm(%d,%d,0)", nt-1, nt-1), awaited: "potrf(1,1)", done: make(chan struct{}), names: map[string]bool{}}
	ref := spdMatrix(size, 8)
	runJobWith(t, 1, 20*time.Second, runtime.Config{Lanes: 2, Observer: o}, func(ctx context.Context, e *Env) error {
		a, err := toCyclic(ctx, e, []int{size, size}, ref, nb, 1, 1)
		if err != nil {
			return err
		}
		_, err = Cholesky(ctx, e, a).Get(ctx)
		return err
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, name := range []string{"potrf(0,0)", "trsm(1,0)", "gemm(1,1,0)", fmt.Sprintf("gemm(2:%d,1,0)", cholChunk-1), fmt.Sprintf("gemm(%d:%d,1,0)", cholChunk, nt-1), "potrf(11,11)", o.gate} {
		if !o.names[name] {
			t.Fatalf("no task named %s ran", name)
		}
	}
	if !o.heldUntilDone {
		t.Fatalf("potrf(1,1) did not run while %s was held: the panel waits for the whole update", o.gate)
	}
}
