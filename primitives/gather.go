package primitives

import (
	"context"
	"fmt"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// Whole is a whole array held by one locality, as AllGather returns it:
// its shape and its elements in row-major order.
type Whole struct {
	Shape []int
	Data  []float64
}

// At returns the element at the given global index, one per dimension.
func (w Whole) At(idx ...int) float64 {
	g := 0
	for d, i := range idx {
		g = g*w.Shape[d] + i
	}
	return w.Data[g]
}

// Dense returns a 2-D Whole as a gonum matrix sharing Data.
func (w Whole) Dense() (*mat.Dense, error) {
	if len(w.Shape) != 2 || w.Shape[0] == 0 || w.Shape[1] == 0 {
		return nil, fmt.Errorf("primitives: Dense of a whole array of shape %v: want a non-empty 2-D array", w.Shape)
	}
	return mat.NewDense(w.Shape[0], w.Shape[1], w.Data), nil
}

// AllGather returns the whole array a on every locality (all_gather_d):
// each locality sends the owned part of its tile to every other one
// through the Env's communicator (one AllToAllV, reserved when called), and
// each assembles the blocks by the annotation.
func AllGather(ctx context.Context, e *Env, a *runtime.Future[*Array]) *runtime.Future[Whole] {
	const op = "AllGather"
	return collective(ctx, e, op, func(ctx context.Context, r *runtime.Reservation) (Whole, error) {
		x, err := a.Get(ctx)
		if err != nil {
			return Whole{}, err
		}
		if err := x.pin(e, op); err != nil {
			return Whole{}, err
		}
		defer x.unpin()
		mine := x.ownedData()
		blocks := make([][]float64, e.comm.Size())
		for i := range blocks {
			blocks[i] = mine
		}
		got, err := r.AllToAllV(ctx, blocks).Get(ctx)
		if err != nil {
			return Whole{}, e.wrap(op, err)
		}
		shape := x.ann.Tiling.Shape
		// The caller's from now on: set whole below (every tile's owned
		// block, which together cover the array).
		data := runtime.NewTile(e.rt, annotate.WholeBlock(shape).Size(), runtime.TileOptions{Uncleared: true}).Float64s()
		w := Whole{Shape: slices.Clone(shape), Data: data}
		for i, t := range x.ann.Tiling.Tiles {
			if len(got[i]) != t.Owned.Size() {
				return Whole{}, e.errorf(op, "array %s: locality %d sent %d elements for its tile %v of %d",
					x.Name(), i, len(got[i]), t.Owned, t.Owned.Size())
			}
			k := 0
			walk(shape, t.Owned, t.Owned, func(_, g int) { w.Data[g] = got[i][k]; k++ })
		}
		return w, nil
	})
}
