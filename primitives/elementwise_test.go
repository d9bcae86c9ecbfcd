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

func TestElementwise(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			iter := 0
			for _, shape := range testShapes {
				for _, l := range layouts(shape, n) {
					what := describe(shape, l)
					ga := globalData(shape, 1, -2, 2)
					gb := globalData(shape, 2, 0.5, 3)
					gb[0] = ga[0] // an equal pair for the comparisons
					la, lb := l, l
					// Names are unique while the arrays live.
					la.Name, lb.Name = fmt.Sprintf("a.%d", iter), fmt.Sprintf("b.%d", iter)
					iter++
					xa, err := FromGlobal(e, shape, la, ga)
					if err != nil {
						return err
					}
					xb, err := FromGlobal(e, shape, lb, gb)
					if err != nil {
						return err
					}
					a, b := runtime.MakeReady(xa), runtime.MakeReady(xb)
					cases := []struct {
						name string
						f    *runtime.Future[*Array]
						ref  func(x, y float64) float64
					}{
						{"Add", Add(ctx, e, a, b), func(x, y float64) float64 { return x + y }},
						{"Sub", Sub(ctx, e, a, b), func(x, y float64) float64 { return x - y }},
						{"Mul", Mul(ctx, e, a, b), func(x, y float64) float64 { return x * y }},
						{"Div", Div(ctx, e, a, b), func(x, y float64) float64 { return x / y }},
						{"Map2", Map2(ctx, e, a, b, math.Hypot), math.Hypot},
						{"Equal", Equal(ctx, e, a, b), func(x, y float64) float64 { return boolf(x == y) }},
						{"NotEqual", NotEqual(ctx, e, a, b), func(x, y float64) float64 { return boolf(x != y) }},
						{"Less", Less(ctx, e, a, b), func(x, y float64) float64 { return boolf(x < y) }},
						{"Greater", Greater(ctx, e, a, b), func(x, y float64) float64 { return boolf(x > y) }},
						{"AddScalar", AddScalar(ctx, e, a, 3), func(x, _ float64) float64 { return x + 3 }},
						{"SubScalar", SubScalar(ctx, e, a, 3), func(x, _ float64) float64 { return x - 3 }},
						{"ScalarSub", ScalarSub(ctx, e, 3, a), func(x, _ float64) float64 { return 3 - x }},
						{"MulScalar", MulScalar(ctx, e, a, 3), func(x, _ float64) float64 { return x * 3 }},
						{"DivScalar", DivScalar(ctx, e, a, 3), func(x, _ float64) float64 { return x / 3 }},
						{"ScalarDiv", ScalarDiv(ctx, e, 3, b), func(_, y float64) float64 { return 3 / y }},
						{"EqualScalar", EqualScalar(ctx, e, a, ga[1]), func(x, _ float64) float64 { return boolf(x == ga[1]) }},
						{"NotEqualScalar", NotEqualScalar(ctx, e, a, ga[1]), func(x, _ float64) float64 { return boolf(x != ga[1]) }},
						{"LessScalar", LessScalar(ctx, e, a, 0), func(x, _ float64) float64 { return boolf(x < 0) }},
						{"GreaterScalar", GreaterScalar(ctx, e, a, 0), func(x, _ float64) float64 { return boolf(x > 0) }},
						{"Exp", Exp(ctx, e, a), func(x, _ float64) float64 { return math.Exp(x) }},
						{"Log", Log(ctx, e, b), func(_, y float64) float64 { return math.Log(y) }},
						{"Sqrt", Sqrt(ctx, e, b), func(_, y float64) float64 { return math.Sqrt(y) }},
						{"Abs", Abs(ctx, e, a), func(x, _ float64) float64 { return math.Abs(x) }},
						{"Neg", Neg(ctx, e, a), func(x, _ float64) float64 { return -x }},
						{"Map", Map(ctx, e, a, math.Sin), func(x, _ float64) float64 { return math.Sin(x) }},
					}
					for _, c := range cases {
						x, err := c.f.Get(ctx)
						if err != nil {
							return fmt.Errorf("%s %s: %v", c.name, what, err)
						}
						ref := make([]float64, len(ga))
						for g := range ref {
							ref[g] = c.ref(ga[g], gb[g])
						}
						if err := checkTile(x, ref, c.name+" "+what); err != nil {
							return err
						}
						ann := x.Annotation()
						if ann.Generation != 1 || !(strings.HasPrefix(ann.Name, la.Name+"~") || strings.HasPrefix(ann.Name, lb.Name+"~")) || !ann.Tiling.Equal(xa.Annotation().Tiling) {
							return fmt.Errorf("%s %s: annotation %v, want generation 1 of the input's", c.name, what, ann)
						}
					}
					// Chained: a result's generation is one more than its
					// inputs' highest.
					x, err := Neg(ctx, e, Add(ctx, e, a, AddScalar(ctx, e, a, 1))).Get(ctx)
					if err != nil {
						return err
					}
					if n := x.Annotation(); n.Generation != 3 || !strings.HasPrefix(n.Name, la.Name+"~") {
						return fmt.Errorf("chained %s: name %s, want a~<k>/3", what, x.Name())
					}
				}
			}
			return nil
		})
	})
}

func TestElementwiseMismatch(t *testing.T) {
	runJob(t, 2, func(ctx context.Context, e *Env) error {
		a := Ones(ctx, e, []int{7, 5}, Layout{Name: "a"})
		b := Ones(ctx, e, []int{5, 7}, Layout{Name: "b"})
		_, err := Add(ctx, e, a, b).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "a/0 of shape [7 5] and b/0 of shape [5 7]") ||
			!strings.Contains(err.Error(), "Add on locality") {
			return fmt.Errorf("mismatched shapes: %v", err)
		}
		c := Ones(ctx, e, []int{7, 5}, Layout{Name: "c", Kind: annotate.Column})
		// Different tilings are aligned (broadcast.go): a's tiling.
		m, err := Mul(ctx, e, a, c).Get(ctx)
		xa, _ := a.Get(ctx)
		if err != nil || !m.Annotation().Tiling.Equal(xa.Annotation().Tiling) {
			return fmt.Errorf("mismatched tilings: %v", err)
		}
		if s, err := Sum(ctx, e, runtime.MakeReady(m)).Get(ctx); err != nil || s != 35 {
			return fmt.Errorf("mismatched tilings: sum %v, %v; want 35", s, err)
		}
		// A failed input fails the result with its error.
		bad := Zeros(ctx, e, []int{1}, Layout{})
		_, err = Exp(ctx, e, bad).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "more tiles than") {
			return fmt.Errorf("failed input: %v", err)
		}
		return nil
	})
}
