package primitives

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// triangularTestMatrix returns a full n x n matrix whose triangles are both
// well-conditioned triangular matrices: diagonal in [2, 3), the rest in
// [-1, 1)/n.
func triangularTestMatrix(n int, seed uint64) []float64 {
	g := globalData([]int{n, n}, seed, -1, 1)
	for i := range n {
		for j := range n {
			if i == j {
				g[i*n+j] = 2.5 + g[i*n+j]/2
			} else {
				g[i*n+j] /= float64(n)
			}
		}
	}
	return g
}

// opOf returns op(T) of kind as a dense matrix, from the full matrix g.
func opOf(g []float64, n int, kind Triangular) *mat.Dense {
	t := mat.NewDense(n, n, nil)
	for i := range n {
		for j := range n {
			in := (kind.Upper && j >= i) || (!kind.Upper && j <= i)
			switch {
			case i == j && kind.Unit:
				t.Set(i, j, 1)
			case in:
				t.Set(i, j, g[i*n+j])
			}
		}
	}
	if kind.Trans {
		var u mat.Dense
		u.CloneFrom(t.T())
		return &u
	}
	return t
}

func TestSolveTriangular(t *testing.T) {
	const n, r, nb = 13, 7, 3
	kinds := []Triangular{{}, {Trans: true}, {Upper: true}, {Upper: true, Trans: true, Unit: true}, {Unit: true}}
	for loc := 1; loc <= 6; loc++ {
		p, q := gridOfSize(loc)
		for _, kind := range kinds {
			t.Run(fmt.Sprintf("%d-localities/%v", loc, kind), func(t *testing.T) {
				tg := triangularTestMatrix(n, 11)
				bg := globalData([]int{n, r}, 12, -1, 1)
				var want mat.Dense
				if err := want.Solve(opOf(tg, n, kind), mat.NewDense(n, r, bg)); err != nil {
					t.Fatal(err)
				}
				runJob(t, loc, func(ctx context.Context, e *Env) error {
					tf, err := toCyclic(ctx, e, []int{n, n}, tg, nb, p, q)
					if err != nil {
						return err
					}
					bf, err := toCyclic(ctx, e, []int{n, r}, bg, nb, p, q)
					if err != nil {
						return err
					}
					x, err := gatheredDense(ctx, e, SolveTriangular(ctx, e, tf, bf, kind))
					if err != nil {
						return err
					}
					if d := relResidual(&want, x); !(d <= 1e-13) {
						return fmt.Errorf("‖X − X_gonum‖/‖X_gonum‖ = %g", d)
					}
					return nil
				})
			})
		}
	}
}

func TestSolveSPD(t *testing.T) {
	const n, r, nb = 17, 4, 3
	for loc := 1; loc <= 6; loc++ {
		p, q := gridOfSize(loc)
		if q > 1 && (r+nb-1)/nb < q {
			q, p = 1, loc // a grid whose columns the right-hand sides fill
		}
		t.Run(fmt.Sprintf("%d-localities", loc), func(t *testing.T) {
			ag := spdMatrix(n, 21)
			bg := globalData([]int{n, r}, 22, -1, 1)
			var want mat.Dense
			if err := want.Solve(mat.NewDense(n, n, ag), mat.NewDense(n, r, bg)); err != nil {
				t.Fatal(err)
			}
			runJob(t, loc, func(ctx context.Context, e *Env) error {
				af, err := toCyclic(ctx, e, []int{n, n}, ag, nb, p, q)
				if err != nil {
					return err
				}
				bf, err := toCyclic(ctx, e, []int{n, r}, bg, nb, p, q)
				if err != nil {
					return err
				}
				x, err := gatheredDense(ctx, e, SolveSPD(ctx, e, af, bf))
				if err != nil {
					return err
				}
				if d := relResidual(&want, x); !(d <= 1e-12) {
					return fmt.Errorf("‖X − X_gonum‖/‖X_gonum‖ = %g", d)
				}
				return nil
			})
		})
	}
}

func TestSolveTriangularBadInput(t *testing.T) {
	const n, nb = 13, 3
	runJob(t, 4, func(ctx context.Context, e *Env) error {
		tg := triangularTestMatrix(n, 3)
		tg[8*n+8] = 0
		tf, err := toCyclic(ctx, e, []int{n, n}, tg, nb, 2, 2)
		if err != nil {
			return err
		}
		bf, err := toCyclic(ctx, e, []int{n, 6}, globalData([]int{n, 6}, 4, -1, 1), nb, 2, 2)
		if err != nil {
			return err
		}
		_, err = SolveTriangular(ctx, e, tf, bf, Triangular{}).Get(ctx)
		var se *SingularError
		if !errors.As(err, &se) || se.Column != 8 || !strings.Contains(err.Error(), "column 8") {
			return fmt.Errorf("locality %d: zero pivot in column 8: got %v", e.Locality(), err)
		}
		// Unit diagonal: the zero is not read.
		if _, err := SolveTriangular(ctx, e, tf, bf, Triangular{Unit: true}).Get(ctx); err != nil {
			return err
		}
		bn := globalData([]int{n, 6}, 4, -1, 1)
		bn[17] = math.Inf(1)
		nanB, err := toCyclic(ctx, e, []int{n, 6}, bn, nb, 2, 2)
		if err != nil {
			return err
		}
		if _, err := SolveTriangular(ctx, e, tf, nanB, Triangular{Unit: true}).Get(ctx); err == nil || !strings.Contains(err.Error(), "holds NaN or Inf") {
			return fmt.Errorf("an Inf in B: got %v", err)
		}
		short, err := toCyclic(ctx, e, []int{10, 6}, globalData([]int{10, 6}, 4, -1, 1), nb, 2, 2)
		if err != nil {
			return err
		}
		if _, err := SolveTriangular(ctx, e, tf, short, Triangular{}).Get(ctx); err == nil || !strings.Contains(err.Error(), "does not conform") {
			return fmt.Errorf("10 right-hand side rows for 13: got %v", err)
		}
		other, err := toCyclic(ctx, e, []int{n, 6}, globalData([]int{n, 6}, 4, -1, 1), 2, 2, 2)
		if err != nil {
			return err
		}
		if _, err := SolveTriangular(ctx, e, tf, other, Triangular{}).Get(ctx); err == nil || !strings.Contains(err.Error(), "same blocks") {
			return fmt.Errorf("blocks of 2 and 3: got %v", err)
		}
		return nil
	})
}
