package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

const results = `machine: test machine
commit: abc1234
date: 2026-01-02 03:04 UTC
job: tessera
rep: 1
BenchmarkPingpong/tessera_rtt 100 30 us/rtt
job: raw
BenchmarkPingpong/raw_rtt 100 20 us/rtt
job: tessera
rep: 2
BenchmarkPingpong/tessera_rtt 100 50 us/rtt
job: raw
BenchmarkPingpong/raw_rtt 100 25 us/rtt
job: tessera
rep: 3
BenchmarkPingpong/tessera_rtt 100 40 us/rtt
job: raw
BenchmarkPingpong/raw_rtt 100 40 us/rtt
job: tasks
rep: 1
cmd: go test -bench Tasks
BenchmarkTasks-2 2 760 tessera-ns/task 929 goroutine-ns/task 0.87 ratio
BenchmarkTasks-2 2 800 tessera-ns/task 900 goroutine-ns/task 0.95 ratio
`

func read(t *testing.T, s string) *File {
	t.Helper()
	f, err := Read(strings.NewReader(s), "test.txt")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func rttRow(target Target) Row {
	return Row{ID: "rtt", Name: "round trip", Num: One("tessera", "Pingpong/tessera_rtt", "us/rtt"), Den: One("raw", "Pingpong/raw_rtt", "us/rtt"), DenText: "raw", Format: "%.1f µs", Target: target}
}

func TestReadKeepsConfigAndValues(t *testing.T) {
	f := read(t, results)
	if f.Config["commit"] != "abc1234" || f.Config["machine"] != "test machine" {
		t.Errorf("config %v", f.Config)
	}
	if len(f.Results) != 8 {
		t.Fatalf("%d results, want 8", len(f.Results))
	}
	// "ns/task" is tidied by benchfmt; the table names the printed unit.
	if v, ok := value(f.Results[6], "tessera-ns/task"); !ok || v != 760 {
		t.Errorf("tessera-ns/task = %v, %v", v, ok)
	}
	if got := benchName(f.Results[6]); got != "Tasks" {
		t.Errorf("name %q", got)
	}
}

func TestReadRejectsBadLine(t *testing.T) {
	if _, err := Read(strings.NewReader("BenchmarkX 1 abc us\n"), "bad"); err == nil {
		t.Error("no error for a value that is not a number")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median of nothing is not NaN")
	}
}

func TestComputePairsTheSameRepetition(t *testing.T) {
	fig := Compute(read(t, results), rttRow(Target{Op: "<=", Bound: 1.5}))
	// Ratios 1.5, 2, 1: the median of the per-repetition ratios is 1.5,
	// not 40/25 = 1.6 (the ratio of the medians).
	if fig.NumMed != 40 || fig.DenMed != 25 || fig.Ratio != 1.5 {
		t.Errorf("medians %v / %v, ratio %v; want 40 / 25, 1.5", fig.NumMed, fig.DenMed, fig.Ratio)
	}
	if fig.Status != "met" {
		t.Errorf("status %q, want met", fig.Status)
	}
	if fig = Compute(read(t, results), rttRow(Target{Op: "<=", Bound: 1.2})); fig.Status != "not met" {
		t.Errorf("status %q, want not met", fig.Status)
	}
	if fig = Compute(read(t, results), rttRow(Target{Op: ">=", Bound: 0.5, OfValue: true})); fig.Status != "met" {
		t.Errorf("value target: status %q, want met", fig.Status)
	}
}

func TestComputeInverseAndBestOf(t *testing.T) {
	row := rttRow(Target{})
	row.Inverse = true
	if fig := Compute(read(t, results), row); fig.Ratio != 1/1.5 {
		t.Errorf("inverse ratio %v", fig.Ratio)
	}
	row = Row{Num: Measure{Jobs: []string{"tessera", "raw"}, Bench: "Pingpong/tessera_rtt", Unit: "us/rtt"}}
	// raw has no tessera_rtt: the best of one job is that job.
	if fig := Compute(read(t, results), row); fig.NumMed != 40 {
		t.Errorf("best of: median %v", fig.NumMed)
	}
	best := `job: a
rep: 1
BenchmarkX 1 5 s/op
job: b
BenchmarkX 1 3 s/op
job: a
rep: 2
BenchmarkX 1 2 s/op
job: b
BenchmarkX 1 4 s/op
`
	row = Row{Num: Measure{Jobs: []string{"a", "b"}, Bench: "X", Unit: "s/op"}}
	if fig := Compute(read(t, best), row); len(fig.Num) != 2 || fig.Num[0] != 3 || fig.Num[1] != 2 {
		t.Errorf("best of a and b per repetition: %v, want [3 2]", fig.Num)
	}
	row.Pick = true
	if fig := Compute(read(t, best), row); fig.NumJob != "a" || fig.NumMed != 3.5 {
		t.Errorf("pick: job %q median %v, want a 3.5", fig.NumJob, fig.NumMed)
	}
}

func TestComputeRatioOfTheProgram(t *testing.T) {
	row := Row{Num: One("tasks", "Tasks", "tessera-ns/task"), Den: One("tasks", "Tasks", "goroutine-ns/task"), RatioUnit: "ratio", Target: Target{Op: "<=", Bound: 2}}
	fig := Compute(read(t, results), row)
	if fig.NumMed != 780 || fig.DenMed != 914.5 || math.Abs(fig.Ratio-0.91) > 1e-12 || fig.Status != "met" {
		t.Errorf("figures %+v", fig)
	}
}

func TestMissingIsNeverMet(t *testing.T) {
	row := Row{ID: "gone", Num: One("nobody", "Nothing", "s/op"), Den: One("raw", "Pingpong/raw_rtt", "us/rtt"), Format: "%.1f", Target: Target{Op: "<=", Bound: 1e9}}
	for _, f := range []*File{nil, read(t, results)} {
		fig := Compute(f, row)
		if fig.Status != "missing" {
			t.Errorf("status %q, want missing", fig.Status)
		}
		rv := rowView(row, fig)
		if rv.Tessera != "missing" || strings.Contains(rv.Status, "met") {
			t.Errorf("row shown as %+v", rv)
		}
	}
}

func TestRecordedRow(t *testing.T) {
	f := read(t, "source: recorded\njob: recorded\nBenchmarkRow/rtt 1 36.8 num 36.7 den 1.09 ratio\n")
	fig := Compute(f, rttRow(Target{Op: "<=", Bound: 1.5}))
	if !fig.Recorded || fig.NumMed != 36.8 || fig.DenMed != 36.7 || fig.Ratio != 1.09 || fig.Status != "met" {
		t.Errorf("figures %+v", fig)
	}
}

func TestRender(t *testing.T) {
	sections := []Section{
		{Name: "spine", Title: "Spine", Text: "What the spine measures.", Rows: []Row{rttRow(Target{Op: "<=", Bound: 1.5})}},
		{Name: "later", Title: "Later", Text: "Not run yet.", Rows: []Row{{ID: "x", Name: "later row", Num: One("j", "X", "s/op"), Format: "%.1f s", Target: Target{Op: "<=", Bound: 1}}}},
	}
	var b bytes.Buffer
	if err := Render(&b, sections, map[string]*File{"spine": read(t, results)}, []string{"later"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| round trip | 40.0 µs | 25.0 µs (raw) | 1.50 | ≤ 1.5 | **met** |",
		"| later row | missing | — | — | ≤ 1 | missing: not checked |",
		"## Spine\n\nWhat the spine measures.",
		"commit abc1234",
		"    go test -bench Tasks",
		"| round trip | 30.0, 50.0, 40.0; ratios 1.50, 2.00, 1.00 | 40.0 µs | 25.0 µs (raw) | 1.50 | **met** |",
		"failed in the last run (their earlier results are shown):** later",
		"*No results yet",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestSectionsAreWellFormed(t *testing.T) {
	ids := map[string]bool{}
	for _, s := range Sections() {
		for _, r := range s.Rows {
			if ids[s.Name+"/"+r.ID] {
				t.Errorf("row %s/%s twice", s.Name, r.ID)
			}
			ids[s.Name+"/"+r.ID] = true
			if len(r.Num.Jobs) == 0 || r.Num.Bench == "" || r.Num.Unit == "" || r.Format == "" {
				t.Errorf("row %s/%s: incomplete measure %+v", s.Name, r.ID, r)
			}
			if r.Target.Op != "" && r.Target.Op != "<=" && r.Target.Op != ">=" && r.Target.Op != "<" {
				t.Errorf("row %s: operator %q", r.ID, r.Target.Op)
			}
		}
	}
}
