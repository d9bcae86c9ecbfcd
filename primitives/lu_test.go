package primitives

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// luGrids are the grids LU is tried on with loc localities: 1 x loc, and
// a grid with more than one row when loc has one.
func luGrids(loc int) [][2]int {
	out := [][2]int{{1, loc}}
	if p, q := gridOfSize(loc); p > 1 {
		out = append(out, [2]int{p, q})
	}
	if loc == 2 {
		out = append(out, [2]int{2, 1})
	}
	return out
}

func TestLU(t *testing.T) {
	for loc := 1; loc <= 6; loc++ {
		for _, gr := range luGrids(loc) {
			for _, c := range []struct{ n, nb int }{{23, 3}, {13, 2}} {
				t.Run(fmt.Sprintf("%d-localities/%dx%d/n=%d,nb=%d", loc, gr[0], gr[1], c.n, c.nb), func(t *testing.T) {
					ag := globalData([]int{c.n, c.n}, uint64(c.n), -1, 1)
					runJob(t, loc, func(ctx context.Context, e *Env) error {
						a, err := toCyclic(ctx, e, []int{c.n, c.n}, ag, c.nb, gr[0], gr[1])
						if err != nil {
							return err
						}
						f, err := LU(ctx, e, a).Get(ctx)
						if err != nil {
							return err
						}
						if len(f.Pivots) != c.n {
							return fmt.Errorf("%d pivots, want %d", len(f.Pivots), c.n)
						}
						lu, err := gatheredDense(ctx, e, runtime.MakeReady(f.LU))
						if err != nil {
							return err
						}
						l, u := mat.NewDense(c.n, c.n, nil), mat.NewDense(c.n, c.n, nil)
						for i := range c.n {
							for j := range c.n {
								switch {
								case i > j:
									l.Set(i, j, lu.At(i, j))
								case i == j:
									l.Set(i, j, 1)
									u.Set(i, j, lu.At(i, j))
								default:
									u.Set(i, j, lu.At(i, j))
								}
							}
						}
						pa := mat.NewDense(c.n, c.n, append([]float64(nil), ag...))
						for r, s := range f.Pivots {
							if s < r || s >= c.n {
								return fmt.Errorf("pivot %d of row %d: want a row in [%d, %d)", s, r, r, c.n)
							}
							ra, sa := mat.Row(nil, r, pa), mat.Row(nil, s, pa)
							pa.SetRow(r, sa)
							pa.SetRow(s, ra)
						}
						var prod mat.Dense
						prod.Mul(l, u)
						if res := relResidual(pa, &prod); !(res <= tolerance(c.n)) {
							return fmt.Errorf("‖PA − LU‖/‖A‖ = %g, want at most %g", res, tolerance(c.n))
						}
						return nil
					})
				})
			}
		}
	}
}

func TestSolveLU(t *testing.T) {
	const n, r, nb = 19, 3, 3
	for loc := 1; loc <= 6; loc++ {
		for _, gr := range luGrids(loc) {
			t.Run(fmt.Sprintf("%d-localities/%dx%d", loc, gr[0], gr[1]), func(t *testing.T) {
				ag := globalData([]int{n, n}, 31, -1, 1)
				bg := globalData([]int{n, r * loc}, 32, -1, 1)
				var want mat.Dense
				if err := want.Solve(mat.NewDense(n, n, ag), mat.NewDense(n, r*loc, bg)); err != nil {
					t.Fatal(err)
				}
				runJob(t, loc, func(ctx context.Context, e *Env) error {
					af, err := toCyclic(ctx, e, []int{n, n}, ag, nb, gr[0], gr[1])
					if err != nil {
						return err
					}
					bf, err := toCyclic(ctx, e, []int{n, r * loc}, bg, nb, gr[0], gr[1])
					if err != nil {
						return err
					}
					x, err := gatheredDense(ctx, e, SolveLU(ctx, e, af, bf))
					if err != nil {
						return err
					}
					if d := relResidual(&want, x); !(d <= 1e-10) {
						return fmt.Errorf("‖X − X_gonum‖/‖X_gonum‖ = %g", d)
					}
					return nil
				})
			})
		}
	}
}

func TestLUSingularAndBadInput(t *testing.T) {
	const n, nb = 14, 3
	for _, loc := range []int{1, 3, 4} {
		t.Run(fmt.Sprintf("%d-localities", loc), func(t *testing.T) {
			ag := globalData([]int{n, n}, 41, -1, 1)
			for i := range n {
				ag[i*n+7] = 0
			}
			runJob(t, loc, func(ctx context.Context, e *Env) error {
				a, err := toCyclic(ctx, e, []int{n, n}, ag, nb, 1, loc)
				if err != nil {
					return err
				}
				_, err = LU(ctx, e, a).Get(ctx)
				var se *SingularError
				if !errors.As(err, &se) || se.Column != 7 || !strings.Contains(err.Error(), "column 7") {
					return fmt.Errorf("locality %d: a zero column 7: got %v", e.Locality(), err)
				}
				b, err := toCyclic(ctx, e, []int{n, 2 * loc}, globalData([]int{n, 2 * loc}, 1, 0, 1), 2, 1, loc)
				if err != nil {
					return err
				}
				if _, err := SolveLU(ctx, e, a, b).Get(ctx); !errors.As(err, &se) {
					return fmt.Errorf("locality %d: SolveLU of a singular matrix: got %v", e.Locality(), err)
				}
				if loc == 4 {
					sq, err := toCyclic(ctx, e, []int{n, n}, ag, nb, 2, 2)
					if err != nil {
						return err
					}
					if _, err := LU(ctx, e, sq).Get(ctx); !errors.As(err, &se) || se.Column != 7 {
						return fmt.Errorf("locality %d: a zero column 7 on a 2x2 grid: got %v", e.Locality(), err)
					}
				}
				return nil
			})
		})
	}
}
