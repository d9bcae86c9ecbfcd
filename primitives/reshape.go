package primitives

import (
	"context"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Reshape returns a with a new shape of 1 to 3 dimensions and the same
// elements in row-major order (numpy's reshape; one extent may be -1, the
// rest of the size). It moves no data: it is allowed when every tile of a,
// owned and held block alike, is one contiguous run of a's row-major
// order that is also a block of the new shape (whole rows of a row-tiled
// matrix become whole rows, pages or a vector's span). Each locality then
// copies its tile under the new tiling. Any other reshape would move
// elements between localities and fails the future naming the first tile
// that is not such a block (Retile a to rows first). The result is a
// derived result of a.
func Reshape(ctx context.Context, e *Env, a *runtime.Future[*Array], shape []int) *runtime.Future[*Array] {
	const op = "Reshape"
	shape = slices.Clone(shape)
	k := e.derive()
	return runtime.Then(ctx, a, func(_ context.Context, x *Array) (*Array, error) {
		if err := x.pin(e, op); err != nil {
			return nil, err
		}
		defer x.unpin()
		xs := x.ann.Tiling.Shape
		if len(xs) == 0 && e.Size() > 1 {
			return nil, e.errorf(op, "array %s is 0-d, held by every locality: only a broadcasting operand", x.Name())
		}
		out, ok := inferShape(shape, x.Size())
		if !ok {
			return nil, e.errorf(op, "array %s of shape %v: cannot reshape array of size %d into shape %s", x.Name(), xs, x.Size(), numpyShape(shape))
		}
		ann := derivedAnnotation(k, x)
		ann.Tiling = annotate.Tiling{Shape: out, Tiles: make([]annotate.Tile, len(x.ann.Tiling.Tiles))}
		for i, tl := range x.ann.Tiling.Tiles {
			owned, ok1 := reblock(xs, tl.Owned, out)
			held, ok2 := reblock(xs, tl.Halo, out)
			if !ok1 || !ok2 {
				return nil, e.errorf(op, "array %s of shape %v into shape %v would move data: locality %d's tile %v is not one block of the new shape; want every tile a contiguous run of whole rows (Retile it first)",
					x.Name(), xs, out, i, tl.Halo)
			}
			ann.Tiling.Tiles[i] = annotate.Tile{Owned: owned, Halo: held}
		}
		data := e.tileToSet(len(x.data))
		copy(data, x.data)
		return e.newArray(op, ann, data)
	})
}

// inferShape fills a -1 extent of shape for size elements and checks it.
func inferShape(shape []int, size int) ([]int, bool) {
	if len(shape) < 1 || len(shape) > annotate.MaxDims {
		return nil, false
	}
	out := slices.Clone(shape)
	known, free := 1, -1
	for d, v := range out {
		switch {
		case v == -1 && free < 0:
			free = d
		case v < 0:
			return nil, false
		default:
			known *= v
		}
	}
	if free >= 0 {
		if known == 0 || size%known != 0 {
			return nil, false
		}
		out[free] = size / known
		known *= out[free]
	}
	return out, known == size
}

// reblock returns block b of an array of shape as a block of the same
// elements in shape out, if b is one contiguous run of the row-major order
// that is a block there.
func reblock(shape []int, b annotate.Block, out []int) (annotate.Block, bool) {
	if b.Empty() {
		return nil, false
	}
	whole := annotate.WholeBlock(shape)
	if _, ok := contiguousIn(whole, b); !ok {
		return nil, false
	}
	st := strides(shape)
	s, e := 0, 0
	for d := range b {
		s += b[d].Start * st[d]
		e += (b[d].Stop - 1) * st[d]
	}
	e++
	ost := strides(out)
	// The outermost dimension d of out along which [s, e) is a span:
	// aligned to its stride and within one index of the dimensions above.
	for d := range out {
		if s%ost[d] != 0 || e%ost[d] != 0 {
			continue
		}
		if d > 0 && s/ost[d-1] != (e-1)/ost[d-1] {
			continue
		}
		r := make(annotate.Block, len(out))
		for i := range out {
			switch {
			case i < d:
				v := s / ost[i] % out[i]
				r[i] = annotate.Span{Start: v, Stop: v + 1}
			case i == d:
				r[i] = annotate.Span{Start: s / ost[d] % out[d], Stop: (e-1)/ost[d]%out[d] + 1}
			default:
				r[i] = annotate.Span{Start: 0, Stop: out[i]}
			}
		}
		return r, true
	}
	return nil, false
}

// strides returns the row-major strides of shape.
func strides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for d := len(shape) - 1; d >= 0; d-- {
		st[d] = s
		s *= shape[d]
	}
	return st
}
