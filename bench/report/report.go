// Package report turns the result files of the benchmarks into
// docs/benchmarks.md. It holds the table of targets (Sections: each row a
// measure of Tessera, a baseline measured in the same run, a bound and a
// direction), reads the files in Go's benchmark format with
// golang.org/x/perf/benchfmt, computes medians and same-run ratios, marks
// each target met or not met, and renders the report with text/template.
//
// It runs nothing: bench/harness starts the programs and writes the files
// (one per section, bench/results/NAME.txt), and calls Render. A result the
// files do not hold is shown as missing, never as met.
//
// The files are plain benchmark output, so benchstat reads them too
// (`benchstat -ignore rep,cmd bench/results/spine.txt`). Besides the machine
// and commit of the run, the harness sets these configuration keys:
//
//	job: NAME   the job that printed the lines below (a row selects by it)
//	rep: R      the repetition; a ratio pairs values of the same repetition
//	cmd: ...    the command of the job, as the report shows it
package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// A File is the results of one section's run.
type File struct {
	Path    string
	Config  map[string]string // the file's first configuration (machine, commit, date, ...)
	Results []*benchfmt.Result
}

// ReadFile reads a result file.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads results in Go's benchmark format from r; name is for errors.
func Read(r io.Reader, name string) (*File, error) {
	out := &File{Path: name, Config: map[string]string{}}
	br := benchfmt.NewReader(r, name)
	for br.Scan() {
		switch rec := br.Result().(type) {
		case *benchfmt.Result:
			if len(out.Results) == 0 {
				for _, c := range rec.Config {
					out.Config[c.Key] = string(c.Value)
				}
			}
			out.Results = append(out.Results, rec.Clone())
		case *benchfmt.SyntaxError:
			return nil, rec
		}
	}
	if err := br.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadDir reads dir/NAME.txt for every section, leaving out the files that
// do not exist.
func ReadDir(dir string, sections []Section) (map[string]*File, error) {
	files := map[string]*File{}
	for _, s := range sections {
		f, err := ReadFile(filepath.Join(dir, s.Name+".txt"))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files[s.Name] = f
	}
	return files, nil
}

// procs is the "-N" (GOMAXPROCS) suffix of a name from go test.
var procs = regexp.MustCompile(`-[0-9]+$`)

// benchName is the name of r without "Benchmark" and the "-N" suffix.
func benchName(r *benchfmt.Result) string {
	return procs.ReplaceAllString(string(r.Name.Full()), "")
}

// value is r's value in unit as the program printed it (benchfmt tidies
// "ns/task" into "sec/task"; the table names the printed unit).
func value(r *benchfmt.Result, unit string) (float64, bool) {
	for _, v := range r.Values {
		if v.OrigUnit == unit {
			return v.OrigValue, true
		}
	}
	for _, v := range r.Values {
		if v.Unit == unit && v.OrigUnit == "" {
			return v.Value, true
		}
	}
	return 0, false
}

// key identifies a value for pairing: its repetition and its place among
// the values of the same measure in that repetition.
type key struct {
	rep string
	i   int
}

// samples are the values of one measure, by key, in file order.
type samples struct {
	keys []key
	vals map[key]float64
}

func (s *samples) add(k key, v float64) {
	if s.vals == nil {
		s.vals = map[key]float64{}
	}
	if _, ok := s.vals[k]; !ok {
		s.keys = append(s.keys, k)
	}
	s.vals[k] = v
}

func (s samples) list() []float64 {
	out := make([]float64, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, s.vals[k])
	}
	return out
}

// collect returns the values of m in f: for each job of m, its results
// named m.Bench with a value in m.Unit. With several jobs, each key takes
// the smallest value of the jobs (the best of them).
func collect(f *File, m Measure) samples {
	var out samples
	if f == nil {
		return out
	}
	for _, job := range m.Jobs {
		count := map[string]int{}
		for _, r := range f.Results {
			if r.GetConfig("job") != job || benchName(r) != m.Bench {
				continue
			}
			v, ok := value(r, m.Unit)
			if !ok {
				continue
			}
			rep := r.GetConfig("rep")
			k := key{rep, count[rep]}
			count[rep]++
			if old, ok := out.vals[k]; ok && old <= v {
				continue
			}
			out.add(k, v)
		}
	}
	return out
}

// Median is the median of xs (benchmath's center, with no assumption
// about their distribution); NaN when there are none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := benchmath.NewSample(append([]float64(nil), xs...), &benchmath.DefaultThresholds)
	return benchmath.AssumeNothing.Summary(s, 0.95).Center
}

// Ratios divides the values of num by those of den with the same key (the
// same repetition, the same place in it), in num's order.
func ratios(num, den samples) []float64 {
	var out []float64
	for _, k := range num.keys {
		if d, ok := den.vals[k]; ok && d != 0 {
			out = append(out, num.vals[k]/d)
		}
	}
	return out
}

// Figures are the computed cells of one row.
type Figures struct {
	Num, Den    []float64 // the values, per repetition
	NumMed      float64   // NaN when missing
	DenMed      float64
	Ratio       float64 // the median of the paired ratios; NaN when missing
	Ratios      []float64
	Status      string // "met", "not met", "missing", or "" when there is no target
	Recorded    bool   // the figures come from a row recorded as medians (converted results)
	NumJob      string // the job Num was taken from (Pick)
	HasBaseline bool
}

// Compute returns the figures of row in f (nil: no file).
func Compute(f *File, row Row) Figures {
	fig := Figures{NumMed: math.NaN(), DenMed: math.NaN(), Ratio: math.NaN(), HasBaseline: len(row.Den.Jobs) > 0}
	num := row.Num
	if row.Pick && len(num.Jobs) > 1 {
		best, bestJob := math.Inf(-1), ""
		for _, j := range num.Jobs {
			one := num
			one.Jobs = []string{j}
			if m := Median(collect(f, one).list()); m > best {
				best, bestJob = m, j
			}
		}
		if bestJob != "" {
			num.Jobs = []string{bestJob}
			fig.NumJob = bestJob
		}
	}
	ns := collect(f, num)
	fig.Num = ns.list()
	fig.NumMed = Median(fig.Num)
	if fig.HasBaseline {
		ds := collect(f, row.Den)
		fig.Den = ds.list()
		fig.DenMed = Median(fig.Den)
		if row.Inverse {
			fig.Ratios = ratios(ds, ns)
		} else {
			fig.Ratios = ratios(ns, ds)
		}
	}
	if row.RatioUnit != "" {
		rm := num
		rm.Unit = row.RatioUnit
		fig.Ratios = collect(f, rm).list()
	}
	fig.Ratio = Median(fig.Ratios)
	if len(fig.Num) == 0 && f != nil {
		fig.recorded(f, row.ID)
	}
	fig.Status = row.Target.judge(fig)
	return fig
}

// recorded fills fig from a result "Row/ID" with the units num, den and
// ratio: a row's medians as an earlier report recorded them, kept until a
// run measures the row again.
func (fig *Figures) recorded(f *File, id string) {
	for _, r := range f.Results {
		if string(r.Name.Full()) != "Row/"+id {
			continue
		}
		fig.Recorded = true
		if v, ok := value(r, "num"); ok {
			fig.NumMed = v
		}
		if v, ok := value(r, "den"); ok {
			fig.DenMed = v
		}
		if v, ok := value(r, "ratio"); ok {
			fig.Ratio = v
		}
	}
}

// judge says whether fig meets t: "" without a target, "missing" when a
// figure the target needs is missing.
func (t Target) judge(fig Figures) string {
	if t.Op == "" {
		return ""
	}
	v := fig.Ratio
	if t.OfValue {
		v = fig.NumMed
	}
	if math.IsNaN(v) {
		return "missing"
	}
	ok := false
	switch t.Op {
	case "<=":
		ok = v <= t.Bound
	case ">=":
		ok = v >= t.Bound
	case "<":
		ok = v < t.Bound
	default:
		panic(fmt.Sprintf("report: target operator %q", t.Op))
	}
	if ok {
		return "met"
	}
	return "not met"
}

// commands are the distinct commands of f's jobs, in file order.
func commands(f *File) []string {
	if f == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, r := range f.Results {
		c := r.GetConfig("cmd")
		if c != "" && !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// cell formats v with format, or "missing".
func cell(format string, v float64) string {
	if math.IsNaN(v) {
		return "missing"
	}
	return fmt.Sprintf(format, v)
}

// list formats vs with format, comma-separated.
func list(format string, vs []float64) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf(format, v)
	}
	return strings.Join(parts, ", ")
}
