package report

import (
	"math"
	"testing"
)

// nodeResults are lines as bench/pingpong, bench/collbench and bench/mpi
// print them, over two repetitions.
const nodeResults = `machine: test machine
job: vader-pingpong
rep: 1
BenchmarkMPI/mpi_rtt 100 2 us/rtt
job: vader-stream
BenchmarkMPI/mpi_bw 10 4 GB/s
BenchmarkMPI/mpi_bw_send 10 5 GB/s
job: shm-poll
BenchmarkPingpong/tessera_rtt_direct 100 5 us/rtt
job: shm
BenchmarkPingpong/tessera_rtt 100 10 us/rtt
BenchmarkPingpong/tessera_bw 10 3 GB/s
job: tcp
BenchmarkPingpong/tessera_rtt 100 40 us/rtt
BenchmarkPingpong/tessera_bw 10 2 GB/s
job: vader-coll
BenchmarkColl/mpi_allreduce1 100 10 us/op 0 GB/s
job: coll-shm
BenchmarkColl/allreduce1 100 30 us/op 0 GB/s
job: coll-shm-poll
BenchmarkColl/allreduce1 100 15 us/op 0 GB/s
job: vader-pingpong
rep: 2
BenchmarkMPI/mpi_rtt 100 4 us/rtt
job: vader-stream
BenchmarkMPI/mpi_bw 10 2 GB/s
job: shm-poll
BenchmarkPingpong/tessera_rtt_direct 100 16 us/rtt
job: shm
BenchmarkPingpong/tessera_rtt 100 10 us/rtt
BenchmarkPingpong/tessera_bw 10 2 GB/s
job: tcp
BenchmarkPingpong/tessera_rtt 100 10 us/rtt
BenchmarkPingpong/tessera_bw 10 2 GB/s
job: vader-coll
BenchmarkColl/mpi_allreduce1 100 10 us/op 0 GB/s
job: coll-shm
BenchmarkColl/allreduce1 100 20 us/op 0 GB/s
job: coll-shm-poll
BenchmarkColl/allreduce1 100 40 us/op 0 GB/s
`

func TestNodeSection(t *testing.T) {
	f := read(t, nodeResults)
	want := map[string]struct {
		ratio  float64
		status string
	}{
		"node-rtt-poll-direct": {3.25, "not met"},  // 2.5 and 4
		"node-rtt-block":       {0.625, "not met"}, // 0.25 and 1
		"node-bw":              {0.875, "met"},     // 0.75 and 1
		"node-allreduce1":      {1.75, "met"},      // the better of the two modes: 1.5 and 2
		"node-allreduce1mib":   {math.NaN(), "missing"},
		"ucx-sm-rtt":           {math.NaN(), "missing"},
	}
	seen := 0
	for _, r := range node().Rows {
		w, ok := want[r.ID]
		if !ok {
			continue
		}
		seen++
		fig := Compute(f, r)
		if math.IsNaN(w.ratio) != math.IsNaN(fig.Ratio) || math.Abs(fig.Ratio-w.ratio) > 1e-9 || fig.Status != w.status {
			t.Errorf("%s: ratio %v, %s; want %v, %s", r.ID, fig.Ratio, fig.Status, w.ratio, w.status)
		}
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d rows checked", seen, len(want))
	}
}
