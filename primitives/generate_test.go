package primitives

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/annotate"
)

func TestGenerators(t *testing.T) {
	forLocalities(t, func(t *testing.T, n int) {
		runJob(t, n, func(ctx context.Context, e *Env) error {
			for _, shape := range testShapes {
				for _, l := range layouts(shape, n) {
					what := describe(shape, l)
					m := size(shape)
					cases := []struct {
						name string
						arr  func() (*Array, error)
						ref  func(g int) float64
					}{
						{"Constant", func() (*Array, error) { return Constant(ctx, e, shape, l, 2.5).Get(ctx) }, func(int) float64 { return 2.5 }},
						{"Full", func() (*Array, error) { return Full(ctx, e, shape, l, -1).Get(ctx) }, func(int) float64 { return -1 }},
						{"Zeros", func() (*Array, error) { return Zeros(ctx, e, shape, l).Get(ctx) }, func(int) float64 { return 0 }},
						{"Ones", func() (*Array, error) { return Ones(ctx, e, shape, l).Get(ctx) }, func(int) float64 { return 1 }},
						{"Random", func() (*Array, error) { return Random(ctx, e, shape, l, 42).Get(ctx) }, func(g int) float64 { return uniformAt(42, uint64(g)) }},
						{"RandomNormal", func() (*Array, error) { return RandomNormal(ctx, e, shape, l, 9, 1, 2).Get(ctx) },
							func(g int) float64 { return 1 + 2*normalAt(9, uint64(g)) }},
					}
					for _, c := range cases {
						x, err := c.arr()
						if err != nil {
							return fmt.Errorf("%s %s: %v", c.name, what, err)
						}
						ref := make([]float64, m)
						for g := range ref {
							ref[g] = c.ref(g)
						}
						if err := checkTile(x, ref, c.name+" "+what); err != nil {
							return err
						}
						if x.Annotation().Generation != 0 || x.Annotation().Locality != e.Locality() {
							return fmt.Errorf("%s %s: annotation %v", c.name, what, x.Annotation())
						}
					}
				}
			}
			for _, l := range layouts([]int{7, 7}, n) {
				x, err := Identity(ctx, e, 7, l).Get(ctx)
				if err != nil {
					return err
				}
				ref := make([]float64, 49)
				for i := range 7 {
					ref[i*7+i] = 1
				}
				if err := checkTile(x, ref, "Identity "+describe([]int{7, 7}, l)); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// The random values are a function of the seed and the global index only:
// the same whatever the number of localities (the tiles are checked
// against uniformAt above), uniform in [0, 1) and normal with the asked
// moments.
func TestRandomStatistics(t *testing.T) {
	const m = 200000
	var s, s2 float64
	for g := range uint64(m) {
		u := uniformAt(1, g)
		if u < 0 || u >= 1 {
			t.Fatalf("uniform value %v out of [0, 1)", u)
		}
		s += u
		z := normalAt(1, g)
		s2 += z * z
	}
	if mean := s / m; math.Abs(mean-0.5) > 0.005 {
		t.Errorf("uniform mean %v, want 0.5", mean)
	}
	if v := s2 / m; math.Abs(v-1) > 0.02 {
		t.Errorf("normal second moment %v, want 1", v)
	}
	if uniformAt(1, 0) == uniformAt(2, 0) || uniformAt(1, 0) == uniformAt(1, 1) {
		t.Error("seeds or indices give equal values")
	}
}

func TestGeneratorErrors(t *testing.T) {
	runJob(t, 4, func(ctx context.Context, e *Env) error {
		_, err := Zeros(ctx, e, []int{3}, Tiled(annotate.Row)).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "more tiles than") || !strings.Contains(err.Error(), "Zeros") {
			return fmt.Errorf("row tiling of 3 elements on 4 localities: %v", err)
		}
		_, err = Ones(ctx, e, []int{3, 4, 5}, Tiled(annotate.Page)).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "4 tiles over 3 pages") {
			return fmt.Errorf("page tiling of 3 pages on 4 localities: %v", err)
		}
		_, err = Ones(ctx, e, []int{7, 5}, Tiled(annotate.Page)).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "page tiling needs a 3-D array") {
			return fmt.Errorf("page tiling of a matrix: %v", err)
		}
		two, _ := annotate.New(annotate.Row, []int{7, 5}, 2)
		_, err = Ones(ctx, e, []int{7, 5}, Layout{Tiling: &two}).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "2 tiles on 4 localities") {
			return fmt.Errorf("tiling of 2 tiles on 4 localities: %v", err)
		}
		_, err = Ones(ctx, e, []int{5, 7}, Layout{Tiling: &two}).Get(ctx)
		if err == nil || !strings.Contains(err.Error(), "tiling of shape [7 5] for an array of shape [5 7]") {
			return fmt.Errorf("tiling of another shape: %v", err)
		}
		_, err = Ones(ctx, e, []int{7, 5, 1, 1}, Layout{}).Get(ctx)
		if err == nil {
			return fmt.Errorf("4-D array: no error")
		}
		return nil
	})
}
