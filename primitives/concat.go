package primitives

import (
	"context"
	"fmt"
	"slices"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// Concatenate returns the arrays xs joined along axis (numpy's
// concatenate(xs, axis); a negative axis counts from the end): they must
// have one number of dimensions and equal extents except along axis. The
// result is laid out by l (as Slice's: a few arrays joined need not keep
// any input's tiling) and named as a derived result of xs[0] unless
// l.Name is set. Each locality fills its new tile from the inputs: the
// elements it owns copied, the others fetched from their owners, each
// piece once (as Retile). No collective is used.
func Concatenate(ctx context.Context, e *Env, xs []*runtime.Future[*Array], axis int, l Layout) *runtime.Future[*Array] {
	const op = "Concatenate"
	return assemble(ctx, e, op, xs, l, func(in []*Array) ([]int, []annotate.Block, func(j int, b annotate.Block) annotate.Block, error) {
		s0 := in[0].ann.Tiling.Shape
		nd := len(s0)
		if axis < -nd || axis >= nd {
			return nil, nil, nil, fmt.Errorf("axis %d is out of bounds for array of dimension %d", axis, nd)
		}
		ax := axis
		if ax < 0 {
			ax += nd
		}
		shape := slices.Clone(s0)
		shape[ax] = 0
		places := make([]annotate.Block, len(in))
		for j, x := range in {
			s := x.ann.Tiling.Shape
			if len(s) != nd {
				return nil, nil, nil, fmt.Errorf("array %s of shape %v and %s of shape %v: all the input arrays must have same number of dimensions", in[0].Name(), s0, x.Name(), s)
			}
			for d := range s {
				if d != ax && s[d] != s0[d] {
					return nil, nil, nil, fmt.Errorf("array %s of shape %v and %s of shape %v: the extents must match except along axis %d", in[0].Name(), s0, x.Name(), s, ax)
				}
			}
			b := annotate.WholeBlock(s)
			b[ax] = annotate.Span{Start: shape[ax], Stop: shape[ax] + s[ax]}
			places[j] = b
			shape[ax] += s[ax]
		}
		return shape, places, func(j int, b annotate.Block) annotate.Block {
			src := b.Clone()
			src[ax] = annotate.Span{Start: b[ax].Start - places[j][ax].Start, Stop: b[ax].Stop - places[j][ax].Start}
			return src
		}, nil
	})
}

// Stack returns the arrays xs, of one shape of 1 or 2 dimensions, stacked
// along a new axis (numpy's stack(xs, axis)): the result has one dimension
// more, of extent len(xs), at axis. Layout, naming and communication are
// Concatenate's.
func Stack(ctx context.Context, e *Env, xs []*runtime.Future[*Array], axis int, l Layout) *runtime.Future[*Array] {
	const op = "Stack"
	return assemble(ctx, e, op, xs, l, func(in []*Array) ([]int, []annotate.Block, func(j int, b annotate.Block) annotate.Block, error) {
		s0 := in[0].ann.Tiling.Shape
		nd := len(s0) + 1
		if nd > annotate.MaxDims {
			return nil, nil, nil, fmt.Errorf("array %s of shape %v: stacking gives %d dimensions, at most %d are held", in[0].Name(), s0, nd, annotate.MaxDims)
		}
		if axis < -nd || axis >= nd {
			return nil, nil, nil, fmt.Errorf("axis %d is out of bounds for array of dimension %d", axis, nd)
		}
		ax := axis
		if ax < 0 {
			ax += nd
		}
		for _, x := range in {
			if !slices.Equal(x.ann.Tiling.Shape, s0) {
				return nil, nil, nil, fmt.Errorf("array %s of shape %v and %s of shape %v: all input arrays must have the same shape", in[0].Name(), s0, x.Name(), x.ann.Tiling.Shape)
			}
		}
		shape := slices.Insert(slices.Clone(s0), ax, len(in))
		places := make([]annotate.Block, len(in))
		for j := range in {
			b := annotate.WholeBlock(shape)
			b[ax] = annotate.Span{Start: j, Stop: j + 1}
			places[j] = b
		}
		return shape, places, func(_ int, b annotate.Block) annotate.Block {
			return slices.Delete(b.Clone(), ax, ax+1)
		}, nil
	})
}

// assemble makes the array that plan describes from the inputs: its
// shape, where each input goes (a block of the result) and the block of
// input j a block of the result inside its place comes from.
func assemble(ctx context.Context, e *Env, op string, xs []*runtime.Future[*Array], l Layout,
	plan func(in []*Array) ([]int, []annotate.Block, func(j int, b annotate.Block) annotate.Block, error)) *runtime.Future[*Array] {
	if len(xs) == 0 {
		return runtime.MakeFailed[*Array](e.errorf(op, "need at least one array"))
	}
	k := e.derive()
	return runtime.Dataflow(ctx, func(ctx context.Context, in []*Array) (*Array, error) {
		if err := pinAll(e, op, in...); err != nil {
			return nil, err
		}
		defer unpinAll(in...)
		shape, places, toSrc, err := plan(in)
		if err != nil {
			return nil, e.errorf(op, "%v", err)
		}
		t, err := e.tiling(op, shape, l)
		if err != nil {
			return nil, fmt.Errorf("%w (joining %d arrays, first %s)", err, len(in), in[0].Name())
		}
		for _, x := range in {
			if err := e.adopt(op, x); err != nil {
				return nil, err
			}
		}
		h := t.Tiles[e.Locality()].Halo
		data := e.tileToSet(h.Size())
		for j, x := range in {
			region, ok := h.Intersect(places[j])
			if !ok {
				continue
			}
			buf, mem, err := e.blockOf(ctx, op, x, toSrc(j, region))
			if err != nil {
				return nil, err
			}
			copyBlock(data, h, buf, region, region)
			mem.Release()
		}
		ann := derivedAnnotation(k, in...)
		ann.Tiling = t
		if l.Name != "" {
			ann.Name = l.Name
		}
		return e.newArray(op, ann, data)
	}, xs...)
}
