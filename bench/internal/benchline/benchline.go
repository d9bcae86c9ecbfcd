// Package benchline prints the results of the benchmark programs in Go's
// benchmark format (the one `go test -bench` prints and
// golang.org/x/perf/benchfmt reads):
//
//	BenchmarkPingpong/tessera_rtt 20000 36.8 us/rtt
//
// It owns no measurement: a program times what it times and hands the
// figures here, so that bench/harness, bench/report and benchstat read every
// program's output alike. The configuration lines (machine, commit) are the
// harness's to write, not the programs'.
package benchline

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Metric is one measured value and its unit ("us/rtt", "GB/s", "s/op").
type Metric struct {
	Value float64
	Unit  string
}

// Format returns the benchmark line of name (without the leading
// "Benchmark"; "Pingpong/tessera_rtt", or with keys, "Pingpong/sweep/size=64")
// with n iterations and the metrics in the order given. A name or unit with
// white space in it would break the line, so spaces become underscores.
func Format(name string, n int, ms ...Metric) string {
	var b strings.Builder
	b.WriteString("Benchmark")
	b.WriteString(strings.Join(strings.Fields(name), "_"))
	if n < 1 {
		n = 1
	}
	fmt.Fprintf(&b, " %d", n)
	for _, m := range ms {
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(m.Value, 'g', 7, 64))
		b.WriteByte(' ')
		b.WriteString(strings.Join(strings.Fields(m.Unit), "_"))
	}
	return b.String()
}

// Print writes Format's line and a newline to w.
func Print(w io.Writer, name string, n int, ms ...Metric) {
	fmt.Fprintln(w, Format(name, n, ms...))
}
