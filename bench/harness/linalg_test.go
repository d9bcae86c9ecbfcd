package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLinalgLines(t *testing.T) {
	out := "[L0] linalg: Cholesky of 2048x2048\n[L0] BenchmarkCholesky/n=2048/nb=128/localities=4 1 0.500000 s/op 5.727 GFLOP/s\n[L1] BenchmarkCholesky/n=2048/nb=128/localities=4 1 9 s/op\n" +
		"BenchmarkPdpotrf/n=2048/nb=64 1 0.4 s/op 7.1 GFLOP/s\nBenchmarkDask/lu/n=2048/chunk=1024 1 0.6 s/op 9.2 GFLOP/s\nsigma 0 1.5\n"
	want := []string{"BenchmarkCholesky/n=2048/localities=4 1 0.500000 s/op 5.727 GFLOP/s", "BenchmarkPdpotrf/n=2048 1 0.4 s/op 7.1 GFLOP/s", "BenchmarkDask/lu/n=2048 1 0.6 s/op 9.2 GFLOP/s"}
	if got := linalgLines(out); !slices.Equal(got, want) {
		t.Errorf("linalgLines = %q, want %q", got, want)
	}
}

func TestIdleLines(t *testing.T) {
	out := `archive /tmp/x/tessera.otf2: 2 localities, 2 lanes, 26412 events, written by tessera
wall time 2.5s

  locality  lanes          busy     available  utilisation
         0      1         1.5s          2.5s        60.0%
         1      1       2.25s          2.5s        90.0%
       all      2        3.75s            5s        75.0%

profile of all localities
                        region  count         total
                          main      4  500ms
`
	want := []string{
		"BenchmarkCholeskyIdle/localities=2/locality=0 1 1.0000 idle-s 2.5000 avail-s 60.0 util-pct",
		"BenchmarkCholeskyIdle/localities=2/locality=1 1 0.2500 idle-s 2.5000 avail-s 90.0 util-pct",
		"BenchmarkCholeskyIdle/localities=2 1 1.2500 idle-s 5.0000 avail-s 75.0 util-pct",
	}
	if got := idleLines("localities=2")(out); !slices.Equal(got, want) {
		t.Errorf("idleLines = %q, want %q", got, want)
	}
	if got := idleLines("localities=2")("no table\n"); got != nil {
		t.Errorf("without a table: %q", got)
	}
}

func TestLinalgPlan(t *testing.T) {
	t.Setenv("LINALG_CHOL_SIZES", "1024")
	t.Setenv("LINALG_LU_SIZES", "512")
	t.Setenv("LINALG_SCALE_N", "2048")
	t.Setenv("LINALG_SCALE_P", "1 2")
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "lapack"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	p := linalg(bin)
	if p.name != "linalg" || len(p.phases) != 3 {
		t.Fatalf("plan %s with %d phases, want linalg with 3 (the scaling order has no dpotrf of its own)", p.name, len(p.phases))
	}
	var names, cmds []string
	for _, ph := range p.phases {
		for _, j := range ph.jobs(1) {
			names = append(names, j.name)
			cmds = append(cmds, strings.Join(j.argv, " "))
		}
	}
	for _, want := range []string{"cholesky", "dpotrf", "lu", "dgetrf", "tsqr", "tsqr-r", "dgeqrf", "svd", "dgesdd", "scale-1", "idle-1", "scale-2", "idle-2"} {
		if !slices.Contains(names, want) {
			t.Errorf("no job %s among %q", want, names)
		}
	}
	all := strings.Join(cmds, "\n")
	for _, want := range []string{"@tessera run -n 4 --parcelport shm @linalg --nb 256 --check=false --ops cholesky -n 1024", "@tessera run -n 2 --parcelport shm --trace {tmp}/trace-2-1 @linalg", "@tessera trace summary -per-locality {tmp}/trace-2-1", "@lapack -op potrf -n 2048"} {
		if !strings.Contains(all, want) {
			t.Errorf("no command %q in\n%s", want, all)
		}
	}
}

func TestSameValues(t *testing.T) {
	lines := []string{"BenchmarkSVDValue/m=9/cols=3/i=0 1 2.5 sigma", "BenchmarkSVDValue/m=9/cols=3/i=1 1 1.25 sigma", "BenchmarkCholesky/n=8 1 0.5 s/op",
		"BenchmarkSVDValue/m=9/cols=3/i=0 1 2.5000000000001 sigma"}
	if err := sameValues("sigma", 1e-8)(lines); err != nil {
		t.Error(err)
	}
	bad := append(lines, "BenchmarkSVDValue/m=9/cols=3/i=1 1 1.26 sigma")
	if err := sameValues("sigma", 1e-8)(bad); err == nil || !strings.Contains(err.Error(), "i=1") {
		t.Errorf("values 1.25 and 1.26: error %v, want one naming i=1", err)
	}
}
