package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/progress"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// TestPassMatchesGo checks the kernel the CG solver runs on against the
// plain Go loops, for row lengths around its 8-wide blocks and blocks of
// 0 to 9 rows, with d and acc longer than a row.
func TestPassMatchesGo(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 5))
	for _, f := range []int{1, 5, 8, 16, 24, 40, 64, 72} {
		for n := range 10 {
			g, d := make([]float32, n*f), make([]float32, f+3)
			wa, wb := make([]float32, n), make([]float32, n)
			fast, slow := make([]float32, f+3), make([]float32, f+3)
			for i := range g {
				g[i] = float32(rnd.NormFloat64())
			}
			for i := range wa {
				wa[i], wb[i] = float32(rnd.NormFloat64()), float32(rnd.NormFloat64())
			}
			for i := range d {
				d[i], fast[i] = float32(rnd.NormFloat64()), float32(rnd.NormFloat64())
				slow[i] = fast[i]
			}
			pass(g, d, fast, wa, wb, f)
			passGo(g, d, slow, wa, wb, f)
			for i := range fast {
				// The kernel sums the dot product in another order.
				if d := math.Abs(float64(fast[i] - slow[i])); d > 1e-4*(1+math.Abs(float64(slow[i]))) {
					t.Fatalf("f %d, %d rows: acc[%d] = %g, the Go loops give %g", f, n, i, fast[i], slow[i])
				}
			}
			for i := f; i < len(fast); i++ {
				if fast[i] != slow[i] {
					t.Fatalf("f %d, %d rows: acc[%d] beyond the row changed", f, n, i)
				}
			}
		}
	}
}

// TestAxpyRowsMatchesGo checks the product with OᵀO + reg I against the
// plain Go loops and, for a symmetric matrix, against the product by
// rows.
func TestAxpyRowsMatchesGo(t *testing.T) {
	rnd := rand.New(rand.NewPCG(6, 6))
	for _, f := range []int{1, 5, 8, 16, 24, 64, 72} {
		g := make([]float32, f*f)
		for i := range f {
			for j := i; j < f; j++ {
				v := float32(rnd.NormFloat64())
				g[i*f+j], g[j*f+i] = v, v
			}
		}
		w := make([]float32, f)
		for i := range w {
			w[i] = float32(rnd.NormFloat64())
		}
		fast, slow := make([]float32, f+2), make([]float32, f+2)
		axpyRows(g, fast, w, f)
		axpyRowsGo(g, slow, w, f)
		for i := range f {
			var byRow float64 // g's row i times w
			for j := range f {
				byRow += float64(g[i*f+j]) * float64(w[j])
			}
			if d := math.Abs(float64(fast[i]) - byRow); d > 1e-4*(1+math.Abs(byRow)) || math.Abs(float64(fast[i]-slow[i])) > 1e-4*(1+math.Abs(byRow)) {
				t.Fatalf("f %d: (g w)[%d] = %g (Go loops %g), by rows %g", f, i, fast[i], slow[i], byRow)
			}
		}
		if fast[f] != 0 || fast[f+1] != 0 {
			t.Fatalf("f %d: acc beyond f changed", f)
		}
	}
}

// TestGatherRows: gatherRows copies the named rows in order, repeated and
// last rows included.
func TestGatherRows(t *testing.T) {
	const f = 24
	src := make([]float32, 50*f)
	for i := range src {
		src[i] = float32(i)
	}
	cols := []int32{49, 0, 3, 3, 17, 2, 48, 9, 11, 12, 30, 31, 49}
	dst := make([]float32, len(cols)*f)
	gatherRows(dst, src, cols, f)
	for j, c := range cols {
		for k := range f {
			if got, want := dst[j*f+k], float32(int(c)*f+k); got != want {
				t.Fatalf("row %d (of %d), column %d: %g, want %g", j, c, k, got, want)
			}
		}
	}
}

// TestCGConvergesToExact: with as many steps as factors, CG solves each
// row's system exactly up to rounding, so one iteration from the same
// start gives the exact solver's factors. The rounding is float32's: the
// ratings' part of the CG's products is summed over float32 copies of the
// factors (about 6e-8 relative each), so the bound is 2e-5, not float64's.
func TestCGConvergesToExact(t *testing.T) {
	g := synthetic{users: 40, items: 30, density: 0.2, seed: 6}
	p := testParams
	p.iterations = 1
	exact, _, err := runLocal(t, 1, options{synthetic: g, params: p})
	if err != nil {
		t.Fatal(err)
	}
	p.solver, p.cgSteps = solverCG, 4*p.factors
	cg, _, err := runLocal(t, 2, options{synthetic: g, params: p})
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for j := range exact.x.Data {
		d := relDiff(cg.x.Data[j], exact.x.Data[j])
		if d > 2e-5 {
			t.Fatalf("X[%d]: cg %.12g, exact %.12g", j, cg.x.Data[j], exact.x.Data[j])
		}
		worst = max(worst, d)
	}
	t.Logf("largest relative difference of X: %.2g", worst)
}

// TestCutCoversRowsForEveryLane: the runs of cut cover every row once, in
// order, and give each lane several runs when the rows allow.
func TestCutCoversRowsForEveryLane(t *testing.T) {
	g := synthetic{users: 500, items: 300, density: 0.05, seed: 8}
	local := make([]triple, 0)
	cdf := popularity(g.items)
	for u := range g.users {
		items, vals := g.userRatings(u, cdf, nil, nil)
		for j, i := range items {
			local = append(local, triple{user: int32(u), item: i, rating: float32(vals[j])})
		}
	}
	s := buildRows(0, g.users, func(fn func(row, col int32, v float32)) {
		for _, t := range local {
			fn(t.user, t.item, t.rating)
		}
	})
	for _, lanes := range []int{1, 2, 7, 64} {
		runs := cut(&s, 8, lanes)
		next := 0
		for _, r := range runs {
			if r[0] != next || r[1] <= r[0] {
				t.Fatalf("%d lanes: run %v after row %d", lanes, r, next)
			}
			next = r[1]
		}
		if next != s.rows() {
			t.Fatalf("%d lanes: the runs end at row %d of %d", lanes, next, s.rows())
		}
		if len(runs) < min(lanes*tasksPerLane/2, s.rows()) {
			t.Errorf("%d lanes: %d runs, too few to keep every lane busy", lanes, len(runs))
		}
	}
}

// TestFactorsDoNotDependOnLanes: one locality with 1 or 3 lanes writes the
// same factors, with either solver.
func TestFactorsDoNotDependOnLanes(t *testing.T) {
	g := synthetic{users: 90, items: 70, density: 0.1, seed: 12}
	for _, s := range []solver{solverCG, solverExact} {
		p := testParams
		p.solver, p.cgSteps = s, 3
		var first *factorisation
		for _, lanes := range []int{1, 3} {
			f := runLanes(t, lanes, options{synthetic: g, params: p})
			if first == nil {
				first = f
				continue
			}
			for j := range f.x.Data {
				if f.x.Data[j] != first.x.Data[j] {
					t.Fatalf("solver %s: X[%d] is %v on 3 lanes, %v on 1", s, j, f.x.Data[j], first.x.Data[j])
				}
			}
			if f.losses[len(f.losses)-1] != first.losses[len(first.losses)-1] {
				t.Errorf("solver %s: the loss differs between 1 and 3 lanes", s)
			}
		}
	}
}

// runLanes runs the factorisation on one locality with the given lanes.
func runLanes(t *testing.T, lanes int, o options) *factorisation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, 1, runtime.Config{Registry: reg, Lanes: lanes, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var out *factorisation
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		if got := rt.Counters().Lanes; got != lanes {
			return fmt.Errorf("%d lanes, asked for %d", got, lanes)
		}
		e, err := primitives.NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		comm, err := runtime.NewCommunicator(rt, "als", nil, 0)
		if err != nil {
			return err
		}
		defer comm.Close()
		r, err := o.synthetic.generate(ctx, comm, 0, 1, progress.Config{})
		if err != nil {
			return err
		}
		out, err = als(ctx, e, comm, r, o.params, nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPopularitySpread: the generated popularity keeps its long tail (the
// most popular 20% of 27,000 items draw about 80% of the choices) while the
// halves and quarters of the ids, which 2 and 4 localities own, draw about
// equal shares.
func TestPopularitySpread(t *testing.T) {
	const items = 27000
	cdf := popularity(items)
	weights := make([]float64, items)
	prev := 0.0
	for i, c := range cdf {
		weights[i], prev = c-prev, c
	}
	slices.Sort(weights)
	top := 0.0
	for _, w := range weights[items-items/5:] {
		top += w
	}
	if top < 0.75 || top > 0.85 {
		t.Errorf("the most popular 20%% draw %.3f of the choices, want about 0.8", top)
	}
	for _, parts := range []int{2, 4} {
		for k := range parts {
			lo, hi := span(items, parts, k)
			share := cdf[hi-1]
			if lo > 0 {
				share -= cdf[lo-1]
			}
			if want := 1 / float64(parts); math.Abs(share-want) > 0.1*want {
				t.Errorf("%d parts: part %d (items %d to %d) draws %.3f of the choices, want about %.3f", parts, k, lo, hi, share, want)
			}
		}
	}
}
