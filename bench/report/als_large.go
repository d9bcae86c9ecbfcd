package report

import "fmt"

// alsLargeJobs are the names bench/harness gives the als-large job of a
// solver on n localities, for either build (a run has one of them).
func alsLargeJobs(solver, n string) []string {
	return []string{"als-large-pure-" + solver + "-" + n, "als-large-openblas-" + solver + "-" + n}
}

// alsLarge is the section of examples/als at MovieLens-20M's scale: the
// targets at 2 localities, then the scaling table on 1, 2 and 4.
func alsLarge() Section {
	m := func(solver, n, bench, unit string) Measure {
		return Measure{Jobs: alsLargeJobs(solver, n), Bench: "ALSLarge/" + bench, Unit: unit}
	}
	input := func(n string) Measure { // the input is read alike by both solvers' jobs: the best of them
		return Measure{Jobs: append(alsLargeJobs("cg", n), alsLargeJobs("exact", n)...), Bench: "ALSLarge/input", Unit: "s/op"}
	}
	pandas := One("pandas", "ALSLarge/pandas_read", "s/op")
	numpy := Measure{Jobs: []string{"numpy1", "numpy2"}, Bench: "ALSLarge/numpy_iteration", Unit: "s/op"}
	const shape = "138,000 x 27,000, ~20M ratings"
	rows := []Row{
		{ID: "als-large-input", Name: "ALS input ready (read, ids numbered, ratings at their owners), " + shape + ", 2 localities", Num: input("2"), Den: pandas,
			DenText: "pandas `read_csv` of the same file, one core", Format: "%.2f s", Target: Target{Op: "<=", Bound: 0.5}},
		{ID: "als-large-cg-exact", Name: "ALS seconds per iteration, CG (4 steps) against the exact solver, f = 64, " + shape + ", 2 localities", Num: m("cg", "2", "iteration", "s/op"), Den: m("exact", "2", "iteration", "s/op"),
			DenText: "exact solver (Syrk + Cholesky per row)", RatioFmt: "%.3f", Format: "%.2f s", Target: Target{Op: "<=", Bound: 1.0 / 3, Text: "≤ 1/3"}},
		{ID: "als-large-loss", Name: "ALS loss after 15 iterations, CG against exact, same start, f = 64, 2 localities", Num: m("cg", "2", "iteration", "loss"), Den: m("exact", "2", "iteration", "loss"),
			DenText: "exact solver", RatioFmt: "%.4f", Format: "%.7g", Target: Target{Op: "<=", Bound: 1.005, Text: "≤ 1.005 (within 0.5%)"}},
		{ID: "als-large-loss-low", Name: "The same, the other side: CG's loss not more than 0.5% below the exact solver's", Num: m("cg", "2", "iteration", "loss"), Den: m("exact", "2", "iteration", "loss"),
			DenText: "exact solver", RatioFmt: "%.4f", Format: "%.7g", Target: Target{Op: ">=", Bound: 0.995}, Detail: true},
		{ID: "als-large-rss", Name: "ALS peak RSS summed over 2 localities (CG), over the input file's size", Num: m("cg", "2", "rss", "KiB"), RatioUnit: "rss/file",
			Format: "%.0f KiB", Target: Target{Op: "<=", Bound: 3}},
		{ID: "als-large-rss-exact", Name: "The same with the exact solver", Num: m("exact", "2", "rss", "KiB"), RatioUnit: "rss/file", Format: "%.0f KiB", Target: Target{Op: "<=", Bound: 3}, Detail: true},
		{ID: "als-large-numpy", Name: "ALS seconds per iteration, CG, f = 64, " + shape + ", 2 localities, against NumPy", Num: m("cg", "2", "iteration", "s/op"), Den: numpy,
			DenText: "sparse NumPy ALS (`bench/als_numpy.py`, exact per row), best of 1 and 2 OpenBLAS threads", RatioFmt: "%.3f", Format: "%.2f s", Target: Target{Op: "<=", Bound: 0.2},
			Note: "per iteration: NumPy runs fewer iterations (ALS_LARGE_NUMPY_ITER) at this size"},
		{ID: "als-large-numpy-exact", Name: "The same with the exact solver, against NumPy", Num: m("exact", "2", "iteration", "s/op"), Den: numpy,
			DenText: "sparse NumPy ALS", RatioFmt: "%.3f", Format: "%.2f s", Detail: true},
	}
	for _, n := range []string{"1", "2", "4"} {
		on := ", " + localities(n)
		rows = append(rows,
			Row{ID: "als-large-scale-input-" + n, Name: "Scaling: input ready" + on, Num: input(n), Den: pandas, DenText: "pandas `read_csv`", Format: "%.2f s", Detail: true},
			Row{ID: "als-large-scale-cg-" + n, Name: "Scaling: s/iteration, CG, f = 64" + on, Num: m("cg", n, "iteration", "s/op"), Den: m("exact", n, "iteration", "s/op"),
				DenText: "exact solver", RatioFmt: "%.3f", Format: "%.2f s", Detail: true},
			Row{ID: "als-large-scale-exact-" + n, Name: "Scaling: s/iteration, exact, f = 64" + on, Num: m("exact", n, "iteration", "s/op"), Format: "%.2f s", Detail: true},
			Row{ID: "als-large-scale-rss-" + n, Name: "Scaling: peak RSS of the largest locality (CG); ratio: the sum over the file's size" + on, Num: m("cg", n, "rss", "max-KiB"),
				RatioUnit: "rss/file", Format: "%.0f KiB", Detail: true},
			Row{ID: "als-large-scale-loss-" + n, Name: "Scaling: final loss, CG against exact" + on, Num: m("cg", n, "iteration", "loss"), Den: m("exact", n, "iteration", "loss"),
				DenText: "exact solver", RatioFmt: "%.4f", Format: "%.7g", Detail: true})
	}
	return Section{Name: "als-large", Title: "ALS at MovieLens-20M's scale", Rows: rows, Text: fmt.Sprint(
		"`examples/als` on a synthetic file of MovieLens-20M's shape (`als --synthetic 138000,27000,0.005378 --make-ratings`: ", shape,
		", about 540 MB, long-tailed item popularity spread over the ids), 64 factors, 15 iterations from the same start with `--solver cg --cg-steps 4` (warm-started; 3 steps leave the loss about 1% above the exact solver's at 64 factors) and `--solver exact`, ",
		"the loss after the last only (`--loss-every 0`), on 1, 2 and 4 localities; every locality prints its peak RSS (getrusage) after the last iteration. ",
		"Baselines on the same file in the same repetition: pandas' `read_csv` on one core (`bench/als_read.py`) and the sparse NumPy ALS of the ALS section ",
		"(`bench/als_numpy.py --loss-every 0`, the faster of 1 and 2 OpenBLAS threads), which runs fewer iterations at this size: the NumPy rows compare seconds per iteration. ",
		"The section is optional (`SECTIONS=als-large`); the rows of the scaling table are in this section only.")}
}
