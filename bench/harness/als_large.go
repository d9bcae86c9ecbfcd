package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// alsLarge is examples/als at the scale of MovieLens-20M: a synthetic file
// of its shape (138,000 users x 27,000 items, about 20 million ratings and
// 540 MB; long-tailed item popularity, at least 20 ratings a user, half
// stars), read on 1, 2 and 4 localities, then 15 iterations at 64 factors
// with the conjugate-gradient (ALS_LARGE_CG_STEPS steps a row, 4) and the
// exact solver from the same start,
// the loss computed after the last only (--loss-every 0), so that it is
// the solvers that are compared. Every locality prints its peak RSS after
// the last iteration (--memory-every). The baselines, on the same file in
// the same repetition: pandas' read_csv on one core (bench/als_read.py),
// also with the ids numbered densely as the program numbers them, and
// the sparse NumPy ALS of the "als" section (bench/als_numpy.py) with 1
// and 2 OpenBLAS threads, which runs ALS_LARGE_NUMPY_ITER iterations (3:
// the per-iteration times are compared).
//
// It is optional: it takes long and a large temporary file, so it runs
// only when SECTIONS names it exactly (SECTIONS=als-large), never by
// default nor for SECTIONS=als.
func alsLarge(bin string, reps int) plan {
	size, iters := setting("ALS_LARGE_SIZE", "138000,27000,0.005378"), count("ALS_LARGE_ITER", 15)
	npIters := str(count("ALS_LARGE_NUMPY_ITER", 3))
	// 4 CG steps: at 64 factors 3 leave the loss about 1% above the exact
	// solver's after 15 iterations, 4 about 0.2% (30000 x 6000 at this
	// density).
	steps := str(count("ALS_LARGE_CG_STEPS", 4))
	all := builds(bin, "als")
	build := all[len(all)-1]      // openblas when built
	pandas, numpy := false, false // known once the section runs: plans are built for every run
	setup := func(int) []job {
		if pandas = pyHas("pandas"); !pandas {
			say("als-large: %s has no pandas: the read_csv baseline will be missing", python)
		}
		if numpy = pyHas("numpy"); !numpy {
			say("als-large: %s has no numpy: the NumPy ALS baseline will be missing", python)
		}
		return []job{{name: "ratings", argv: []string{"@als", "--synthetic", size, "--make-ratings", "{tmp}/ratings.csv", "--quiet"}, parse: func(string) []string { return nil }, timeout: 10 * time.Minute}}
	}
	jobs := func(rep int) []job {
		var jobs []job
		if pandas {
			jobs = append(jobs, job{name: "pandas", argv: []string{python, "bench/als_read.py", "{tmp}/ratings.csv"}, timeout: 10 * time.Minute})
		}
		if numpy {
			for _, t := range []string{"1", "2"} {
				jobs = append(jobs, job{name: "numpy" + t, argv: []string{python, "bench/als_numpy.py", "{tmp}/ratings.csv", "--factors", "64", "--iterations", npIters, "--loss-every", "0"},
					env: []string{"OPENBLAS_NUM_THREADS=" + t, "OMP_NUM_THREADS=" + t}, parse: numpyIterationLines, timeout: 40 * time.Minute})
			}
		}
		for _, n := range []int{1, 2, 4} {
			for _, solver := range []string{"cg", "exact"} {
				j := run(fmt.Sprintf("als-large-%s-%s-%d", build, solver, n), n, nil, variant("als", build),
					"--ratings", "{tmp}/ratings.csv", "--factors", "64", "--iterations", str(iters), "--solver", solver, "--cg-steps", steps,
					"--loss-every", "0", "--memory-every", str(iters), "--quiet")
				j.parse, j.timeout = alsLargeLines, 40*time.Minute
				jobs = append(jobs, j)
			}
		}
		return alternate(rep, jobs)
	}
	return plan{name: "als-large", optional: true, phases: []phase{{1, setup}, {reps, jobs}}, unset: openblasChoice()}
}

// iterationMean is the mean time of the iteration lines among lines and
// the last loss they print; ok is false without an iteration or a loss.
func iterationMean(lines []string) (n int, mean float64, loss string, ok bool) {
	alsIteration := regexp.MustCompile(`^iteration \d+/\d+: ([0-9.]+) s(?:, loss (\S+))?`)
	total := 0.0
	for _, l := range lines {
		m := alsIteration.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, 0, "", false
		}
		total, n = total+s, n+1
		if m[2] != "" {
			loss = m[2]
		}
	}
	if n == 0 || loss == "" {
		return 0, 0, "", false
	}
	return n, total / float64(n), loss, true
}

// alsLargeLines turns the output of examples/als into benchmark lines:
// the time until the input is ready; the mean time of an iteration with
// the last loss; and, when every locality printed its peak RSS after the
// last iteration, their sum, the largest, and the sum over the input
// file's size.
func alsLargeLines(out string) []string {
	alsReady := regexp.MustCompile(`^als: .*input ready in ([0-9.]+) s(?: \(a file of (\d+) bytes\))?`)
	alsMemory := regexp.MustCompile(`^(?:\[L\d+\] )?memory: locality (\d+), iteration (\d+): peak RSS (\d+) KiB`)
	var lines []string
	fileBytes := 0.0
	for _, l := range locality0(out) {
		if m := alsReady.FindStringSubmatch(l); m != nil {
			lines = append(lines, fmt.Sprintf("BenchmarkALSLarge/input 1 %s s/op", m[1]))
			if m[2] != "" {
				fileBytes, _ = strconv.ParseFloat(m[2], 64)
			}
		}
	}
	n, mean, loss, ok := iterationMean(locality0(out))
	if len(lines) != 1 || !ok {
		return nil
	}
	lines = append(lines, fmt.Sprintf("BenchmarkALSLarge/iteration %d %.3f s/op %s loss", n, mean, loss))
	peak := map[string]int64{} // by locality: the line of the last iteration
	for _, l := range strings.Split(out, "\n") {
		if m := alsMemory.FindStringSubmatch(l); m != nil && m[2] == str(n) {
			peak[m[1]], _ = strconv.ParseInt(m[3], 10, 64)
		}
	}
	if len(peak) == 0 {
		return lines
	}
	sum, most := int64(0), int64(0)
	for _, kib := range peak {
		sum, most = sum+kib, max(most, kib)
	}
	rss := fmt.Sprintf("BenchmarkALSLarge/rss 1 %d KiB %d max-KiB %d localities", sum, most, len(peak))
	if fileBytes > 0 {
		rss += fmt.Sprintf(" %.3f rss/file", float64(sum)*1024/fileBytes)
	}
	return append(lines, rss)
}

// numpyIterationLines turns the output of bench/als_numpy.py into one
// line: the mean time of its iterations and its last loss.
func numpyIterationLines(out string) []string {
	n, mean, loss, ok := iterationMean(locality0(out))
	if !ok {
		return nil
	}
	return []string{fmt.Sprintf("BenchmarkALSLarge/numpy_iteration %d %.3f s/op %s loss", n, mean, loss)}
}
