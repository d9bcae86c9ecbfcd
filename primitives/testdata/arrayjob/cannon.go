package main

import (
	"context"
	"fmt"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// cannon: CannonProduct of two sym-tiled 37x37 matrices (Cannon on 1 and
// 4 localities, SUMMA on 2, 3 and 5) chained into a second product, and
// the Inverse of a row-tiled matrix that needs pivoting, each against
// gonum in this process.
func cannon(ctx context.Context, e *primitives.Env) error {
	const n = 37
	shape := []int{n, n}
	ga, gb := values(n*n, 3), values(n*n, 4)
	a, err := primitives.FromGlobal(e, shape, primitives.Tiled(annotate.Sym), ga)
	if err != nil {
		return err
	}
	b, err := primitives.FromGlobal(e, shape, primitives.Tiled(annotate.Sym), gb)
	if err != nil {
		return err
	}
	var ab, aba mat.Dense
	ab.Mul(mat.NewDense(n, n, ga), mat.NewDense(n, n, gb))
	aba.Mul(&ab, mat.NewDense(n, n, ga))
	fa := runtime.MakeReady(a)
	fab := primitives.CannonProduct(ctx, e, fa, runtime.MakeReady(b))
	faba := primitives.CannonProduct(ctx, e, fab, fa)
	for _, c := range []struct {
		what string
		f    *runtime.Future[*primitives.Array]
		want *mat.Dense
	}{{"A·B", fab, &ab}, {"(A·B)·A", faba, &aba}} {
		x, err := c.f.Get(ctx)
		if err != nil {
			return err
		}
		if err := sameValues(c.what, x.Local(), localPart(x, c.want.RawMatrix().Data), 1e-12); err != nil {
			return err
		}
	}

	// A diagonally dominant matrix with its rows reversed: well
	// conditioned, and every step must pick a pivot off the diagonal.
	g := make([]float64, n*n)
	v := values(n*n, 5)
	for i := range n {
		v[i*n+i] += 2 * n
		copy(g[(n-1-i)*n:(n-i)*n], v[i*n:(i+1)*n])
	}
	var inv mat.Dense
	if err := inv.Inverse(mat.NewDense(n, n, g)); err != nil {
		return err
	}
	m, err := primitives.FromGlobal(e, shape, primitives.Tiled(annotate.Row), g)
	if err != nil {
		return err
	}
	x, err := primitives.Inverse(ctx, e, runtime.MakeReady(m)).Get(ctx)
	if err != nil {
		return err
	}
	if err := sameValues("inverse", x.Local(), localPart(x, inv.RawMatrix().Data), 1e-12); err != nil {
		return fmt.Errorf("%w (inverse of %s)", err, m.Name())
	}
	return nil
}
