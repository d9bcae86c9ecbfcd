package primitives

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// splitSpans cuts [0, d) into n spans as annotate does: the first d%n get
// one element more.
func splitSpans(d, n int) []annotate.Span {
	out := make([]annotate.Span, n)
	at := 0
	for i := range n {
		l := d / n
		if i < d%n {
			l++
		}
		out[i] = annotate.Span{Start: at, Stop: at + l}
		at += l
	}
	return out
}

// gridLayout is the layout of an r x c grid of blocks of shape, tile (i, j)
// on locality i*c+j, with the given row and column spans.
func gridLayout(t *testing.T, shape []int, rows, cols []annotate.Span) Layout {
	t.Helper()
	var blocks []annotate.Block
	for _, r := range rows {
		for _, c := range cols {
			blocks = append(blocks, annotate.Block{r, c})
		}
	}
	tl, err := annotate.NewUser(shape, blocks)
	if err != nil {
		t.Fatal(err)
	}
	return Layout{Tiling: &tl}
}

// refProduct is the single-process product of row-major m x k and k x n.
func refProduct(a, b []float64, m, k, n int) []float64 {
	var c mat.Dense
	c.Mul(mat.NewDense(m, k, a), mat.NewDense(k, n, b))
	return c.RawMatrix().Data
}

// gridOfLocalities is the r x c grid CannonProduct uses on p localities
// for square-ish operands: q x q when p = q², else the sym grid of rows.
func productGrid(p int) (r, c int) {
	for q := 1; q*q <= p; q++ {
		if q*q == p {
			return q, q
		}
	}
	return p, 1
}

func TestCannonProductMatchesGonum(t *testing.T) {
	// 9 and 16: grids where a row's or column's tiles return to their
	// owners at a middle step of Cannon, whose shift then moves nothing.
	for _, p := range []int{1, 2, 3, 4, 5, 9, 16} {
		for _, dims := range [][3]int{{7, 7, 7}, {13, 13, 13}, {50, 50, 50}, {7, 13, 5}, {13, 6, 11}} {
			m, k, n := dims[0], dims[1], dims[2]
			r, c := productGrid(p)
			algo := "SUMMA"
			if r == c {
				algo = "Cannon"
			}
			t.Run(fmt.Sprintf("%d-localities/%s/%dx%dx%d", p, algo, m, k, n), func(t *testing.T) {
				if r > min(m, k) || c > min(k, n) {
					t.Skipf("a %dx%d grid does not fit %dx%d times %dx%d", r, c, m, k, k, n)
				}
				ga := globalData([]int{m, k}, 1, -1, 1)
				gb := globalData([]int{k, n}, 2, -1, 1)
				want := refProduct(ga, gb, m, k, n)
				// A's column spans equal B's row spans when both cut k in
				// the same number of pieces (Cannon); SUMMA takes any.
				la := gridLayout(t, []int{m, k}, splitSpans(m, r), splitSpans(k, c))
				lb := gridLayout(t, []int{k, n}, splitSpans(k, r), splitSpans(n, c))
				runJob(t, p, func(ctx context.Context, e *Env) error {
					a, err := FromGlobal(e, []int{m, k}, la, ga)
					if err != nil {
						return err
					}
					b, err := FromGlobal(e, []int{k, n}, lb, gb)
					if err != nil {
						return err
					}
					x, err := CannonProduct(ctx, e, runtime.MakeReady(a), runtime.MakeReady(b)).Get(ctx)
					if err != nil {
						return err
					}
					if got := x.Shape(); got[0] != m || got[1] != n {
						return fmt.Errorf("product of shape %v, want [%d %d]", got, m, n)
					}
					if want := "fromglobal_1~3/1"; x.Name() != want { // derived from A
						return fmt.Errorf("product named %s, want %s", x.Name(), want)
					}
					return checkTile(x, want, "A·B")
				})
			})
		}
	}
}

// TestCannonProductSymAndChained multiplies sym-tiled square matrices (the
// layout a user asks for) and feeds the product into another product.
func TestCannonProductSymAndChained(t *testing.T) {
	for p := 1; p <= 5; p++ {
		t.Run(fmt.Sprintf("%d-localities", p), func(t *testing.T) {
			const n = 13
			ga := globalData([]int{n, n}, 3, -1, 1)
			gb := globalData([]int{n, n}, 4, -1, 1)
			want := refProduct(refProduct(ga, gb, n, n, n), ga, n, n, n)
			runJob(t, p, func(ctx context.Context, e *Env) error {
				a, err := FromGlobal(e, []int{n, n}, Tiled(annotate.Sym), ga)
				if err != nil {
					return err
				}
				b, err := FromGlobal(e, []int{n, n}, Tiled(annotate.Sym), gb)
				if err != nil {
					return err
				}
				fa := runtime.MakeReady(a)
				ab := CannonProduct(ctx, e, fa, runtime.MakeReady(b))
				x, err := CannonProduct(ctx, e, ab, fa).Get(ctx)
				if err != nil {
					return err
				}
				return checkTile(x, want, "(A·B)·A")
			})
		})
	}
}

// TestCannonProductMemory checks that a locality holds its own tiles and
// at most two tiles (or panels) per operand in flight, never a gathered
// matrix, by the Env's array memory counters.
func TestCannonProductMemory(t *testing.T) {
	for _, p := range []int{4, 2, 3} {
		t.Run(fmt.Sprintf("%d-localities", p), func(t *testing.T) {
			const n = 50
			g := globalData([]int{n, n}, 5, -1, 1)
			runJob(t, p, func(ctx context.Context, e *Env) error {
				a, err := FromGlobal(e, []int{n, n}, Tiled(annotate.Sym), g)
				if err != nil {
					return err
				}
				before := e.Counters()
				x, err := CannonProduct(ctx, e, runtime.MakeReady(a), runtime.MakeReady(a)).Get(ctx)
				if err != nil {
					return err
				}
				after := e.Counters()
				maxTile := 0
				for _, tl := range a.ann.Tiling.Tiles {
					maxTile = max(maxTile, 8*tl.Owned.Size())
				}
				own := int64(8 * (2*len(a.Local()) + len(x.Local())))
				bound := own + int64(2*2*maxTile)
				if after.PeakArrayBytes > bound {
					return fmt.Errorf("locality %d: peak array memory %d bytes, want at most %d (own tiles %d + 2 tiles in flight per operand of at most %d bytes)",
						e.Locality(), after.PeakArrayBytes, bound, own, maxTile)
				}
				// The product's tile and what travelled are counted: at
				// least C's tile, and one tile more when any moved.
				least := before.LiveArrayBytes + int64(8*len(x.Local()))
				if p > 1 {
					least += int64(8 * len(a.Local()))
				}
				if after.PeakArrayBytes < least {
					return fmt.Errorf("locality %d: peak array memory %d bytes, want at least %d: the buffers in flight are not counted", e.Locality(), after.PeakArrayBytes, least)
				}
				if got, want := after.LiveArrayBytes, before.LiveArrayBytes+int64(8*len(x.Local())); got != want {
					return fmt.Errorf("locality %d: %d bytes of arrays live after the product, want %d (the product's tile): buffers in flight not released", e.Locality(), got, want)
				}
				return nil
			})
		})
	}
}

// productError runs CannonProduct of a and b made by mk on p localities
// and returns every locality's error.
func productErrors(t *testing.T, p int, mk func(e *Env) (a, b *runtime.Future[*Array], err error)) []error {
	t.Helper()
	errs := make([]error, p)
	runJob(t, p, func(ctx context.Context, e *Env) error {
		a, b, err := mk(e)
		if err != nil {
			return err
		}
		_, errs[e.Locality()] = CannonProduct(ctx, e, a, b).Get(ctx)
		return nil
	})
	return errs
}

func TestCannonProductBadInput(t *testing.T) {
	ready := func(e *Env, shape []int, l Layout) (*runtime.Future[*Array], error) {
		x, err := FromGlobal(e, shape, l, make([]float64, size(shape)))
		if err != nil {
			return nil, err
		}
		return runtime.MakeReady(x), nil
	}
	both := func(sa []int, la Layout, sb []int, lb Layout) func(e *Env) (a, b *runtime.Future[*Array], err error) {
		return func(e *Env) (a, b *runtime.Future[*Array], err error) {
			if a, err = ready(e, sa, la); err != nil {
				return
			}
			b, err = ready(e, sb, lb)
			return
		}
	}
	cases := []struct {
		name  string
		p     int
		mk    func(e *Env) (a, b *runtime.Future[*Array], err error)
		wants []string
	}{
		{"not conformable", 4, both([]int{7, 5}, Tiled(annotate.Sym), []int{7, 5}, Tiled(annotate.Sym)),
			[]string{"CannonProduct on locality", "of shape [7 5]", "not conformable", "5 columns against 7 rows"}},
		{"not a square grid for Cannon", 4, both([]int{8, 8}, Tiled(annotate.Row), []int{8, 8}, Tiled(annotate.Sym)),
			[]string{"tiled as a 4x1 grid", "wants a 2x2 grid", "retile"}},
		{"spans do not conform", 4, func(e *Env) (a, b *runtime.Future[*Array], err error) {
			s := []annotate.Span{{Start: 0, Stop: 3}, {Start: 3, Stop: 7}}
			if a, err = ready(e, []int{7, 7}, gridLayout(t, []int{7, 7}, splitSpans(7, 2), splitSpans(7, 2))); err != nil {
				return
			}
			b, err = ready(e, []int{7, 7}, gridLayout(t, []int{7, 7}, s, splitSpans(7, 2)))
			return
		}, []string{"do not conform for Cannon", "holds columns [0, 4)", "holds rows [0, 3)", "on locality 0"}},
		{"different grids for SUMMA", 2, both([]int{6, 6}, Tiled(annotate.Row), []int{6, 6}, Tiled(annotate.Column)),
			[]string{"a 2x1 grid", "a 1x2 grid", "same grid"}},
		{"1-D", 3, both([]int{6}, Tiled(annotate.Row), []int{6}, Tiled(annotate.Row)),
			[]string{"want a non-empty 2-D matrix"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for l, err := range productErrors(t, tc.p, tc.mk) {
				if err == nil {
					t.Fatalf("locality %d: no error", l)
				}
				for _, w := range tc.wants {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("locality %d: error %q does not say %q", l, err, w)
					}
				}
			}
		})
	}
}

// TestCannonProductFailedInput fails an input on one locality only: every
// locality's product fails, none waits for its tiles.
func TestCannonProductFailedInput(t *testing.T) {
	for _, p := range []int{4, 3} {
		t.Run(fmt.Sprintf("%d-localities", p), func(t *testing.T) {
			cause := errors.New("the input broke")
			errs := productErrors(t, p, func(e *Env) (a, b *runtime.Future[*Array], err error) {
				x, err := FromGlobal(e, []int{8, 8}, Tiled(annotate.Sym), make([]float64, 64))
				if err != nil {
					return nil, nil, err
				}
				a = runtime.MakeReady(x)
				if e.Locality() == 1 {
					return a, runtime.MakeFailed[*Array](cause), nil
				}
				return a, a, nil
			})
			for l, err := range errs {
				if err == nil {
					t.Fatalf("locality %d: no error", l)
				}
				if !strings.Contains(err.Error(), cause.Error()) {
					t.Errorf("locality %d: error %q does not name the cause %q", l, err, cause)
				}
			}
		})
	}
}

// TestSUMMAGrids runs SUMMA on every grid shape of non-square locality
// counts, with A's column boundaries and B's row boundaries cut
// differently (c pieces against r).
func TestSUMMAGrids(t *testing.T) {
	for _, g := range [][2]int{{1, 2}, {2, 1}, {1, 3}, {3, 1}, {1, 5}, {2, 3}, {3, 2}} {
		r, c := g[0], g[1]
		const m, k, n = 13, 11, 7
		t.Run(fmt.Sprintf("%dx%d", r, c), func(t *testing.T) {
			ga := globalData([]int{m, k}, 6, -1, 1)
			gb := globalData([]int{k, n}, 7, -1, 1)
			want := refProduct(ga, gb, m, k, n)
			la := gridLayout(t, []int{m, k}, splitSpans(m, r), splitSpans(k, c))
			lb := gridLayout(t, []int{k, n}, splitSpans(k, r), splitSpans(n, c))
			runJob(t, r*c, func(ctx context.Context, e *Env) error {
				a, err := FromGlobal(e, []int{m, k}, la, ga)
				if err != nil {
					return err
				}
				b, err := FromGlobal(e, []int{k, n}, lb, gb)
				if err != nil {
					return err
				}
				x, err := CannonProduct(ctx, e, runtime.MakeReady(a), runtime.MakeReady(b)).Get(ctx)
				if err != nil {
					return err
				}
				if !x.LocalBlock().Equal(annotate.Block{la.Tiling.Tiles[e.Locality()].Owned[0], lb.Tiling.Tiles[e.Locality()].Owned[1]}) {
					return fmt.Errorf("locality %d holds %v of the product", e.Locality(), x.LocalBlock())
				}
				return checkTile(x, want, "A·B")
			})
		})
	}
}

// TestCannonProductConcurrent issues independent products back to back,
// all in flight together: each call's messages stay its own.
func TestCannonProductConcurrent(t *testing.T) {
	for _, p := range []int{4, 3} {
		t.Run(fmt.Sprintf("%d-localities", p), func(t *testing.T) {
			const n = 29
			ga := globalData([]int{n, n}, 11, -1, 1)
			gb := globalData([]int{n, n}, 12, -1, 1)
			wants := [][]float64{refProduct(ga, gb, n, n, n), refProduct(gb, ga, n, n, n), refProduct(ga, ga, n, n, n)}
			runJob(t, p, func(ctx context.Context, e *Env) error {
				a, err := FromGlobal(e, []int{n, n}, Tiled(annotate.Sym), ga)
				if err != nil {
					return err
				}
				b, err := FromGlobal(e, []int{n, n}, Tiled(annotate.Sym), gb)
				if err != nil {
					return err
				}
				fa, fb := runtime.MakeReady(a), runtime.MakeReady(b)
				fs := []*runtime.Future[*Array]{CannonProduct(ctx, e, fa, fb), CannonProduct(ctx, e, fb, fa), CannonProduct(ctx, e, fa, fa)}
				for i := len(fs) - 1; i >= 0; i-- { // waited for in reverse
					x, err := fs[i].Get(ctx)
					if err != nil {
						return err
					}
					if err := checkTile(x, wants[i], fmt.Sprintf("product %d", i)); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
