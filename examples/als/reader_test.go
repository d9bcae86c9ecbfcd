package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/internal/progress"
	"github.com/tessera-amt/tessera/primitives"
	"github.com/tessera-amt/tessera/runtime"
)

// rated is one rating with its file ids.
type rated struct {
	user, item int64
	rating     float32
}

// sparseRatings returns n distinct ratings with sparse ids (gaps, not
// starting at 1) in a random order, and half-star ratings.
func sparseRatings(n int, seed uint64) []rated {
	rnd := rand.New(rand.NewPCG(seed, 1))
	seen := map[[2]int64]bool{}
	var out []rated
	for len(out) < n {
		u, i := int64(7+13*rnd.IntN(40)), int64(1000+31*rnd.IntN(60))
		if seen[[2]int64{u, i}] {
			continue
		}
		seen[[2]int64{u, i}] = true
		out = append(out, rated{u, i, float32(1+rnd.IntN(9)) / 2})
	}
	return out
}

// writeRatings writes rs as a .csv (header, "\r\n" line ends) or a .dat.
func writeRatings(t *testing.T, path string, rs []rated, dat bool) {
	t.Helper()
	var b strings.Builder
	if !dat {
		b.WriteString("userId,movieId,rating,timestamp\r\n")
	}
	for k, r := range rs {
		if dat {
			fmt.Fprintf(&b, "%d::%d::%g::%d\n", r.user, r.item, r.rating, 900000000+k)
		} else {
			fmt.Fprintf(&b, "%d,%d,%.1f,%d\r\n", r.user, r.item, r.rating, 1100000000+k)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readAll reads path on n in-process localities and returns every
// locality's share.
func readAll(t *testing.T, n int, path string) ([]*ratings, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	job, err := runtime.StartLocal(ctx, n, runtime.Config{Registry: runtime.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*ratings, n)
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		comm, err := runtime.NewCommunicator(rt, "als", nil, 0)
		if err != nil {
			return err
		}
		defer comm.Close()
		r, err := readRatings(ctx, comm, int(rt.Here()), n, path, progress.Config{})
		out[rt.Here()] = r
		return err
	})
	return out, err
}

// TestReadMovieLensFormats reads the same ratings as ratings.csv (header,
// "\r\n") and as ratings.dat (no header) on 1 to 3 localities: the ids are
// numbered in ascending order, and the rows by user and by item hold
// exactly the ratings written, each once.
func TestReadMovieLensFormats(t *testing.T) {
	rs := sparseRatings(700, 4)
	want := slices.Clone(rs)
	slices.SortFunc(want, func(a, b rated) int {
		if a.user != b.user {
			return int(a.user - b.user)
		}
		return int(a.item - b.item)
	})
	dir := t.TempDir()
	for _, dat := range []bool{false, true} {
		path := filepath.Join(dir, "ratings.csv")
		if dat {
			path = filepath.Join(dir, "ratings.dat")
		}
		writeRatings(t, path, rs, dat)
		for n := 1; n <= 3; n++ {
			shares, err := readAll(t, n, path)
			if err != nil {
				t.Fatalf("%s on %d localities: %v", filepath.Base(path), n, err)
			}
			uids, iids := shares[0].userIDs, shares[0].itemIDs
			if !slices.IsSorted(uids) || !slices.IsSorted(iids) || len(uids) != shares[0].users || len(iids) != shares[0].items {
				t.Fatalf("%s on %d localities: ids not in ascending order: %v %v", filepath.Base(path), n, uids, iids)
			}
			var byUser, byItem []rated
			for _, r := range shares {
				for row := range r.byUser.rows() {
					cols, vals := r.byUser.row(row)
					for j, c := range cols {
						byUser = append(byUser, rated{uids[r.byUser.first+row], iids[c], vals[j]})
					}
				}
				for row := range r.byItem.rows() {
					cols, vals := r.byItem.row(row)
					for j, c := range cols {
						byItem = append(byItem, rated{uids[c], iids[r.byItem.first+row], vals[j]})
					}
				}
			}
			if !slices.Equal(byUser, want) {
				t.Errorf("%s on %d localities: the rows by user differ from the ratings written", filepath.Base(path), n)
			}
			slices.SortFunc(byItem, func(a, b rated) int {
				if a.user != b.user {
					return int(a.user - b.user)
				}
				return int(a.item - b.item)
			})
			if !slices.Equal(byItem, want) {
				t.Errorf("%s on %d localities: the rows by item differ from the ratings written", filepath.Base(path), n)
			}
		}
	}
}

// TestReadMalformed: every kind of bad input is an error naming the file,
// the line, the column and the locality that read the line; the bad line
// comes last, so on n localities locality n-1 reads it.
func TestReadMalformed(t *testing.T) {
	var good, goodDat strings.Builder
	good.WriteString("userId,movieId,rating,timestamp\n")
	for k := range 40 {
		fmt.Fprintf(&good, "%d,%d,%d.5,%d\n", 1+k%7, 10+k, 1+k%4, 1000+k)
		fmt.Fprintf(&goodDat, "%d::%d::%d::%d\n", 1+k%7, 10+k, 1+k%4, 1000+k)
	}
	const last = 42 // the bad line's number in the .csv files (after the header)
	cases := []struct {
		name, content string
		want          []string // each must be in the error
	}{
		{"id not an integer.csv", good.String() + "4,1x3,2,5\n", []string{fmt.Sprintf("line %d: column 2 (movieId): \"1x3\" is not an integer", last), "at column 3 "}},
		{"user not an integer.csv", good.String() + "4.5,13,2,5\n", []string{fmt.Sprintf("line %d: column 1 (userId)", last), "at column 1 "}},
		{"rating not a number.csv", good.String() + "4,13,abc,5\n", []string{fmt.Sprintf("line %d: column 3 (rating): \"abc\" is not a positive number", last), "at column 6 "}},
		{"too few columns.csv", good.String() + "4,13\n", []string{fmt.Sprintf("line %d: 2 fields, want userId,movieId,rating[,timestamp]", last), "at column 5 "}},
		{"too many columns.csv", good.String() + "4,13,2,5,6\n", []string{fmt.Sprintf("line %d: more than 4 fields", last), "at column 10 "}},
		{"stray comma.dat", goodDat.String() + "4::13::4,5::99\n", []string{fmt.Sprintf("line %d: column 3 (Rating): \"4,5\" is not a positive number", last-1), "at column 8 "}},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 3; n++ {
				_, err := readAll(t, n, path)
				want := append([]string{"ratings " + path + " line", fmt.Sprintf("read by locality %d", n-1)}, c.want...)
				for _, w := range want {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Errorf("%d localities: error %v, want one containing %q", n, err, w)
					}
				}
			}
		})
	}
	for _, c := range []struct{ name, content, want string }{
		{"empty.csv", "", "line 1: the file is empty (at column 1; read by locality"},
		{"header only.csv", "userId,movieId,rating,timestamp\r\n", "line 2: no ratings, only a header (at column 1; read by locality 0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			for n := 1; n <= 2; n++ {
				_, err := readAll(t, n, path)
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%d localities: error %v, want one naming %s and containing %q", n, err, path, c.want)
				}
			}
		})
	}
}

// TestUnratedGetZeroFactors: a user and an item of the synthetic ratings
// without any rating get zero factors, with either solver, and no error.
func TestUnratedGetZeroFactors(t *testing.T) {
	g := synthetic{users: 60, items: 400, density: 0.01, seed: 2} // most items unrated
	for _, s := range []solver{solverCG, solverExact} {
		p := testParams
		p.solver, p.cgSteps, p.iterations = s, 3, 2
		f, r, err := runLocal(t, 2, options{synthetic: g, params: p})
		if err != nil {
			t.Fatal(err)
		}
		unrated := 0
		for row := range r.byItem.rows() {
			if cols, _ := r.byItem.row(row); len(cols) > 0 {
				continue
			}
			unrated++
			i := r.byItem.first + row
			for _, v := range f.y.Data[i*p.factors : (i+1)*p.factors] {
				if v != 0 {
					t.Fatalf("solver %s: item %d has no ratings but factors %v", s, i, f.y.Data[i*p.factors:(i+1)*p.factors])
				}
			}
		}
		if unrated == 0 {
			t.Fatalf("no unrated item among locality 0's")
		}
	}
}

// TestReaderMemory: the reader holds its byte range's ratings in 12 bytes
// each, sized from the first buffer's lines, and one read buffer per part
// read at once: what it allocates stays below its byte range (a MovieLens
// line is longer than 12 bytes) plus the buffers. Reading the whole file
// on one locality (no exchange then) adds the rows, 16 bytes a rating,
// and the id tables.
func TestReaderMemory(t *testing.T) {
	g := synthetic{users: 3000, items: 900, density: 0.02, seed: 9}
	path := filepath.Join(t.TempDir(), "ratings.csv")
	n, err := g.writeCSV(path, progress.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const buf = 64 << 10
	for _, parts := range []int{1, 3} {
		for k := range parts {
			before := allocated()
			sh, err := readShare(path, k, parts, 1, buf, nil)
			grew := allocated() - before
			if err != nil || sh.bad != nil {
				t.Fatal(err, sh.bad)
			}
			t.Logf("locality %d of %d: allocated %d for %d ratings, range %d", k, parts, grew, sh.count(), sh.rangeLen)
			if limit := uint64(sh.rangeLen) + buf + 8192; grew > limit {
				t.Errorf("locality %d of %d: the reader allocated %d bytes for %d ratings, more than its range of %d bytes and its buffer", k, parts, grew, sh.count(), sh.rangeLen)
			}
			if held := cap(sh.chunks[0]) * 12; held > int(sh.rangeLen) {
				t.Errorf("locality %d of %d: %d bytes of ratings from a range of %d", k, parts, held, sh.rangeLen)
			}
		}
	}
	st, _ := os.Stat(path)
	before := allocated()
	shares, err := readAll(t, 1, path)
	grew := allocated() - before
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("whole file: allocated %d for %d ratings of %d bytes", grew, n, st.Size())
	ids := uint64(shares[0].users+shares[0].items) * 8 * 4                    // sets, tables, answers and the ids of locality 0
	ways := uint64(min(goruntime.GOMAXPROCS(0), int(st.Size()/readBuffer)+1)) // read buffers
	if limit := uint64(st.Size()) + ways*readBuffer + 16*uint64(n) + ids + 1<<20; grew > limit {
		t.Errorf("reading %d ratings (%d bytes) on one locality allocated %d bytes, more than %d", n, st.Size(), grew, limit)
	}
}

func allocated() uint64 {
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestCGNearExact: from the same start, 15 iterations of the CG solver
// (3 steps a row) end within 0.5% of the exact solver's loss, and its loss
// falls every iteration. The data are large enough that the two
// trajectories end near the same point: at 150 x 90 the loss after 15
// iterations is still far from converged and the two solvers' differ by
// -1.4% to +1.8% with the seed, at 600 x 300 by -0.4% to +0.3%.
func TestCGNearExact(t *testing.T) {
	g := synthetic{users: 600, items: 300, density: 0.05, seed: 11}
	p := params{factors: 8, iterations: 15, reg: 0.1, alpha: 40, seed: 3, solver: solverExact, lossEvery: 1} // alpha: the program's default
	exact, _, err := runLocal(t, 1, options{synthetic: g, params: p})
	if err != nil {
		t.Fatal(err)
	}
	p.solver, p.cgSteps = solverCG, 3
	for n := 1; n <= 2; n++ {
		cg, _, err := runLocal(t, n, options{synthetic: g, params: p})
		if err != nil {
			t.Fatal(err)
		}
		le, lc := exact.losses[14], cg.losses[14]
		if d := (lc - le) / le; d > 0.005 || d < -0.005 {
			t.Errorf("%d localities: loss after 15 iterations: cg %g, exact %g (%.3g%% apart)", n, lc, le, 100*d)
		}
		for k := 1; k < len(cg.losses); k++ {
			if !(cg.losses[k] <= cg.losses[k-1]) {
				t.Errorf("%d localities: cg loss went up at iteration %d: %g after %g", n, k+1, cg.losses[k], cg.losses[k-1])
			}
		}
	}
}

// TestReadShareWays: a locality's range read in 1 to 4 parts at once
// gives the same ratings in the same order, the same line count, and the
// same first bad line.
func TestReadShareWays(t *testing.T) {
	g := synthetic{users: 800, items: 300, density: 0.05, seed: 4}
	dir := t.TempDir()
	path := filepath.Join(dir, "ratings.csv")
	if _, err := g.writeCSV(path, progress.Config{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	badPath := filepath.Join(dir, "bad.csv")
	const badAt = 5000 // 1-based line number of the bad line
	bad := strings.Join(lines[:badAt-1], "") + "1,2,three,4\n" + strings.Join(lines[badAt-1:], "")
	if err := os.WriteFile(badPath, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	const buf = 4 << 10
	for _, parts := range []int{1, 2} {
		var want []triple
		var wantLines int
		for ways := 1; ways <= 4; ways++ {
			var got []triple
			lines := 0
			for k := range parts {
				sh, err := readShare(path, k, parts, ways, buf, nil)
				if err != nil || sh.bad != nil {
					t.Fatal(err, sh.bad)
				}
				if ways > 1 && len(sh.chunks) != ways {
					t.Fatalf("%d ways: %d chunks", ways, len(sh.chunks))
				}
				for _, c := range sh.chunks {
					got = append(got, c...)
				}
				lines += sh.lines
			}
			if ways == 1 {
				want, wantLines = got, lines
				continue
			}
			if !slices.Equal(got, want) || lines != wantLines {
				t.Errorf("%d localities, %d ways: %d ratings in %d lines, one way reads %d in %d", parts, ways, len(got), lines, len(want), wantLines)
			}
		}
		for ways := 1; ways <= 4; ways++ {
			sh, err := readShare(badPath, 0, 1, ways, buf, nil)
			if err != nil || sh.bad == nil || sh.badLine != badAt || !strings.Contains(sh.bad.msg, "column 3 (rating)") {
				t.Errorf("%d ways: bad line %d (%v), want %d", ways, sh.badLine, sh.bad, badAt)
			}
		}
	}
}

// TestSummaryNamesUnrated: users and items without ratings are no error;
// the summary line says how many get zero factors.
func TestSummaryNamesUnrated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reg := runtime.NewRegistry()
	acts := primitives.Register(reg, agas.New(reg))
	job, err := runtime.StartLocal(ctx, 2, runtime.Config{Registry: reg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	g := synthetic{users: 60, items: 400, density: 0.01, seed: 2} // most items unrated
	p := testParams
	p.solver, p.cgSteps, p.iterations = solverCG, 3, 1
	var out [2]bytes.Buffer
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		return run(ctx, rt, acts, options{synthetic: g, params: p}, &out[rt.Here()])
	})
	if err != nil {
		t.Fatal(err)
	}
	cdf := popularity(g.items)
	rated := map[int32]bool{}
	for u := range g.users {
		items, _ := g.userRatings(u, cdf, nil, nil)
		for _, i := range items {
			rated[i] = true
		}
	}
	want := fmt.Sprintf("(0 users and %d items without ratings get zero factors)", g.items-len(rated))
	if !strings.Contains(out[0].String(), want) || !strings.Contains(out[0].String(), "solver cg, 3 steps") {
		t.Errorf("locality 0 printed:\n%s\nwant a summary containing %q", out[0].String(), want)
	}
}
