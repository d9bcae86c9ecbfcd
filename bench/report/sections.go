package report

import "fmt"

// Sections is the table of targets: every section of the report, in order,
// and its rows. The job names are those bench/harness gives its jobs.
func Sections() []Section {
	return []Section{spine(), parcelports(), node(), scaling(), cannon(), retile(), als(), alsSoak(), alsLarge(), conv1d(), zarr(), kmeans(), linalg(), tracing(), spans()}
}

// localities is "1 locality" or "N localities".
func localities(n string) string {
	if n == "1" {
		return "1 locality"
	}
	return n + " localities"
}

const rtt = "Action round trip, 64-byte `[]byte`"

func spine() Section {
	pp := func(job, name string) Measure { return One(job, "Pingpong/"+name, "us/rtt") }
	raw := pp("raw", "raw_rtt")
	rawText := "raw TCP ping-pong, blocking reads"
	le15 := Target{Op: "<=", Bound: 1.5}
	bw := func(job, name string) Measure { return One(job, "Pingpong/"+name, "GB/s") }
	coll := func(job, name string) Measure { return One(job, "Coll/"+name, "us/op") }
	mpiColl := func(name string) Measure { return coll("mpi-coll", "mpi_"+name) }
	best := Measure{Jobs: []string{"tessera", "poll", "nbio", "reno"}, Bench: "Pingpong/tessera_bw", Unit: "GB/s"}
	placement := func(job, label, base, note string) []Row {
		return []Row{
			{ID: job, Name: rtt + ", blocking, **" + label + "**", Num: pp(job, "tessera_rtt"), Den: pp(job+"-raw", "raw_rtt"), DenText: base, Format: "%.1f µs", Target: le15, Note: note},
			{ID: job + "-direct", Name: rtt + ", blocking, **direct action**, " + label, Num: pp(job, "tessera_rtt_direct"), Den: pp(job+"-raw", "raw_rtt"), DenText: base, Format: "%.1f µs", Target: le15, Note: note},
		}
	}
	rows := []Row{
		{ID: "rtt-paired", Name: rtt + ", 2 processes over TCP, blocking", Num: pp("paired", "tessera_rtt_paired"), Den: One("paired", "Pingpong/tessera_rtt_paired", "raw-us/rtt"),
			DenText: "raw TCP ping-pong, blocking reads, **between the same two processes**, in alternating bursts", RatioUnit: "ratio", Format: "%.1f µs", Target: le15},
		{ID: "rtt-paired-direct", Name: rtt + ", 2 processes over TCP, blocking, **direct action** (`RegisterDirect`)", Num: pp("paired", "tessera_rtt_paired_direct"),
			Den: One("paired", "Pingpong/tessera_rtt_paired_direct", "raw-us/rtt"), DenText: "the same, between the same two processes", RatioUnit: "ratio", Format: "%.1f µs", Target: le15},
		{ID: "rtt-jobs", Name: rtt + ", blocking, a job of its own, against the raw ping-pong as **a pair of processes of its own**", Num: pp("tessera", "tessera_rtt"), Den: raw, DenText: rawText, Format: "%.1f µs",
			Note: "each job placed on the cores by the kernel on its own"},
		{ID: "rtt-jobs-direct", Name: rtt + ", blocking, **direct action**, a job of its own", Num: pp("tessera", "tessera_rtt_direct"), Den: raw, DenText: rawText, Format: "%.1f µs"},
		{ID: "raw-late", Name: "Raw TCP ping-pong timed after 60000 warm-up round trips instead of 2000", Num: pp("late", "raw_rtt"), Den: raw, DenText: rawText, Format: "%.1f µs"},
		{ID: "raw-handoff", Name: "Raw TCP ping-pong with the design's two goroutine hand-offs (GOMAXPROCS=1)", Num: pp("handoff", "raw_rtt_handoff"), Den: raw, DenText: rawText, Format: "%.1f µs", Note: "the floor of the design"},
		{ID: "raw-work", Name: "Raw TCP ping-pong with 1 µs of processor work per message on each side (`-test rtt-work`)", Num: pp("raw", "raw_rtt_work"), Den: raw, DenText: rawText, Format: "%.1f µs"},
	}
	rows = append(rows, placement("onecpu", "both localities on one core", "raw TCP ping-pong on the same core", "without the wake-ups")...)
	rows = append(rows, placement("apart", "each locality on a core of its own", "raw TCP ping-pong, each process on a core of its own", "with a wake-up in every message")...)
	rows = append(rows, []Row{
		{ID: "raw-timer", Name: "Raw TCP ping-pong with one Go timer pending in each process", Num: pp("raw", "raw_rtt_timer"), Den: raw, DenText: rawText, Format: "%.1f µs", Note: "why the runtime keeps no timer pending"},
		{ID: "rtt-vs-handoff", Name: rtt + ", blocking, against the raw ping-pong **with the hand-offs**", Num: pp("tessera", "tessera_rtt"), Den: pp("handoff", "raw_rtt_handoff"), DenText: "raw with the two hand-offs", Format: "%.1f µs", Note: "the runtime's own cost"},
		{ID: "rtt-poll", Name: rtt + ", 2 processes over TCP, **polling** (`--progress poll`)", Num: pp("poll", "tessera_rtt"), Den: One("mpi-pingpong", "MPI/mpi_rtt", "us/rtt"), DenText: "Open MPI ping-pong over TCP", Format: "%.1f µs", Target: Target{Op: "<=", Bound: 1.2}},
		{ID: "rtt-poll-direct", Name: rtt + ", 2 processes over TCP, **polling**, **direct action**", Num: pp("poll", "tessera_rtt_direct"), Den: One("mpi-pingpong", "MPI/mpi_rtt", "us/rtt"), DenText: "Open MPI ping-pong over TCP", Format: "%.1f µs", Target: Target{Op: "<=", Bound: 1.2}},
		{ID: "bw", Name: "8 MiB `[]float64` calls, window 4, 2 processes over TCP", Num: bw("tessera", "tessera_bw"), Den: bw("raw", "raw_bw"), DenText: "raw TCP stream", Format: "%.2f GB/s", Target: Target{Op: ">=", Bound: 0.8}},
		{ID: "bw-best-mpi", Name: "8 MiB payload throughput, best mode, window 4, 2 processes over TCP", Num: best, Pick: true, Den: One("mpi-stream", "MPI/mpi_bw", "GB/s"), DenText: "Open MPI stream over TCP, replies as the calls", Format: "%.2f GB/s", Target: Target{Op: ">=", Bound: 0.8}},
		{ID: "bw-best-send", Name: "8 MiB payload throughput, best mode, window 4, 2 processes over TCP", Num: best, Pick: true, Den: One("mpi-stream", "MPI/mpi_bw_send", "GB/s"), DenText: "Open MPI plain `MPI_Send` stream over TCP", Format: "%.2f GB/s", Target: Target{Op: ">=", Bound: 0.8}},
		{ID: "tasks", Name: "1,000,000 empty tasks, Spawn + WhenAll, one locality", Num: One("tasks", "Tasks", "tessera-ns/task"), Den: One("tasks", "Tasks", "goroutine-ns/task"), DenText: "goroutine + channel each", RatioUnit: "ratio", Format: "%.0f ns/task", Target: Target{Op: "<=", Bound: 2}},
		{ID: "gid-call", Name: "Call through a GID (owner cached), 2 localities over TCP", Num: One("agas", "AGASCall", "gid-ns/call"), Den: One("agas", "AGASCall", "locality-ns/call"), DenText: "same call through a locality id", RatioUnit: "ratio", Format: "%.0f ns/call", Target: Target{Op: "<=", Bound: 1.1}},
		{ID: "migrate", Name: "Migration of a 64 MiB tile, 2 localities over TCP", Num: One("agas", "AGASMigrate64MiB", "migrate-ms"), Den: One("agas", "AGASMigrate64MiB", "send-ms"), DenText: "64 MiB as an action argument", RatioUnit: "ratio", Format: "%.1f ms", Target: Target{Op: "<=", Bound: 1.3}},
		{ID: "resolve", Name: "Resolve of a cached GID (`agas` BenchmarkResolveCached)", Num: One("resolve", "ResolveCached", "ns/op"), Format: "%.1f ns", Detail: true},
		{ID: "allreduce1", Name: "AllReduce 1 double, 4 localities, blocking", Num: coll("coll", "allreduce1"), Den: mpiColl("allreduce1"), DenText: "Open MPI over TCP", Format: "%.1f µs",
			Target: Target{Op: "<=", Bound: 150, OfValue: true, Text: "≤ 150 µs"}, Note: "the 1.5x ratio is judged on the polling row, as Open MPI polls while it waits"},
		{ID: "allreduce1-bound", Name: "AllReduce 1 double, 4 localities, blocking, **bound** in pairs to the cores (`--bind core`)", Num: coll("coll-bound", "allreduce1"), Den: mpiColl("allreduce1"), DenText: "Open MPI over TCP", Format: "%.1f µs",
			Target: Target{Op: "<=", Bound: 150, OfValue: true, Text: "≤ 150 µs"}},
		{ID: "allreduce1-poll", Name: "AllReduce 1 double, 4 localities, **polling** (`--progress poll`)", Num: coll("coll-poll", "allreduce1"), Den: mpiColl("allreduce1"), DenText: "Open MPI over TCP", Format: "%.1f µs", Target: Target{Op: "<=", Bound: 1.5}},
		{ID: "allreduce1-poll-time", Name: "AllReduce 1 double, 4 localities, **polling**: the time", Num: coll("coll-poll", "allreduce1"), Format: "%.1f µs", Target: Target{Op: "<=", Bound: 150, OfValue: true, Text: "≤ 150 µs"}},
		{ID: "raw-allreduce1", Name: "Plain Go AllReduce 1 double (`bench/rawcoll`: the same algorithm on blocking sockets), 4 processes", Num: coll("rawcoll", "raw_allreduce1"), Den: mpiColl("allreduce1"), DenText: "Open MPI over TCP", Format: "%.1f µs", Note: "the floor of a blocking design"},
		{ID: "allreduce1-vs-raw", Name: "AllReduce 1 double, 4 localities, blocking, against the plain Go program", Num: coll("coll", "allreduce1"), Den: coll("rawcoll", "raw_allreduce1"), DenText: "plain Go, blocking sockets", Format: "%.1f µs", Note: "the runtime's own cost"},
		{ID: "allreduce1mib", Name: "AllReduce 1 MiB, 4 localities, blocking", Num: coll("coll", "allreduce1mib"), Den: mpiColl("allreduce1mib"), DenText: "Open MPI over TCP", Format: "%.0f µs"},
		{ID: "allreduce1mib-poll", Name: "AllReduce 1 MiB, 4 localities, **polling**", Num: coll("coll-poll", "allreduce1mib"), Den: mpiColl("allreduce1mib"), DenText: "Open MPI over TCP", Format: "%.0f µs"},
		{ID: "allgather1mib", Name: "AllGather 1 MiB per locality, 4 localities, blocking", Num: coll("coll", "allgather1mib"), Den: mpiColl("allgather1mib"), DenText: "Open MPI over TCP", Format: "%.0f µs"},
		{ID: "allgather1mib-poll", Name: "AllGather 1 MiB per locality, 4 localities, **polling**", Num: coll("coll-poll", "allgather1mib"), Den: mpiColl("allgather1mib"), DenText: "Open MPI over TCP", Format: "%.0f µs"},
		{ID: "raw-allgather1mib", Name: "Plain Go AllGather 1 MiB per locality (`bench/rawcoll`), 4 processes", Num: coll("rawcoll", "raw_allgather1mib"), Den: mpiColl("allgather1mib"), DenText: "Open MPI over TCP", Format: "%.0f µs", Note: "the floor of a blocking design"},
		{ID: "allgather1mib-vs-raw", Name: "AllGather 1 MiB per locality, 4 localities, blocking, against the plain Go program", Num: coll("coll", "allgather1mib"), Den: coll("rawcoll", "raw_allgather1mib"), DenText: "plain Go, blocking sockets", Format: "%.0f µs", Note: "the runtime's own cost"},
	}...)
	return Section{Name: "spine", Title: "The spine: round trips, bandwidth, tasks, AGAS, collectives", Rows: rows, Text: `Two processes of ` + "`bench/pingpong`" + ` (an action echoing 64 bytes; 8 MiB calls, 4 in flight) on the tcp parcelport (` + "`--parcelport tcp`" + `) against plain Go on TCP and Open MPI over TCP (` + "`bench/mpi`" + `), each kind of job once per repetition, in reversed order every other repetition. The blocking targets compare Tessera with raw TCP **between the same two processes** (` + "`-test rtt-paired`" + `: alternating bursts of 1000 round trips, the median of the per-burst ratios), since on this virtual machine a blocking round trip mostly measures whether the kernel put the two processes on one core or on two (a halted core is woken through the hypervisor); the rows of separate jobs and of each placement (one core, a core each) stay without a target or with their own. Polling is judged against Open MPI, which polls too. Tasks and AGAS are ` + "`go test -bench`" + ` in ` + "`bench/`" + `, their ratios paired inside the benchmark; the collectives run on 4 localities against Open MPI and ` + "`bench/rawcoll`" + ` (the same algorithm on blocking sockets).`}
}

func parcelports() Section {
	pp := func(job, name, unit string) Measure { return One(job, "Pingpong/"+name, unit) }
	note := "tcp stays the default unless nbio wins both"
	rows := []Row{
		{ID: "nbio-rtt", Name: "64-byte round trip, nbio parcelport, 2 processes", Num: pp("nbio", "tessera_rtt", "us/rtt"), Den: pp("tcp", "tessera_rtt", "us/rtt"), DenText: "tcp parcelport", Format: "%.1f µs", Note: note},
		{ID: "nbio-bw", Name: "8 MiB `[]float64` calls, window 4, nbio parcelport", Num: pp("nbio", "tessera_bw", "GB/s"), Den: pp("tcp", "tessera_bw", "GB/s"), DenText: "tcp parcelport", Format: "%.2f GB/s", Note: note},
		{ID: "nbio-many", Name: "32 goroutines × 500 echo calls of 64 B at once, nbio", Num: pp("nbio", "tessera_many", "calls/s"), Den: pp("tcp", "tessera_many", "calls/s"), DenText: "tcp parcelport", Format: "%.0f calls/s", Detail: true},
	}
	for _, s := range []struct{ size, text string }{{"64", "64 B"}, {"4096", "4 KiB"}, {"262144", "256 KiB"}, {"4194304", "4 MiB"}, {"67108864", "64 MiB"}} {
		rows = append(rows, Row{ID: "sweep-" + s.size, Name: "One call carrying " + s.text + ", nbio", Num: pp("nbio", "tessera_sweep/size="+s.size, "us/call"), Den: pp("tcp", "tessera_sweep/size="+s.size, "us/call"), DenText: "tcp", Format: "%.1f µs", Detail: true})
	}
	for _, b := range []string{"1", "4", "16", "64"} {
		rows = append(rows, Row{ID: "coalescing-" + b, Name: "Flood of 64-byte parcels over one tcp connection, MaxBatch " + b + " (parcels/s)", Num: One("coalescing", "TCPCoalescing/MaxBatch="+b, "parcels/s"), Format: "%.0f", Detail: true})
	}
	return Section{Name: "parcelports", Title: "Parcelports: tcp against nbio", Rows: rows, Text: "The same `bench/pingpong -mode tessera` as a job of 2 processes on each parcelport, alternating which goes first; every nbio figure is divided by the tcp figure of the same repetition (above 1, nbio takes longer or moves more bytes a second). The coalescing rows are `go test -bench BenchmarkTCPCoalescing ./parcel/`: 16 goroutines flooding 64-byte parcels over one connection, with the most parcels one write gathers."}
}

func scaling() Section {
	var rows []Row
	for _, n := range []string{"2", "3", "4", "6", "8"} {
		rows = append(rows,
			Row{ID: "fan-" + n, Name: "Fan round trip, " + n + " localities", Num: One("lat-"+n, "Lat/fan", "us/rtt"), Format: "%.1f µs", Detail: true},
			Row{ID: "ring-" + n, Name: "Ring round trip (slowest locality), " + n + " localities", Num: One("lat-"+n, "Lat/ring", "us/rtt"), Format: "%.1f µs", Detail: true},
			Row{ID: "allreduce1-" + n, Name: "AllReduce 1 double, " + n + " localities", Num: One("coll-"+n, "Coll/allreduce1", "us/op"), Format: "%.1f µs", Detail: true},
			Row{ID: "allreduce1mib-" + n, Name: "AllReduce 1 MiB, " + n + " localities", Num: One("coll-"+n, "Coll/allreduce1mib", "us/op"), Format: "%.0f µs", Detail: true})
	}
	return Section{Name: "scaling", Title: "Scaling with the number of localities", Rows: rows, Text: "`bench/latbench` (fan: locality 0 calls the others in turn; ring: every locality calls its neighbour at once) and `bench/collbench` on 2 to 8 localities of this 2-core machine, on the default parcelport (shared memory between them). No target: with more processes than cores the figures include the wait for a core; what they show is whether one more process costs more than its share."}
}

func cannon() Section {
	var rows []Row
	for _, b := range []string{"pure", "openblas"} {
		dgemm := One("dgemm-pure", "", "s/op")
		if b == "openblas" {
			dgemm = Measure{Jobs: []string{"dgemm1-openblas", "dgemmN-openblas"}, Unit: "s/op"}
		}
		for _, n := range []string{"2048", "4096"} {
			d := dgemm
			d.Bench = "Dgemm/n=" + n
			for _, p := range []string{"4", "2", "1"} {
				row := Row{ID: fmt.Sprintf("cannon-%s-%s-%s", b, n, p), Name: fmt.Sprintf("cannon_product_d %s x %s, %s (%s build)", n, n, localities(p), b),
					Num: One("cannon-"+b+"-"+p, "Cannon/n="+n, "s/op"), Den: d, DenText: "one process, one Dgemm", Format: "%.3f s", Inverse: true, Detail: p != "4"}
				if p == "4" && b == "openblas" {
					row.Target = Target{Op: ">=", Bound: 0.8, Text: "efficiency ≥ 0.8"}
				} else if p == "4" {
					row.Note = "no target for the pure-Go build"
				}
				rows = append(rows, row)
			}
		}
	}
	for _, n := range []string{"2048", "4096"} {
		dask := One("dask", "Dask/n="+n, "s/op")
		rows = append(rows,
			Row{ID: "dask-" + n, Name: fmt.Sprintf("cannon_product_d %s x %s, 4 localities (openblas) against Dask, both warm", n, n), Num: One("cannon-dask", "Cannon/n="+n, "s/op"), Den: dask, DenText: "Dask A@B, threads, 2 x 2 chunks", Format: "%.3f s", Target: Target{Op: "<=", Bound: 0.99, Text: "< 1 (ahead of Dask)"}},
			Row{ID: "nocomm-dask-" + n, Name: fmt.Sprintf("Cannon's Dgemms without communication, %s, against Dask", n), Num: One("nocomm", "Nocomm/n="+n, "s/op"), Den: dask, DenText: "Dask", Format: "%.3f s", Detail: true},
			Row{ID: "dask-pure-" + n, Name: fmt.Sprintf("cannon_product_d %s, 4 localities, pure build, against Dask", n), Num: One("cannon-dask-pure", "Cannon/n="+n, "s/op"), Den: dask, DenText: "Dask", Format: "%.3f s", Detail: true})
	}
	rows = append(rows, Row{ID: "dask-own-4096", Name: "cannon_product_d 4096 against Dask, OpenBLAS choosing its own kernels (run when the environment sets OPENBLAS_CORETYPE)",
		Num: One("cannon-dask-own", "Cannon/n=4096", "s/op"), Den: One("dask-own", "Dask/n=4096", "s/op"), DenText: "Dask", Format: "%.3f s", Detail: true})
	return Section{Name: "cannon", Title: "Cannon's matrix product", Rows: rows, Text: "`examples/cannon` (`tessera run -n P cannon -n SIZE --repeat 3`: the best of 3 warm products a job) against one `blas64.Gemm` of the whole matrices in one process (`bench/cannon`, the same BLAS, right next to it; for openblas the faster of 1 and 2 OpenBLAS threads). Efficiency is the baseline's time over Tessera's. Against Dask (`bench/cannon_dask.py`: `(A @ B).persist()` in 2 x 2 chunks, threads, OpenBLAS single-threaded) each repetition runs the Tessera job, Cannon's Dgemms without communication, the pure build and Dask, in reversed order every other repetition. On 2 cores 4 localities show the algorithm's cost over the machine's Dgemm, not a speed-up."}
}

func retile() Section {
	return Section{Name: "retile", Title: "Retiling", Text: "A 4096 x 4096 array tiled by rows on 4 localities, retiled to columns with `primitives.Retile` (`bench/retile`: the median of 5 retiles after an untimed one, 3/4 of the array crossing between localities), against the raw parcel bandwidth of the same build in the same repetition (8 MiB `[]float64` parcels between 2 localities, 4 in flight).",
		Rows: []Row{{ID: "retile", Name: "retile_d 4096 x 4096 row -> column, 4 localities", Num: One("retile", "Retile/n=4096", "GB/s"), Den: One("bw", "Pingpong/tessera_bw", "GB/s"), DenText: "parcels, 2 localities", Format: "%.3f GB/s"}}}
}

func als() Section {
	numpy := Measure{Jobs: []string{"numpy1", "numpy2"}, Bench: "ALS/numpy", Unit: "s/op"}
	rows := []Row{{ID: "als-trace", Name: "ALS with full tracing (OTF2 of every task, samplers), 2 localities", Num: One("als-traced", "ALS/tessera", "s/op"), Den: One("als-untraced", "ALS/tessera", "s/op"), DenText: "the same run without tracing", RatioFmt: "%.3f", Format: "%.3f s", Target: Target{Op: "<=", Bound: 1.05}}}
	for _, b := range []string{"pure", "openblas"} {
		for _, n := range []string{"2", "1", "4"} {
			rows = append(rows, Row{ID: "als-" + b + "-" + n, Name: fmt.Sprintf("ALS 4800 x 4800, density 0.01, 40 factors, 5 iterations, %s (%s build)", localities(n), b), Num: One("als-"+b+"-"+n, "ALS/tessera", "s/op"), Den: numpy,
				DenText: "NumPy, best of 1 and 2 OpenBLAS threads", Format: "%.2f s", Target: map[bool]Target{true: {Op: "<=", Bound: 0.5}}[n == "2"], Detail: n != "2"})
		}
	}
	return Section{Name: "als", Title: "Alternating least squares against NumPy", Rows: rows, Text: "`examples/als` on synthetic ratings (`als --synthetic 4800,4800,0.01 --make-ratings`), 40 factors, 5 iterations, against the sparse NumPy version `bench/als_numpy.py` on the same file, the faster of `OPENBLAS_NUM_THREADS=1` and `=2`; both time the iterations alone, and every run's last loss must agree to 1e-6. NumPy and the openblas build run the kernels OpenBLAS picks for this CPU (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for this section). Tracing: 3 pairs a repetition of the 2-locality run with and without `--trace DIR --trace-format otf2`, in alternating order."}
}

func alsSoak() Section {
	kib := func(b string) Measure { return One("als-soak", "ALSSoak/"+b, "KiB") }
	return Section{Name: "als-soak", Title: "Memory of a long ALS run", Text: "`tessera run -n 2 als --synthetic 2000,2000,0.01 --factors 16 --iterations 3000 --memory-every 300`: every locality prints its peak RSS (getrusage) every 300 iterations; the row is the larger of the two localities' peaks after the last iteration against the same after the 300th. Arrays are reclaimed when no locality reaches them any more, without Release calls in the program.",
		Rows: []Row{{ID: "als-soak", Name: "ALS 2000 x 2000, 16 factors, 2 localities: peak RSS after 3000 iterations", Num: kib("peak-rss-last"), Den: kib("peak-rss-first"), DenText: "the peak after 300 iterations", RatioFmt: "%.3f", Format: "%.0f KiB", Target: Target{Op: "<=", Bound: 1.25}}}}
}

func conv1d() Section {
	numpy := Measure{Jobs: []string{"numpy1", "numpy2"}, Bench: "Conv1D/numpy", Unit: "s/op"}
	var rows []Row
	for _, b := range []string{"pure", "openblas"} {
		for _, n := range []string{"1", "2"} {
			rows = append(rows, Row{ID: "conv1d-" + b + "-" + n, Name: fmt.Sprintf("Conv1D (2000, 80, 3) * (10, 3, 100), valid, %s (%s build)", localities(n), b), Num: One("conv1d-"+b+"-"+n, "Conv1D/tessera", "s/op"), Den: numpy,
				DenText: "NumPy im2col + matmul, best of 1 and 2 OpenBLAS threads", Format: "%.3f s", Target: Target{Op: "<=", Bound: 1.0}})
		}
	}
	return Section{Name: "conv1d", Title: "Conv1D against NumPy", Rows: rows, Text: "The convolution of the JetLag paper's Listing 2 (`bench/conv1d`: `primitives.Conv1D`, im2col and one Gemm per block, page-tiled, setting its result in reused memory) against `bench/conv1d_numpy.py` (im2col + matmul with buffers allocated once, the faster of 1 and 2 OpenBLAS threads), the median of 10 convolutions after 2 warm-up; every run's checksum must agree to 1e-9. OpenBLAS picks its own kernels for this CPU, for NumPy and the openblas build alike."}
}

func tracing() Section {
	tk := func(grain, unit string) Measure { return One("tracing-tasks", "TracingTasks/"+grain, unit) }
	return Section{Name: "tracing", Title: "Tracing overhead", Text: "`go test -bench 'BenchmarkTracerEvent|BenchmarkTracingTasks' ./bench/`: one Enter/Leave pair into the OTF2 buffer, and rounds of tasks on two one-locality runtimes in one process, one traced, alternating, in CPU time of the process (getrusage), which other programs on the machine do not inflate. The traced job is `runtime/testdata/tracejob run 200 6` on 2 processes with and without `tessera run --trace`, alternating, the wall time of the whole run with the archive's merge.",
		Rows: []Row{
			{ID: "trace-10us", Name: "Tracing on, tasks of ~10 µs, one locality (CPU time)", Num: tk("10us", "traced-cpu-ns/task"), Den: tk("10us", "untraced-cpu-ns/task"), DenText: "tracing off", RatioFmt: "%.3f", RatioUnit: "cpu-ratio", Format: "%.0f ns/task", Target: Target{Op: "<=", Bound: 1.05}},
			{ID: "trace-empty", Name: "Tracing on, empty tasks, one locality (CPU time; worst case)", Num: tk("empty", "traced-cpu-ns/task"), Den: tk("empty", "untraced-cpu-ns/task"), DenText: "tracing off", RatioUnit: "cpu-ratio", Format: "%.0f ns/task"},
			{ID: "trace-1us", Name: "Tracing on, tasks of ~1 µs, one locality (CPU time)", Num: tk("1us", "traced-cpu-ns/task"), Den: tk("1us", "untraced-cpu-ns/task"), DenText: "tracing off", RatioUnit: "cpu-ratio", Format: "%.0f ns/task", Detail: true},
			{ID: "tracejob", Name: "`tessera run --trace`, tracejob on 2 processes, the whole job with writing and merging the archive (wall time)", Num: One("tracejob-on", "Tracejob", "s/op"), Den: One("tracejob-off", "Tracejob", "s/op"), DenText: "no --trace", RatioFmt: "%.3f", Format: "%.2f s",
				Target: Target{Text: "— (reported; the ≤ 1.05 target is the ALS row's)"}, Note: "task-heavy worst case"},
			{ID: "tracer-event", Name: "One traced Enter/Leave pair (wall ns per event)", Num: One("tracer-event", "TracerEvent", "ns/event"), Format: "%.0f ns", Detail: true},
		}}
}

func spans() Section {
	sp := func(unit string) Measure { return One("spans", "SpansRoundTrip", unit) }
	return Section{Name: "spans", Title: "OpenTelemetry spans", Text: "`go test -bench BenchmarkSpansRoundTrip ./bench/`: three jobs of two localities in one process over loopback TCP, with no span hook, a no-op hook and an SDK provider sampling every span (exporter dropping them), their calls alternating one by one; CPU time of the process.",
		Rows: []Row{
			{ID: "spans-on", Name: "Action round trip with OpenTelemetry spans (SDK, every span sampled), 2 localities over TCP in one process (CPU time)", Num: sp("on-cpu-ns/call"), Den: sp("off-cpu-ns/call"), DenText: "no span hook", RatioUnit: "cpu-on/off", Format: "%.0f ns/call"},
			{ID: "spans-noop", Name: "The same with a no-op span hook (CPU time)", Num: sp("noop-cpu-ns/call"), Den: sp("off-cpu-ns/call"), DenText: "no span hook", RatioUnit: "cpu-noop/off", Format: "%.0f ns/call", Detail: true},
		}}
}
