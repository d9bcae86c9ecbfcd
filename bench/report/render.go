package report

import (
	"cmp"
	_ "embed"
	"fmt"
	"io"
	"math"
	"strings"
	"text/template"
)

// A Measure selects values from a section's results: the lines of the jobs
// Jobs (configuration key "job") named Bench (without "Benchmark" and a
// "-N" suffix) with a value in Unit. With several jobs, each repetition
// takes the smallest of their values (the best of them), unless the row
// picks one job (Row.Pick).
type Measure struct {
	Jobs  []string
	Bench string
	Unit  string
}

// One is the measure of a single job.
func One(job, bench, unit string) Measure { return Measure{[]string{job}, bench, unit} }

// A Target is a bound on a row's ratio (or, with OfValue, on Tessera's
// figure itself). Op is "<=", ">=" or "<"; the zero Target is no target.
type Target struct {
	Op      string
	Bound   float64
	OfValue bool
	Text    string // the target as the table shows it; built from Op and Bound when empty
}

// A Row is one line of the table: Tessera's figure, the baseline measured
// in the same run, their ratio (the median of the ratios of the same
// repetitions) and the target.
type Row struct {
	ID        string // short and stable; converted results name the row by it
	Name      string // as the table shows it
	Num       Measure
	NumText   string // how the Tessera cell names its figure, when not plain
	Den       Measure
	DenText   string // what the baseline is, shown after its figure
	Format    string // of both figures, e.g. "%.1f µs"
	RatioFmt  string // of the ratio; "%.2f" when empty
	RatioUnit string // the ratio is the median of this metric of Num's lines (a ratio the program paired itself)
	Pick      bool   // Num is the one of Num.Jobs with the highest median (the best mode)
	Inverse   bool   // the ratio is the baseline's over Tessera's (an efficiency)
	Detail    bool   // shown in its section only, not in the summary
	Target    Target
	Note      string // after the status
}

// A Section is one part of the report and one result file (Name.txt).
type Section struct {
	Name  string
	Title string
	Text  string // one short paragraph: what is measured against what
	Rows  []Row
}

//go:embed report.md.tmpl
var reportTemplate string

// Data is what the template renders.
type Data struct {
	Failed   []string
	Summary  []RowView
	Sections []SectionView
}

// A RowView is a row with its figures formatted.
type RowView struct {
	Name, Tessera, Baseline, Ratio, Target, Status string
	PerRep                                         string
}

// A SectionView is a section with its run.
type SectionView struct {
	Title, Text string
	Run         string // machine, commit, date
	Source      string // where converted results come from
	Commands    []string
	Rows        []RowView
	Missing     bool
}

// Render writes the report of files (by section name) to w; failed names
// the sections whose last run failed.
func Render(w io.Writer, sections []Section, files map[string]*File, failed []string) error {
	t, err := template.New("report").Parse(reportTemplate)
	if err != nil {
		return err
	}
	return t.Execute(w, View(sections, files, failed))
}

// View computes every row of sections from files.
func View(sections []Section, files map[string]*File, failed []string) Data {
	d := Data{Failed: failed}
	for _, s := range sections {
		f := files[s.Name]
		sv := SectionView{Title: s.Title, Text: s.Text, Commands: commands(f), Missing: f == nil}
		if f != nil {
			sv.Run = runLine(f.Config)
			sv.Source = f.Config["source"]
		}
		for _, row := range s.Rows {
			rv := rowView(row, Compute(f, row))
			sv.Rows = append(sv.Rows, rv)
			if !row.Detail {
				d.Summary = append(d.Summary, rv)
			}
		}
		d.Sections = append(d.Sections, sv)
	}
	return d
}

func runLine(c map[string]string) string {
	var parts []string
	for _, k := range []string{"date", "commit", "reps", "machine"} {
		if v := c[k]; v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	return strings.Join(parts, "; ")
}

func rowView(row Row, fig Figures) RowView {
	rv := RowView{Name: row.Name, Tessera: cell(row.Format, fig.NumMed), Target: row.Target.text(), Status: "no target"}
	if fig.NumJob != "" {
		rv.Name += fmt.Sprintf(" (best: %s)", fig.NumJob)
	}
	if row.NumText != "" && !math.IsNaN(fig.NumMed) {
		rv.Tessera += " " + row.NumText
	}
	rv.Baseline, rv.Ratio = "—", "—"
	if len(row.Den.Jobs) > 0 || row.RatioUnit != "" {
		if len(row.Den.Jobs) > 0 {
			rv.Baseline = cell(row.Format, fig.DenMed) + " (" + row.DenText + ")"
		}
		rv.Ratio = cell(cmp.Or(row.RatioFmt, "%.2f"), fig.Ratio)
	}
	switch fig.Status {
	case "met":
		rv.Status = "**met**"
	case "not met":
		rv.Status = "**not met**"
	case "missing":
		rv.Status = "missing: not checked"
	}
	if fig.Recorded {
		rv.Status += " (recorded)"
	}
	if row.Note != "" {
		rv.Status += "; " + row.Note
	}
	if len(fig.Num) > 0 {
		rv.PerRep = list(strings.Fields(row.Format)[0], fig.Num)
		if len(fig.Ratios) > 0 {
			rv.PerRep += "; ratios " + list("%.2f", fig.Ratios)
		}
	}
	return rv
}

func (t Target) text() string {
	if t.Text != "" {
		return t.Text
	}
	if t.Op == "" {
		return "—"
	}
	op := map[string]string{"<=": "≤", ">=": "≥", "<": "<"}[t.Op]
	return fmt.Sprintf("%s %g", op, t.Bound)
}
