package report

import (
	"math"
	"testing"
)

// linalgResults are lines as bench/harness keeps them for the linalg
// section at small sizes, over one repetition.
const linalgResults = `machine: test machine
job: cholesky
rep: 1
BenchmarkCholesky/n=1024/localities=4 1 2.0 s/op 1 GFLOP/s
job: dpotrf
BenchmarkDpotrf/n=1024 1 1.0 s/op 2 GFLOP/s
job: pdpotrf-64
BenchmarkPdpotrf/n=1024 1 3.0 s/op 1 GFLOP/s
job: pdpotrf-128
BenchmarkPdpotrf/n=1024 1 2.5 s/op 1 GFLOP/s
job: dask-cholesky
BenchmarkDask/cholesky/n=1024 1 1.0 s/op 1 GFLOP/s
job: svd
BenchmarkTruncatedSVD/m=100/cols=10/rank=3/localities=4 1 0.5 s/op 1 GFLOP/s 2e-15 max-rel-diff
job: idle-2
BenchmarkCholeskyIdle/localities=2/locality=0 1 1.0 idle-s 4.0 avail-s 75 util-pct
BenchmarkCholeskyIdle/localities=2 1 1.5 idle-s 8.0 avail-s 81 util-pct
`

func TestLinalgSection(t *testing.T) {
	t.Setenv("LINALG_CHOL_SIZES", "1024")
	t.Setenv("LINALG_LU_SIZES", "512")
	t.Setenv("LINALG_SVD", "100x10")
	t.Setenv("LINALG_SVD_RANK", "3")
	t.Setenv("LINALG_SCALAPACK_NB", "64 128")
	t.Setenv("LINALG_SCALE_P", "2")
	f := read(t, linalgResults)
	want := map[string]struct {
		ratio  float64
		status string
	}{
		"cholesky-lapack-1024":    {0.5, "not met"}, // efficiency 1/2
		"cholesky-scalapack-1024": {0.8, "met"},     // against the best block size, 2.5
		"cholesky-dask-1024":      {2, "not met"},
		"lu-lapack-512":           {math.NaN(), "missing"},
		"svd-accuracy":            {math.NaN(), "met"},
		"idle-2":                  {1.5 / 8, ""},
	}
	seen := 0
	for _, r := range linalg().Rows {
		w, ok := want[r.ID]
		if !ok {
			continue
		}
		seen++
		fig := Compute(f, r)
		same := math.IsNaN(w.ratio) && math.IsNaN(fig.Ratio) || math.Abs(fig.Ratio-w.ratio) < 1e-9
		if !same || fig.Status != w.status {
			t.Errorf("%s: ratio %v, %q; want %v, %q", r.ID, fig.Ratio, fig.Status, w.ratio, w.status)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d rows checked are in the section", seen, len(want))
	}
	if s := Linalg(); s.TSQRRows != "4000000" || s.TSQRCols != "64" || len(s.Cholesky) != 1 {
		t.Errorf("sizes %+v", s)
	}
}
