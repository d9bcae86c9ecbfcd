package report

import "testing"

// zarrResults are lines as bench/dd_rate.sh, bench/zarrio and
// bench/normalise_dask.py print them, over two repetitions.
const zarrResults = `machine: test machine
job: dd
rep: 1
BenchmarkDisk/dd_write 1 0.25 GB/s 1 cache-dropped
BenchmarkDisk/dd_read 1 1.0 GB/s 1 cache-dropped
job: zarr-io
BenchmarkZarr/write 1 0.2 GB/s 0.2 min-GB/s 1 cache-dropped
BenchmarkZarr/read 1 0.9 GB/s 0.9 min-GB/s 1 cache-dropped
job: normalise
BenchmarkNormalise/tessera 1 20 s/op 20 min-s/op 1.5030848886e+02 checksum
job: normalise-tiles
BenchmarkNormalise/tessera 1 32 s/op 32 min-s/op 1.5030848886e+02 checksum
job: normalise-steps
BenchmarkNormalise/tessera 1 40 s/op 40 min-s/op 1.5030848886e+02 checksum
job: dask
BenchmarkNormalise/dask 1 80 s/op 80 min-s/op 1.5030848885e+02 checksum
job: dd
rep: 2
BenchmarkDisk/dd_write 1 0.2 GB/s 1 cache-dropped
BenchmarkDisk/dd_read 1 0.5 GB/s 1 cache-dropped
job: zarr-io
BenchmarkZarr/write 1 0.2 GB/s 0.2 min-GB/s 1 cache-dropped
BenchmarkZarr/read 1 0.5 GB/s 0.5 min-GB/s 1 cache-dropped
job: normalise
BenchmarkNormalise/tessera 1 30 s/op 30 min-s/op 1.5030848886e+02 checksum
job: normalise-tiles
BenchmarkNormalise/tessera 1 35 s/op 35 min-s/op 1.5030848886e+02 checksum
job: normalise-steps
BenchmarkNormalise/tessera 1 40 s/op 40 min-s/op 1.5030848886e+02 checksum
job: dask
BenchmarkNormalise/dask 1 50 s/op 50 min-s/op 1.5030848885e+02 checksum
`

func TestZarrSection(t *testing.T) {
	f := read(t, zarrResults)
	want := map[string]struct {
		ratio  float64
		status string
	}{
		"zarr-write":      {0.9, "met"},   // 0.8 and 1.0
		"zarr-read":       {0.95, "met"},  // 0.9 and 1.0
		"normalise":       {0.425, "met"}, // 0.25 and 0.6
		"normalise-tiles": {0.55, ""},     // 0.4 and 0.7; no target
		"normalise-steps": {0.65, ""},     // 0.5 and 0.8; no target
	}
	s := zarr()
	if len(s.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(s.Rows), len(want))
	}
	for _, r := range s.Rows {
		fig := Compute(f, r)
		w := want[r.ID]
		if d := fig.Ratio - w.ratio; d > 1e-9 || d < -1e-9 || fig.Status != w.status {
			t.Errorf("%s: ratio %v, %s; want %v, %s", r.ID, fig.Ratio, fig.Status, w.ratio, w.status)
		}
	}
}
