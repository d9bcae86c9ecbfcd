package primitives

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
)

// testShapes are the odd shapes every primitive is tried on.
var testShapes = [][]int{{13}, {7, 5}, {3, 4, 5}}

// testKinds are the tiling kinds tried; those that do not fit a shape on a
// number of localities are skipped (see layouts).
var testKinds = []annotate.Kind{annotate.Row, annotate.Column, annotate.Page, annotate.Sym}

// runJob runs body on every locality of a job of n localities in this
// process, each with its Env. Released tiles are poisoned (NaN): a
// primitive that reads memory it gave back reads NaN, not another
// array's data. The bound on the job only catches a hang: the heaviest
// tests take over 10 s under -race on a loaded 2-core machine.
func runJob(t *testing.T, n int, body func(ctx context.Context, e *Env) error) {
	t.Helper()
	runJobWith(t, n, 2*time.Minute, runtime.Config{PoisonReleased: true}, body)
}

// runJobWith is runJob with a bound on the whole job (generous: it only
// catches a hang) and a Config of the test's (its Registry is set here).
func runJobWith(t *testing.T, n int, limit time.Duration, cfg runtime.Config, body func(ctx context.Context, e *Env) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	reg := runtime.NewRegistry()
	acts := Register(reg, agas.New(reg))
	cfg.Registry = reg
	job, err := runtime.StartLocal(ctx, n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		return body(ctx, e)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// forLocalities runs test once for each job size 1 to 4.
func forLocalities(t *testing.T, test func(t *testing.T, n int)) {
	for n := 1; n <= 4; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) { test(t, n) })
	}
}

// layouts returns the layouts of every tiling kind that fits shape on n
// localities, plus a row layout with an overlap of 1 when rows can be
// split.
func layouts(shape []int, n int) []Layout {
	var out []Layout
	for _, k := range testKinds {
		if _, err := annotate.New(k, shape, n); err == nil {
			out = append(out, Tiled(k))
		}
	}
	if n > 1 {
		if _, err := annotate.New(annotate.Row, shape, n); err == nil {
			out = append(out, Layout{Kind: annotate.Row, Halo: 1})
		}
	}
	return out
}

func describe(shape []int, l Layout) string {
	return fmt.Sprintf("shape %v, %v tiling, halo %d", shape, l.Kind, l.Halo)
}

// size is the number of elements of shape.
func size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// globalData returns reproducible values for an array of shape: uniform in
// [lo, hi).
func globalData(shape []int, seed uint64, lo, hi float64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, size(shape))
	for i := range out {
		out[i] = lo + (hi-lo)*r.Float64()
	}
	return out
}

// close reports whether got is within rel of want, relatively (absolutely
// near zero).
func closeTo(got, want, rel float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= rel*math.Max(1, math.Abs(want))
}

// checkTile compares x's tile with ref, the whole array in row-major
// order, element by element, computing the global index of every element
// of the held block by itself.
func checkTile(x *Array, ref []float64, what string) error {
	shape := x.Shape()
	b := x.LocalBlock()
	if got, want := len(x.Local()), b.Size(); got != want {
		return fmt.Errorf("%s: tile %v has %d elements, want %d", what, b, got, want)
	}
	k := 0
	var rec func(d, g int) error
	rec = func(d, g int) error {
		if d == len(shape) {
			if got := x.Local()[k]; !closeTo(got, ref[g], 1e-12) {
				return fmt.Errorf("%s: locality %d, element %d of the tile (global %d): got %v, want %v", what, x.ann.Locality, k, g, got, ref[g])
			}
			k++
			return nil
		}
		for i := b[d].Start; i < b[d].Stop; i++ {
			if err := rec(d+1, g*shape[d]+i); err != nil {
				return err
			}
		}
		return nil
	}
	return rec(0, 0)
}
