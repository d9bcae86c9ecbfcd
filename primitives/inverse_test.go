package primitives

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// pivotingMatrix returns an n x n matrix that is well conditioned but
// needs row exchanges: a diagonally dominant matrix with its rows in
// reverse order, so no diagonal element is the column's largest.
func pivotingMatrix(n int, seed uint64) []float64 {
	r := globalData([]int{n, n}, seed, -1, 1)
	out := make([]float64, n*n)
	for i := range n {
		r[i*n+i] += float64(n)
		copy(out[(n-1-i)*n:(n-i)*n], r[i*n:(i+1)*n])
	}
	return out
}

func TestInverseMatchesGonum(t *testing.T) {
	for p := 1; p <= 5; p++ {
		for _, n := range []int{7, 13, 50} {
			t.Run(fmt.Sprintf("%d-localities/%dx%d", p, n, n), func(t *testing.T) {
				g := pivotingMatrix(n, uint64(n))
				var inv mat.Dense
				if err := inv.Inverse(mat.NewDense(n, n, g)); err != nil {
					t.Fatal(err)
				}
				want := inv.RawMatrix().Data
				runJob(t, p, func(ctx context.Context, e *Env) error {
					a, err := FromGlobal(e, []int{n, n}, Tiled(annotate.Row), g)
					if err != nil {
						return err
					}
					x, err := Inverse(ctx, e, runtime.MakeReady(a)).Get(ctx)
					if err != nil {
						return err
					}
					if !x.ann.Tiling.Equal(a.ann.Tiling) {
						return fmt.Errorf("inverse tiled as %v, want a's tiling", x.ann)
					}
					if want := "fromglobal_1~2/1"; x.Name() != want {
						return fmt.Errorf("inverse named %s, want %s", x.Name(), want)
					}
					return checkTile(x, want, "inverse")
				})
			})
		}
	}
}

// TestInverseTimesMatrix chains Inverse into CannonProduct: A⁻¹·A is the
// identity (on 1 locality Cannon, on 2 and 3 SUMMA over row tiles).
func TestInverseTimesMatrix(t *testing.T) {
	for _, p := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("%d-localities", p), func(t *testing.T) {
			const n = 13
			g := pivotingMatrix(n, 9)
			id := make([]float64, n*n)
			for i := range n {
				id[i*n+i] = 1
			}
			runJob(t, p, func(ctx context.Context, e *Env) error {
				a, err := FromGlobal(e, []int{n, n}, Tiled(annotate.Row), g)
				if err != nil {
					return err
				}
				fa := runtime.MakeReady(a)
				x, err := CannonProduct(ctx, e, Inverse(ctx, e, fa), fa).Get(ctx)
				if err != nil {
					return err
				}
				return checkTile(x, id, "A⁻¹·A")
			})
		})
	}
}

func TestInverseBadInput(t *testing.T) {
	const n = 4
	// Row 3 = row 1 + 2·row 2, exactly.
	singular := []float64{
		2, 1, 0, 3,
		1, 4, 1, 0,
		0, 1, 5, 2,
		1, 6, 11, 4,
	}
	cases := []struct {
		name  string
		p     int
		shape []int
		l     Layout
		data  []float64
		wants []string
	}{
		{"singular", 2, []int{n, n}, Tiled(annotate.Row), singular, []string{"Inverse on locality", "fromglobal_1/0", "singular to working precision", "column 3"}},
		{"singular on 4", 4, []int{n, n}, Tiled(annotate.Row), singular, []string{"singular to working precision", "column 3"}},
		{"zero", 3, []int{5, 5}, Tiled(annotate.Row), make([]float64, 25), []string{"singular", "max|a| is 0"}},
		{"not square", 2, []int{4, 6}, Tiled(annotate.Row), make([]float64, 24), []string{"shape [4 6]", "want a non-empty square 2-D matrix"}},
		{"not row-tiled", 4, []int{4, 4}, Tiled(annotate.Sym), make([]float64, 16), []string{"holds columns [0, 2)", "wants a row tiling", "retile"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, tc.p)
			runJob(t, tc.p, func(ctx context.Context, e *Env) error {
				a, err := FromGlobal(e, tc.shape, tc.l, tc.data)
				if err != nil {
					return err
				}
				_, errs[e.Locality()] = Inverse(ctx, e, runtime.MakeReady(a)).Get(ctx)
				return nil
			})
			for l, err := range errs {
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

// TestInverseFailedInput fails the input on one locality only: every
// locality's Inverse fails with that cause, none waits for a pivot.
func TestInverseFailedInput(t *testing.T) {
	const p = 3
	cause := "the matrix broke"
	errs := make([]error, p)
	runJob(t, p, func(ctx context.Context, e *Env) error {
		a, err := FromGlobal(e, []int{6, 6}, Tiled(annotate.Row), pivotingMatrix(6, 1))
		if err != nil {
			return err
		}
		f := runtime.MakeReady(a)
		if e.Locality() == 2 {
			f = runtime.MakeFailed[*Array](fmt.Errorf("%s", cause))
		}
		_, errs[e.Locality()] = Inverse(ctx, e, f).Get(ctx)
		return nil
	})
	for l, err := range errs {
		if err == nil || !strings.Contains(err.Error(), cause) {
			t.Errorf("locality %d: error %v, want one naming %q", l, err, cause)
		}
	}
}
