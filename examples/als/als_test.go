package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/progress"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
	"gonum.org/v1/gonum/mat"
)

// testParams are small enough for the dense reference, and solve exactly
// as Listing 4 does.
var testParams = params{factors: 5, iterations: 4, reg: 0.1, alpha: 2, seed: 7, solver: solverExact, lossEvery: 1}

// runLocal runs the program body on n in-process localities and returns
// locality 0's factorisation.
func runLocal(t *testing.T, n int, o options) (*factorisation, *ratings, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, n, runtime.Config{Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var f0 *factorisation
	var r0 *ratings
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
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
		var r *ratings
		if o.ratings != "" {
			r, err = readRatings(ctx, comm, int(rt.Here()), int(rt.NumLocalities()), o.ratings, progress.Config{})
		} else {
			r, err = o.synthetic.generate(ctx, comm, int(rt.Here()), int(rt.NumLocalities()), progress.Config{})
		}
		if err != nil {
			return err
		}
		f, err := als(ctx, e, comm, r, o.params, nil)
		if rt.Here() == 0 {
			f0, r0 = f, r
		}
		return err
	})
	return f0, r0, err
}

// reference is Listing 4 written out literally on one process with dense
// matrices: c_u = diag(alpha r_u), A = Yᵀ c_u Y + YᵀY + reg I,
// b = Yᵀ (c_u + I) p_u, x_u = A⁻¹ b; then the items likewise. It returns X,
// Y and the loss after every iteration, the loss summed over every pair.
func reference(t *testing.T, dense *mat.Dense, y0 *mat.Dense, p params) (*mat.Dense, *mat.Dense, []float64) {
	t.Helper()
	users, items := dense.Dims()
	f := p.factors
	x := mat.NewDense(users, f, nil)
	y := mat.DenseCopyOf(y0)
	solve := func(other *mat.Dense, row func(int) []float64, n int, into *mat.Dense) {
		m, _ := other.Dims()
		var oto mat.Dense
		oto.Mul(other.T(), other)
		for d := range f {
			oto.Set(d, d, oto.At(d, d)+p.reg)
		}
		for u := range n {
			r := row(u)
			conf := make([]float64, m)
			pref := make([]float64, m)
			ci := make([]float64, m)
			for i, v := range r {
				conf[i] = p.alpha * v
				ci[i] = conf[i] + 1
				if v != 0 {
					pref[i] = 1
				}
			}
			c := mat.NewDiagDense(m, conf)
			var tmp, a mat.Dense
			tmp.Mul(other.T(), c)
			a.Mul(&tmp, other)
			a.Add(&a, &oto)
			var tmp2 mat.Dense
			tmp2.Mul(other.T(), mat.NewDiagDense(m, ci))
			var b mat.VecDense
			b.MulVec(&tmp2, mat.NewVecDense(m, pref))
			var xu mat.VecDense
			if err := xu.SolveVec(&a, &b); err != nil {
				t.Fatal(err)
			}
			for d := range f {
				into.Set(u, d, xu.AtVec(d))
			}
		}
	}
	var losses []float64
	for range p.iterations {
		solve(y, func(u int) []float64 { return dense.RawRowView(u) }, users, x)
		solve(x, func(i int) []float64 { return mat.Col(nil, i, dense) }, items, y)
		l := 0.0
		for u := range users {
			for i := range items {
				r := dense.At(u, i)
				pref := 0.0
				if r != 0 {
					pref = 1
				}
				s := mat.Dot(x.RowView(u), y.RowView(i))
				l += (1 + p.alpha*r) * (pref - s) * (pref - s)
			}
		}
		l += p.reg * (mat.Norm(x, 2)*mat.Norm(x, 2) + mat.Norm(y, 2)*mat.Norm(y, 2))
		losses = append(losses, l)
	}
	return x, y, losses
}

// denseRatings returns the synthetic ratings as a dense matrix.
func denseRatings(g synthetic) *mat.Dense {
	d := mat.NewDense(g.users, g.items, nil)
	cdf := popularity(g.items)
	for u := range g.users {
		items, vals := g.userRatings(u, cdf, nil, nil)
		for j, i := range items {
			d.Set(u, int(i), vals[j])
		}
	}
	return d
}

func relDiff(a, b float64) float64 {
	return math.Abs(a-b) / math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func TestALSMatchesDenseReference(t *testing.T) {
	g := synthetic{users: 37, items: 23, density: 0.15, seed: testParams.seed}
	o := options{synthetic: g, params: testParams}
	dense := denseRatings(g)
	var refX, refY *mat.Dense
	var refLoss []float64
	for n := 1; n <= 4; n++ {
		t.Run(fmt.Sprintf("%d-localities", n), func(t *testing.T) {
			f, _, err := runLocal(t, n, o)
			if err != nil {
				t.Fatal(err)
			}
			if refX == nil {
				// The reference starts from the same random_d Y, which
				// does not depend on the tiling (the primitives' tests
				// hold that).
				y0 := mat.NewDense(g.items, testParams.factors, randomY(t, g.items, testParams))
				refX, refY, refLoss = reference(t, dense, y0, testParams)
			}
			compare(t, "X", f.x.Data, refX.RawMatrix().Data)
			compare(t, "Y", f.y.Data, refY.RawMatrix().Data)
			for k, l := range f.losses {
				if d := relDiff(l, refLoss[k]); d > 1e-9 {
					t.Errorf("loss of iteration %d: %.15g, reference %.15g (relative difference %.2g)", k+1, l, refLoss[k], d)
				}
				if k > 0 && !(l < f.losses[k-1]) {
					t.Errorf("loss went up at iteration %d: %g after %g", k+1, l, f.losses[k-1])
				}
			}
		})
	}
}

// randomY returns the initial Y the program draws: random_d(items x
// factors) with the seed, computed on one locality.
func randomY(t *testing.T, items int, p params) []float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, 1, runtime.Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	var y []float64
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := primitives.NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		a, err := primitives.Random(ctx, e, []int{items, p.factors}, primitives.Layout{}, p.seed).Get(ctx)
		if err != nil {
			return err
		}
		y = append([]float64(nil), a.Local()...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func compare(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for j := range got {
		if d := relDiff(got[j], want[j]); d > 1e-9 {
			t.Fatalf("%s[%d] = %.15g, reference %.15g (relative difference %.2g)", what, j, got[j], want[j], d)
		}
	}
}

// TestALSFromFileEqualsSynthetic writes the synthetic ratings as a
// MovieLens file (sparse movie ids, a header) and reads it back on 1 to 4
// localities: the factors equal those of the generated ratings.
func TestALSFromFileEqualsSynthetic(t *testing.T) {
	g := synthetic{users: 41, items: 29, density: 0.25, seed: 3} // every item rated
	path := filepath.Join(t.TempDir(), "ratings.csv")
	if _, err := g.writeCSV(path, progress.Config{}); err != nil {
		t.Fatal(err)
	}
	want, _, err := runLocal(t, 1, options{synthetic: g, params: testParams})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 4; n++ {
		got, r, err := runLocal(t, n, options{ratings: path, params: testParams})
		if err != nil {
			t.Fatalf("%d localities: %v", n, err)
		}
		if r.users != g.users || r.items != g.items || r.itemIDs[1] != 4 {
			t.Fatalf("%d localities: read %d users, %d items, item ids %v...", n, r.users, r.items, r.itemIDs[:3])
		}
		compare(t, fmt.Sprintf("X on %d localities", n), got.x.Data, want.x.Data)
		compare(t, fmt.Sprintf("Y on %d localities", n), got.y.Data, want.y.Data)
	}
}

func TestALSBadRatingsFile(t *testing.T) {
	dir := t.TempDir()
	good := "userId,movieId,rating,timestamp\n1,10,4.0,1\n2,10,3.5,2\n2,11,1,3\n3,12,5,4\n"
	cases := []struct {
		name, content, want string
	}{
		{"ragged", good + "4,13\n", "line 6: 2 fields"},
		{"not a number", good + "4,x13,2,5\n", `line 6: column 2 (movieId): "x13" is not an integer`},
		{"bad rating", good + "5,13,-1,5\n", `line 6: column 3 (rating): "-1" is not a positive number`},
		{"duplicate", good + "1,10,2,9\n", "two ratings of movie 10 by user 1"},
		{"too many fields", good + "1,10,2,9,8\n", "line 6: more than 4 fields"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".csv")
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 3; n++ {
				_, _, err := runLocal(t, n, options{ratings: path, params: testParams})
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%d localities: error %v, want one containing %q", n, err, c.want)
				}
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(dir, "absent.csv")
		_, _, err := runLocal(t, 2, options{ratings: path, params: testParams})
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("error %v, want one naming %s", err, path)
		}
	})
}

func TestParseOptions(t *testing.T) {
	bad := []struct {
		args []string
		want string
	}{
		{[]string{}, "exactly one of"},
		{[]string{"--ratings", "a", "--synthetic", "1,2,0.1"}, "exactly one of"},
		{[]string{"--synthetic", "10,10"}, "USERS,ITEMS,DENSITY"},
		{[]string{"--synthetic", "10,10,2"}, "DENSITY must be in (0, 0.5]"},
		{[]string{"--synthetic", "0,10,0.1"}, "USERS must be a positive integer"},
		{[]string{"--synthetic", "10,10,0.1", "--factors", "0"}, "--factors 0"},
		{[]string{"--synthetic", "10,10,0.1", "--regularization", "-1"}, "--regularization -1"},
		{[]string{"--synthetic", "10,10,0.1", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"--ratings", "r.csv", "--make-ratings", "x"}, "--make-ratings needs --synthetic"},
		{[]string{"--ratings", "r.csv", "--solver", "lu"}, `--solver "lu": want cg or exact`},
		{[]string{"--ratings", "r.csv", "--cg-steps", "0"}, "--cg-steps 0"},
		{[]string{"--ratings", "r.csv", "--loss-every", "-1"}, "--loss-every -1"},
		{[]string{"--ratings", "r.csv", "--memory-every", "-2"}, "--memory-every -2"},
	}
	for _, c := range bad {
		var stderr bytes.Buffer
		_, err := parseOptions(c.args, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.args, err, c.want)
		}
	}
	o, err := parseOptions([]string{"--synthetic", "100,50,0.05", "--factors", "8", "--alpha", "1.5"}, &bytes.Buffer{})
	if err != nil || o.synthetic.users != 100 || o.factors != 8 || o.alpha != 1.5 || o.iterations != 5 {
		t.Errorf("parsed %+v, %v", o, err)
	}
	if o.solver != solverCG || o.cgSteps != 3 || o.lossEvery != 1 || o.memoryEvery != 0 {
		t.Errorf("default solver %q with %d steps, loss every %d, memory every %d; want cg with 3, 1, 0", o.solver, o.cgSteps, o.lossEvery, o.memoryEvery)
	}
	o, err = parseOptions([]string{"--ratings", "r.dat", "--solver", "exact", "--cg-steps", "5"}, &bytes.Buffer{})
	if err != nil || o.solver != solverExact || o.cgSteps != 5 {
		t.Errorf("parsed %+v, %v", o, err)
	}
}

// TestLossEvery: with --loss-every 0 only the last iteration computes the
// loss, and it is the loss that every-iteration runs compute.
func TestLossEvery(t *testing.T) {
	g := synthetic{users: 30, items: 20, density: 0.2, seed: 4}
	p := testParams
	p.iterations = 3
	every, _, err := runLocal(t, 2, options{synthetic: g, params: p})
	if err != nil {
		t.Fatal(err)
	}
	p.lossEvery = 0
	last, _, err := runLocal(t, 2, options{synthetic: g, params: p})
	if err != nil {
		t.Fatal(err)
	}
	if len(last.losses) != 3 || !math.IsNaN(last.losses[0]) || !math.IsNaN(last.losses[1]) || last.losses[2] != every.losses[2] {
		t.Errorf("losses with --loss-every 0: %v; want NaN, NaN, %v", last.losses, every.losses[2])
	}
}
