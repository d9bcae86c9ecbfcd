package primitives

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// binaryCase is an element-wise primitive and numpy's meaning of it.
type binaryCase struct {
	name string
	f    func(ctx context.Context, e *Env, a, b *runtime.Future[*Array]) *runtime.Future[*Array]
	ref  func(x, y float64) float64
}

var binaryCases = []binaryCase{
	{"Add", Add, func(x, y float64) float64 { return x + y }},
	{"Sub", Sub, func(x, y float64) float64 { return x - y }},
	{"Mul", Mul, func(x, y float64) float64 { return x * y }},
	{"Div", Div, func(x, y float64) float64 { return x / y }},
	{"Less", Less, func(x, y float64) float64 { return boolf(x < y) }},
	{"GreaterEqual", GreaterEqual, func(x, y float64) float64 { return boolf(x >= y) }},
	{"Maximum", Maximum, math.Max},
	{"Minimum", Minimum, math.Min},
	{"Pow", Pow, math.Pow},
}

// operandLayouts are the layouts an operand of shape is tried in: every
// kind that fits and an uneven explicit one; none for a 0-d operand.
func operandLayouts(shape []int, n int) []Layout {
	if len(shape) == 0 {
		return []Layout{{}}
	}
	return testLayouts(shape, n)
}

// makeOperand builds the array of shape laid out by l from global (a
// Scalar for a 0-d shape).
func makeOperand(ctx context.Context, e *Env, shape []int, l Layout, global []float64) (*runtime.Future[*Array], error) {
	if len(shape) == 0 {
		return Scalar(ctx, e, global[0]), nil
	}
	x, err := FromGlobal(e, shape, l, global)
	if err != nil {
		return nil, err
	}
	return runtime.MakeReady(x), nil
}

// wantFetched is the bytes this locality must fetch to read operand x
// for the result block h of shape out: nothing when its tile holds the
// block h broadcasts from, else that block less what x's tile owns of it.
func wantFetched(x *Array, out []int, h annotate.Block) uint64 {
	xs := x.Shape()
	off := len(out) - len(xs)
	b := make(annotate.Block, len(xs))
	for d := range xs {
		b[d] = h[off+d]
		if xs[d] == 1 {
			b[d] = annotate.Span{Start: 0, Stop: 1}
		}
	}
	if x.LocalBlock().Contains(b) {
		return 0
	}
	own := 0
	if p, ok := x.OwnedBlock().Intersect(b); ok {
		own = p.Size()
	}
	return uint64(8 * (b.Size() - own))
}

func TestBroadcast(t *testing.T) {
	pairs := [][2][]int{
		{{7, 5}, {5}}, {{5}, {7, 5}}, {{7, 5}, {7, 1}}, {{7, 5}, {1, 5}}, {{7, 1}, {1, 5}},
		{{7, 5}, {}}, {{}, {7, 5}}, {{7, 5}, {7, 5}}, {{13}, {13}}, {{13}, {}},
		{{3, 4, 5}, {4, 5}}, {{3, 4, 5}, {4, 1}}, {{3, 1, 5}, {3, 4, 1}}, {{6, 1, 5}, {5}},
	}
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, pr := range pairs {
				sa, sb := pr[0], pr[1]
				ga, gb := globalData(sa, 1, 0.5, 2), globalData(sb, 2, 0.5, 2)
				for _, la := range operandLayouts(sa, n) {
					for _, lb := range operandLayouts(sb, n) {
						a, err := makeOperand(ctx, e, sa, la, ga)
						if err != nil {
							return err
						}
						b, err := makeOperand(ctx, e, sb, lb, gb)
						if err != nil {
							return err
						}
						xa, _ := a.Get(ctx)
						xb, _ := b.Get(ctx)
						for _, c := range binaryCases {
							what := fmt.Sprintf("%s of %s with %s", c.name, layoutName(sa, la), layoutName(sb, lb))
							before := e.Counters().BytesFetched
							f := c.f(ctx, e, a, b)
							r, err := f.Get(ctx)
							if err != nil {
								return fmt.Errorf("%s: %w", what, err)
							}
							out, want := refBroadcast(func(v []float64) float64 { return c.ref(v[0], v[1]) }, [][]int{sa, sb}, ga, gb)
							h := r.LocalBlock()
							if got, w := e.Counters().BytesFetched-before, wantFetched(xa, out, h)+wantFetched(xb, out, h); got != w {
								return fmt.Errorf("%s: fetched %d bytes, want %d", what, got, w)
							}
							if len(sa) == len(out) && sa[0] == out[0] && size(sa) == size(out) && !r.ann.Tiling.Equal(xa.ann.Tiling) {
								return fmt.Errorf("%s: tiled %v, want a's tiling %v", what, r.ann.Tiling, xa.ann.Tiling)
							}
							if err := gathered(ctx, e, f, out, want, what); err != nil {
								return err
							}
						}
					}
				}
			}
			return nil
		})
	})
}

func TestWhereClip(t *testing.T) {
	forLocalities5(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			shape := []int{7, 5}
			gx := globalData(shape, 3, -2, 2)
			gm := make([]float64, 7) // a mask per row, (7, 1)
			for i := range gm {
				gm[i] = float64(i % 2)
			}
			gy := globalData([]int{5}, 4, -2, 2)
			glo, ghi := globalData([]int{5}, 5, -1, 0), globalData([]int{7, 1}, 6, 0, 1)
			for _, l := range testLayouts(shape, n) {
				x, err := makeOperand(ctx, e, shape, l, gx)
				if err != nil {
					return err
				}
				m, err := makeOperand(ctx, e, []int{7, 1}, Layout{}, gm)
				if err != nil {
					return err
				}
				y, err := makeOperand(ctx, e, []int{5}, Layout{Kind: annotate.Column}, gy)
				if err != nil {
					return err
				}
				what := "Where of " + layoutName(shape, l)
				out, want := refBroadcast(func(v []float64) float64 {
					if v[0] != 0 {
						return v[1]
					}
					return v[2]
				}, [][]int{{7, 1}, shape, {5}}, gm, gx, gy)
				if err := gathered(ctx, e, Where(ctx, e, m, x, y), out, want, what); err != nil {
					return err
				}
				_, want = refBroadcast(func(v []float64) float64 {
					if v[0] != 0 {
						return v[1]
					}
					return -1
				}, [][]int{{7, 1}, shape}, gm, gx)
				if err := gathered(ctx, e, Where(ctx, e, m, x, Scalar(ctx, e, -1)), shape, want, what+" with a scalar"); err != nil {
					return err
				}
				lo, _ := makeOperand(ctx, e, []int{5}, Layout{}, glo)
				hi, _ := makeOperand(ctx, e, []int{7, 1}, Layout{}, ghi)
				_, want = refBroadcast(func(v []float64) float64 { return math.Min(math.Max(v[0], v[1]), v[2]) }, [][]int{shape, {5}, {7, 1}}, gx, glo, ghi)
				if err := gathered(ctx, e, Clip(ctx, e, x, lo, hi), shape, want, "Clip of "+layoutName(shape, l)); err != nil {
					return err
				}
				_, want = refBroadcast(func(v []float64) float64 { return math.Min(math.Max(v[0], -0.5), 0.5) }, [][]int{shape}, gx)
				if err := gathered(ctx, e, ClipScalar(ctx, e, x, -0.5, 0.5), shape, want, "ClipScalar of "+layoutName(shape, l)); err != nil {
					return err
				}
				if err := gathered(ctx, e, Clip(ctx, e, x, Scalar(ctx, e, -0.5), Scalar(ctx, e, 0.5)), shape, want, "Clip with scalars of "+layoutName(shape, l)); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func TestBroadcastErrors(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		a := Ones(ctx, e, []int{7, 5}, Layout{Name: "a"})
		b := Ones(ctx, e, []int{7}, Layout{Name: "b"})
		_, err := Add(ctx, e, a, b).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "Add on locality") ||
			!strings.Contains(err.Error(), "a/0 of shape [7 5] and b/0 of shape [7]") ||
			!strings.Contains(err.Error(), "operands could not be broadcast together with shapes (7,5) (7,)") {
			return fmt.Errorf("shapes that do not broadcast: %v", err)
		}
		c := Ones(ctx, e, []int{4, 5}, Layout{Name: "c"})
		_, err = Where(ctx, e, a, c, Scalar(ctx, e, 0)).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "Where on locality") || !strings.Contains(err.Error(), "shapes (7,5) (4,5) ()") {
			return fmt.Errorf("where of shapes that do not broadcast: %v", err)
		}
		return nil
	})
}
