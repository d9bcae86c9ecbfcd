package report

import (
	"math"
	"testing"
)

// alsLargeResults are lines as bench/harness makes them from examples/als,
// bench/als_read.py and bench/als_numpy.py, over two repetitions.
const alsLargeResults = `machine: test machine
job: pandas
rep: 1
BenchmarkALSLarge/pandas_read 1 10 s/op 20000000 ratings
BenchmarkALSLarge/pandas_ready 1 12 s/op 138000 users 27000 items
job: numpy1
BenchmarkALSLarge/numpy_iteration 3 40 s/op 7.5e8 loss
job: numpy2
BenchmarkALSLarge/numpy_iteration 3 30 s/op 7.5e8 loss
job: als-large-pure-cg-2
BenchmarkALSLarge/input 1 4 s/op
BenchmarkALSLarge/iteration 15 3 s/op 7.7e8 loss
BenchmarkALSLarge/rss 1 1000000 KiB 600000 max-KiB 2 localities 2.0 rss/file
job: als-large-pure-exact-2
BenchmarkALSLarge/input 1 5 s/op
BenchmarkALSLarge/iteration 15 12 s/op 7.6e8 loss
BenchmarkALSLarge/rss 1 1200000 KiB 700000 max-KiB 2 localities 2.4 rss/file
job: pandas
rep: 2
BenchmarkALSLarge/pandas_read 1 10 s/op 20000000 ratings
job: numpy1
BenchmarkALSLarge/numpy_iteration 3 30 s/op 7.5e8 loss
job: als-large-pure-cg-2
BenchmarkALSLarge/input 1 6 s/op
BenchmarkALSLarge/iteration 15 5 s/op 7.7e8 loss
BenchmarkALSLarge/rss 1 1600000 KiB 800000 max-KiB 2 localities 3.2 rss/file
job: als-large-pure-exact-2
BenchmarkALSLarge/input 1 7 s/op
BenchmarkALSLarge/iteration 15 10 s/op 7.6e8 loss
`

func TestALSLargeSection(t *testing.T) {
	f := read(t, alsLargeResults)
	want := map[string]struct {
		ratio  float64
		status string
	}{
		"als-large-input":       {0.5, "met"},                // the better solver's job: 0.4 and 0.6
		"als-large-cg-exact":    {0.375, "not met"},          // 0.25 and 0.5
		"als-large-loss":        {7.7 / 7.6, "not met"},      // 1.3% above
		"als-large-loss-low":    {7.7 / 7.6, "met"},          // not below
		"als-large-rss":         {2.6, "met"},                // 2.0 and 3.2
		"als-large-numpy":       {(0.1 + 5.0/30) / 2, "met"}, // the best NumPy: 3/30 and 5/30
		"als-large-scale-rss-2": {2.6, ""},
		"als-large-scale-cg-4":  {math.NaN(), ""}, // not run
	}
	rows := map[string]Row{}
	for _, r := range alsLarge().Rows {
		if _, dup := rows[r.ID]; dup {
			t.Fatalf("row id %s twice", r.ID)
		}
		rows[r.ID] = r
	}
	if len(rows) != 8+5*3 {
		t.Errorf("%d rows, want the 8 of the targets and 5 a job size for 1, 2 and 4 localities", len(rows))
	}
	for id, w := range want {
		r, ok := rows[id]
		if !ok {
			t.Fatalf("no row %s", id)
		}
		fig := Compute(f, r)
		if math.IsNaN(w.ratio) != math.IsNaN(fig.Ratio) || math.Abs(fig.Ratio-w.ratio) > 1e-9 || fig.Status != w.status {
			t.Errorf("%s: ratio %v, %q; want %v, %q", id, fig.Ratio, fig.Status, w.ratio, w.status)
		}
	}
	if fig := Compute(f, rows["als-large-scale-rss-2"]); fig.NumMed != 700000 {
		t.Errorf("largest locality's peak RSS: median %v KiB, want 700000", fig.NumMed)
	}
}
