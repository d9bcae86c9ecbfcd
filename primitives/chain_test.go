package primitives

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// A program is a chain of futures that blocks only at the end; its
// results equal the single-process reference.
func TestChainedProgram(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			shape := []int{7, 5}
			l := Tiled(annotate.Sym)
			r := Random(ctx, e, shape, l, 3)
			c := Constant(ctx, e, shape, l, 0.5)
			prod := Mul(ctx, e, r, c)
			sum := Sum(ctx, e, prod)
			mask := NotEqualScalar(ctx, e, GreaterScalar(ctx, e, r, 0.5), 0) // _ne(r > 0.5, 0.0, true)
			count := Sum(ctx, e, mask)
			tr := Transpose(ctx, e, Exp(ctx, e, prod))
			amax := ArgMax(ctx, e, tr)
			gathered := AllGather(ctx, e, tr)
			mean := Mean(ctx, e, Sub(ctx, e, r, r))

			// The reference, in one process.
			m := size(shape)
			var wantSum, wantCount float64
			ref := make([]float64, m)
			for g := range m {
				u := uniformAt(3, uint64(g))
				wantSum += u * 0.5
				wantCount += boolf(u > 0.5)
				ref[g] = math.Exp(u * 0.5)
			}
			refT := refTranspose(shape, ref)
			wantArg := 0
			for i, v := range refT {
				if v > refT[wantArg] {
					wantArg = i
				}
			}

			if got, err := sum.Get(ctx); err != nil || !closeTo(got, wantSum, 1e-12) {
				return fmt.Errorf("Sum(Mul(Random, Constant)) = %v, %v; want %v", got, err, wantSum)
			}
			if got, err := count.Get(ctx); err != nil || got != wantCount {
				return fmt.Errorf("count = %v, %v; want %v", got, err, wantCount)
			}
			if got, err := amax.Get(ctx); err != nil || got != wantArg {
				return fmt.Errorf("ArgMax(Transpose(Exp)) = %v, %v; want %v", got, err, wantArg)
			}
			w, err := gathered.Get(ctx)
			if err != nil {
				return err
			}
			for i := range refT {
				if !closeTo(w.Data[i], refT[i], 1e-12) {
					return fmt.Errorf("gathered element %d: %v, want %v", i, w.Data[i], refT[i])
				}
			}
			if got, err := mean.Get(ctx); err != nil || got != 0 {
				return fmt.Errorf("Mean(r - r) = %v, %v", got, err)
			}
			return nil
		})
	})
}

func TestArrayAccessors(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		x, err := Random(ctx, e, []int{7, 5}, Layout{Name: "m"}, 1).Get(ctx)
		if err != nil {
			return err
		}
		d, err := x.Dense()
		if err != nil {
			return err
		}
		r, c := d.Dims()
		b := x.LocalBlock()
		if r != b[0].Len() || c != 5 || &d.RawMatrix().Data[0] != &x.Local()[0] {
			return fmt.Errorf("Dense view %dx%d of tile %v does not share the tile", r, c, b)
		}
		if x.Name() != "m/0" || x.NDim() != 2 || x.Size() != 35 || !x.OwnedBlock().Equal(b) {
			return fmt.Errorf("accessors: %s %d %d %v", x.Name(), x.NDim(), x.Size(), x.OwnedBlock())
		}
		if _, err := Transpose(ctx, e, runtime.MakeReady(x)).Get(ctx); err != nil {
			return err
		}
		v, _ := Zeros(ctx, e, []int{13}, Layout{}).Get(ctx)
		if _, err := v.Dense(); err == nil {
			return fmt.Errorf("Dense of a vector: no error")
		}
		// NewArray keeps the caller's tile.
		tl := make([]float64, x.LocalBlock().Size())
		y, err := NewArray(e, []int{7, 5}, Layout{Name: "y"}, tl)
		if err != nil || &y.Local()[0] != &tl[0] {
			return fmt.Errorf("NewArray: %v", err)
		}
		if _, err := NewArray(e, []int{7, 5}, Layout{Name: "z"}, tl[1:]); err == nil {
			return fmt.Errorf("NewArray with a short tile: no error")
		}
		if _, err := FromGlobal(e, []int{7, 5}, Layout{}, make([]float64, 34)); err == nil {
			return fmt.Errorf("FromGlobal with 34 elements for 35: no error")
		}
		return nil
	})
}
