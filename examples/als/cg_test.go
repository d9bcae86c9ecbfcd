package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/progress"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// TestDotAxpyMatchesGo checks the kernel the CG solver runs on against the
// plain Go loops, at lengths around its 8-wide blocks.
func TestDotAxpyMatchesGo(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{1, 3, 7, 8, 9, 13, 16, 40, 64, 67} {
		s, d := make([]float64, n), make([]float64, n+3) // d and acc may be longer
		fast, slow := make([]float64, n+3), make([]float64, n+3)
		for i := range s {
			s[i] = rnd.NormFloat64()
		}
		for i := range d {
			d[i], fast[i] = rnd.NormFloat64(), rnd.NormFloat64()
			slow[i] = fast[i]
		}
		dotAxpy(s, d, fast, 0.75, -1.25)
		dotAxpyGo(s, d, slow, 0.75, -1.25)
		for i := range fast {
			if relDiff(fast[i], slow[i]) > 1e-12 {
				t.Fatalf("length %d: acc[%d] = %.17g, the Go loops give %.17g", n, i, fast[i], slow[i])
			}
		}
	}
}

// TestCGConvergesToExact: with as many steps as factors, CG solves each
// row's system exactly (up to rounding), so one iteration from the same
// start gives the exact solver's factors.
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
	for j := range exact.x.Data {
		if d := relDiff(cg.x.Data[j], exact.x.Data[j]); d > 1e-6 {
			t.Fatalf("X[%d]: cg %.12g, exact %.12g", j, cg.x.Data[j], exact.x.Data[j])
		}
	}
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
