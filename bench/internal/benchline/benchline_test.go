package benchline

import (
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

func TestFormatReadsBack(t *testing.T) {
	line := Format("Pingpong/sweep/size=64", 2000, Metric{36.812345678, "us/rtt"}, Metric{2.5, "GB/s"}, Metric{1.2345678e-7, "checksum"})
	want := "BenchmarkPingpong/sweep/size=64 2000 36.81235 us/rtt 2.5 GB/s 1.234568e-07 checksum"
	if line != want {
		t.Fatalf("Format = %q, want %q", line, want)
	}
	r := benchfmt.NewReader(strings.NewReader("commit: abc\n"+line+"\n"), "x")
	if !r.Scan() {
		t.Fatal("no record")
	}
	res, ok := r.Result().(*benchfmt.Result)
	if !ok {
		t.Fatalf("record %v is not a result", r.Result())
	}
	if got := string(res.Name.Full()); got != "Pingpong/sweep/size=64" {
		t.Errorf("name %q", got)
	}
	if res.Iters != 2000 || res.GetConfig("commit") != "abc" {
		t.Errorf("iters %d, commit %q", res.Iters, res.GetConfig("commit"))
	}
	if v, ok := res.Value("GB/s"); !ok || v != 2.5 {
		t.Errorf("GB/s = %v, %v", v, ok)
	}
}

func TestFormatKeepsOneField(t *testing.T) {
	if got := Format("A b", 0, Metric{1, "x y"}); got != "BenchmarkA_b 1 1 x_y" {
		t.Errorf("Format = %q", got)
	}
}
