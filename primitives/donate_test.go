package primitives

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// Cholesky and LU of a donated matrix factor it in its own memory, with
// the same bits as of a matrix kept; the donated array is released.
func TestDonatedFactorisationsReuseTheInput(t *testing.T) {
	for _, loc := range []int{1, 4} {
		p, q := gridOfSize(loc)
		for _, op := range []string{"Cholesky", "LU"} {
			t.Run(fmt.Sprintf("%s/%d-localities", op, loc), func(t *testing.T) {
				const n, nb = 23, 4
				ref := spdMatrix(n, 5)
				runJob(t, loc, func(ctx context.Context, e *Env) error {
					factor := func(a *runtime.Future[*Array]) *runtime.Future[*Array] {
						if op == "LU" {
							return runtime.Then(ctx, LU(ctx, e, a), func(_ context.Context, f LUFactors) (*Array, error) { return f.LU, nil })
						}
						return Cholesky(ctx, e, a)
					}
					kept, err := toCyclic(ctx, e, []int{n, n}, ref, nb, p, q)
					if err != nil {
						return err
					}
					given, err := toCyclic(ctx, e, []int{n, n}, ref, nb, p, q)
					if err != nil {
						return err
					}
					x, err := given.Get(ctx)
					if err != nil {
						return err
					}
					mem := x.data
					want, err := factor(kept).Get(ctx)
					if err != nil {
						return err
					}
					got, err := factor(Donate(given)).Get(ctx)
					if err != nil {
						return err
					}
					if len(mem) > 0 && &got.data[0] != &mem[0] {
						return fmt.Errorf("locality %d: the result is not in the donated array's memory", e.Locality())
					}
					if _, err := Retile(ctx, e, given, Tiled(0)).Get(ctx); err == nil || !strings.Contains(err.Error(), "released") {
						return fmt.Errorf("the donated array read after the factorisation: got %v, want an error saying it was released", err)
					}
					w, err := gatheredDense(ctx, e, runtime.MakeReady(want))
					if err != nil {
						return err
					}
					g, err := gatheredDense(ctx, e, runtime.MakeReady(got))
					if err != nil {
						return err
					}
					for i := range n {
						for j := range n {
							if g.At(i, j) != w.At(i, j) {
								return fmt.Errorf("element (%d, %d) = %v in place, %v from a kept matrix", i, j, g.At(i, j), w.At(i, j))
							}
						}
					}
					return nil
				})
			})
		}
	}
}

// A donated array given to a primitive that does not reuse it is read as
// usual and released afterwards; a second primitive given it fails,
// naming it, and so does a factorisation where one locality keeps it.
func TestDonatedArrayGoesToOnePrimitive(t *testing.T) {
	const n, nb = 12, 3
	ref := spdMatrix(n, 7)
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		a, err := toCyclic(ctx, e, []int{n, n}, ref, nb, 1, 2)
		if err != nil {
			return err
		}
		d := Donate(a)
		if _, err := gatheredDense(ctx, e, d); err != nil {
			return fmt.Errorf("reading a donated array: %v", err)
		}
		_, err = Cholesky(ctx, e, d).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "donated") && !strings.Contains(err.Error(), "released") {
			return fmt.Errorf("a donated array taken twice: got %v, want an error naming it", err)
		}
		// Donated on locality 0 only: copied, still a correct factor.
		b, err := toCyclic(ctx, e, []int{n, n}, ref, nb, 1, 2)
		if err != nil {
			return err
		}
		if e.Locality() == 0 {
			b = Donate(b)
		}
		l, err := gatheredDense(ctx, e, Cholesky(ctx, e, b))
		if err != nil {
			return err
		}
		var llt mat.Dense
		llt.Mul(l, l.T())
		if r := relResidual(mat.NewDense(n, n, ref), &llt); !(r <= tolerance(n)) {
			return fmt.Errorf("‖A − LLᵀ‖/‖A‖ = %g with the array donated on one locality, want at most %g", r, tolerance(n))
		}
		return nil
	})
}
