package report

// node is the section of the localities of one machine: the shm
// parcelport against Open MPI's shared-memory transport (vader) and the
// tcp port, the UCX port on UCX's tcp and shared-memory transports, and
// two programs over shm and tcp.
func node() Section {
	pp := func(job, name string) Measure { return One(job, "Pingpong/"+name, "us/rtt") }
	bw := func(job string) Measure { return One(job, "Pingpong/tessera_bw", "GB/s") }
	coll := func(job, name string) Measure { return One(job, "Coll/"+name, "us/op") }
	// The best of blocking and polling, unbound and bound to cores,
	// repetition by repetition; Open MPI's best of its default placement
	// and its ranks bound to cores.
	shmColl := func(name string) Measure {
		return Measure{Jobs: []string{"coll-shm", "coll-shm-poll", "coll-shm-bound", "coll-shm-bound-poll"}, Bench: "Coll/" + name, Unit: "us/op"}
	}
	vaderRTT := One("vader-pingpong", "MPI/mpi_rtt", "us/rtt")
	vaderColl := func(name string) Measure {
		return Measure{Jobs: []string{"vader-coll", "vader-coll-bound"}, Bench: "Coll/mpi_" + name, Unit: "us/op"}
	}
	vaderText := "Open MPI, shared memory (`--mca pml ob1 --mca btl self,vader`)"
	rows := []Row{
		{ID: "node-rtt-poll-direct", Name: rtt + ", 2 localities, shm, **polling**, **direct action** (the better of `--bind core` and not)", Num: Measure{Jobs: []string{"shm-poll", "shm-poll-bound"}, Bench: "Pingpong/tessera_rtt_direct", Unit: "us/rtt"}, Den: vaderRTT, DenText: vaderText, Format: "%.1f µs", Target: Target{Op: "<=", Bound: 3}},
		{ID: "node-rtt-poll", Name: rtt + ", 2 localities, shm, **polling**", Num: pp("shm-poll", "tessera_rtt"), Den: vaderRTT, DenText: vaderText, Format: "%.1f µs", Detail: true},
		{ID: "node-rtt-tcp-poll-direct", Name: rtt + ", 2 localities, tcp, polling, direct action", Num: pp("tcp-poll", "tessera_rtt_direct"), Den: vaderRTT, DenText: vaderText, Format: "%.1f µs", Detail: true},
		{ID: "node-rtt-block", Name: rtt + ", 2 localities, shm, **blocking**", Num: pp("shm", "tessera_rtt"), Den: pp("tcp", "tessera_rtt"), DenText: "tcp parcelport, blocking", Format: "%.1f µs", Target: Target{Op: "<=", Bound: 0.5}},
		{ID: "node-rtt-block-direct", Name: rtt + ", 2 localities, shm, blocking, direct action", Num: pp("shm", "tessera_rtt_direct"), Den: pp("tcp", "tessera_rtt_direct"), DenText: "tcp parcelport, blocking", Format: "%.1f µs", Detail: true},
		{ID: "node-bw", Name: "8 MiB `[]float64` calls, window 4, 2 localities, shm", Num: bw("shm"), Den: One("vader-stream", "MPI/mpi_bw", "GB/s"), DenText: "Open MPI stream over vader, replies as the calls (`bench/mpi/stream.c`)", Format: "%.2f GB/s", Target: Target{Op: ">=", Bound: 0.8}},
		{ID: "node-bw-poll", Name: "8 MiB `[]float64` calls, window 4, 2 localities, shm, polling", Num: bw("shm-poll"), Den: One("vader-stream", "MPI/mpi_bw", "GB/s"), DenText: "Open MPI stream over vader", Format: "%.2f GB/s", Detail: true},
		{ID: "node-bw-send", Name: "8 MiB `[]float64` calls, window 4, 2 localities, shm, against plain sends", Num: bw("shm"), Den: One("vader-stream", "MPI/mpi_bw_send", "GB/s"), DenText: "Open MPI plain `MPI_Send` stream over vader", Format: "%.2f GB/s", Detail: true},
		{ID: "node-bw-tcp", Name: "8 MiB `[]float64` calls, window 4, 2 localities, shm against tcp", Num: bw("shm"), Den: bw("tcp"), DenText: "tcp parcelport", Format: "%.2f GB/s", Detail: true},
		{ID: "node-allreduce1", Name: "AllReduce 1 double, 4 localities, shm (the best of blocking, polling and `--bind core`)", Num: shmColl("allreduce1"), Den: vaderColl("allreduce1"), DenText: vaderText, Format: "%.1f µs", Target: Target{Op: "<=", Bound: 2}},
		{ID: "node-allreduce1mib", Name: "AllReduce 1 MiB, 4 localities, shm (the best of blocking, polling and `--bind core`)", Num: shmColl("allreduce1mib"), Den: vaderColl("allreduce1mib"), DenText: vaderText, Format: "%.0f µs", Target: Target{Op: "<=", Bound: 1.5}},
		{ID: "node-allgather1mib", Name: "AllGather 1 MiB per locality, 4 localities, shm (the best of blocking, polling and `--bind core`)", Num: shmColl("allgather1mib"), Den: vaderColl("allgather1mib"), DenText: vaderText, Format: "%.0f µs", Target: Target{Op: "<=", Bound: 1.5}},
	}
	for _, c := range []struct{ name, text, format string }{{"allreduce1", "AllReduce 1 double", "%.1f µs"}, {"allreduce1mib", "AllReduce 1 MiB", "%.0f µs"}, {"allgather1mib", "AllGather 1 MiB per locality", "%.0f µs"}} {
		for _, mode := range []struct{ suffix, text string }{{"", "blocking"}, {"-poll", "polling"}} {
			rows = append(rows, Row{ID: "node-" + c.name + "-tcp" + mode.suffix, Name: c.text + ", 4 localities, shm against tcp, " + mode.text, Num: coll("coll-shm"+mode.suffix, c.name),
				Den: coll("coll-tcp"+mode.suffix, c.name), DenText: "tcp parcelport, " + mode.text, Format: c.format, Detail: true})
		}
	}
	ucxRTT, ucxBW := Target{Op: "<=", Bound: 1.3}, Target{Op: ">=", Bound: 1 / 1.3, Text: "within 1.3x (≥ 0.77)"}
	smRTT, smBW := Target{Op: "<=", Bound: 1.5}, Target{Op: ">=", Bound: 1 / 1.5, Text: "within 1.5x (≥ 0.67)"}
	rows = append(rows,
		Row{ID: "ucx-tcp-rtt", Name: rtt + ", 2 localities, **ucx** port, `UCX_TLS=tcp`, blocking", Num: pp("ucx-tcp", "tessera_rtt"), Den: pp("tcp", "tessera_rtt"), DenText: "tcp parcelport", Format: "%.1f µs", Target: ucxRTT},
		Row{ID: "ucx-tcp-bw", Name: "8 MiB `[]float64` calls, window 4, **ucx** port, `UCX_TLS=tcp`", Num: bw("ucx-tcp"), Den: bw("tcp"), DenText: "tcp parcelport", Format: "%.2f GB/s", Target: ucxBW},
		Row{ID: "ucx-sm-rtt", Name: rtt + ", 2 localities, **ucx** port, `UCX_TLS=sm,self`, blocking", Num: pp("ucx-sm", "tessera_rtt"), Den: pp("shm", "tessera_rtt"), DenText: "shm parcelport", Format: "%.1f µs", Target: smRTT},
		Row{ID: "ucx-sm-bw", Name: "8 MiB `[]float64` calls, window 4, **ucx** port, `UCX_TLS=sm,self`", Num: bw("ucx-sm"), Den: bw("shm"), DenText: "shm parcelport", Format: "%.2f GB/s", Target: smBW},
		Row{ID: "ucx-sm-rtt-direct", Name: rtt + ", ucx port, `UCX_TLS=sm,self`, direct action", Num: pp("ucx-sm", "tessera_rtt_direct"), Den: pp("shm", "tessera_rtt_direct"), DenText: "shm parcelport", Format: "%.1f µs", Detail: true},
	)
	same := Target{Op: "<=", Bound: 1.05, Text: "≤ 1.05 (no slower than tcp)"}
	rows = append(rows,
		Row{ID: "node-cannon", Name: "cannon_product_d 4096 x 4096, 4 localities, shm (pure build)", Num: One("cannon-shm", "Cannon/n=4096", "s/op"), Den: One("cannon-tcp", "Cannon/n=4096", "s/op"), DenText: "tcp parcelport", Format: "%.3f s", RatioFmt: "%.3f", Target: same},
		Row{ID: "node-als", Name: "ALS 4800 x 4800, density 0.01, 40 factors, 5 iterations, 2 localities, shm (pure build)", Num: One("als-shm", "ALS/tessera", "s/op"), Den: One("als-tcp", "ALS/tessera", "s/op"), DenText: "tcp parcelport", Format: "%.2f s", RatioFmt: "%.3f", Target: same},
	)
	return Section{Name: "node", Title: "One machine: the shm and ucx parcelports against Open MPI's shared memory", Rows: rows,
		Text: "Localities on one machine, `tessera run --parcelport shm` (the tcp port whose connections to localities on the same machine move to rings in shared memory) against Open MPI over its shared-memory transport (`mpirun --mca pml ob1 --mca btl self,vader`, `bench/mpi`) and against `--parcelport tcp`, in one run: `bench/pingpong` (64-byte echo, plain and direct action, blocking and `--progress poll`; 8 MiB calls, 4 in flight) on 2 localities, `bench/collbench` on 4, each kind of job once per repetition, in reversed order every other repetition. The collective targets take the best of shm's blocking and polling runs, each also with `tessera run --bind core`, in each repetition (Open MPI polls), against the better of Open MPI's default placement and `--bind-to core:overload-allowed` (mpirun leaves 4 ranks on 2 cores unbound by default and binds 2 ranks to cores); the polling direct round trip is the better of `--bind core` and not (mpirun binds both ranks). The ucx rows are `bench/pingpong` built with `-tags ucx` (`--parcelport ucx`), on UCX's tcp transport against the tcp port and on its shared-memory transports (`UCX_TLS=sm,self`) against the shm port; they are missing where UCX is not installed. Cannon (4096, 4 localities, the best of 3 products) and ALS (4800 x 4800, 2 localities, exact solver) run over shm and tcp, alternating, and their losses must agree."}
}
