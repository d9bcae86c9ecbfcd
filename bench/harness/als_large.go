package main

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// alsLarge is examples/als at the scale of MovieLens-20M: a synthetic file
// of its shape (138,000 users x 27,000 items, about 20 million ratings and
// 520 MB; long-tailed item popularity, at least 20 ratings a user, half
// stars), read on 1 and 2 localities, then 15 iterations at 64 factors
// with the conjugate-gradient and the exact solver, the loss computed
// after the last only (--loss-every 0), so that it is the solvers that
// are compared. The baseline of the input
// is pandas' read_csv of the same file on one core (bench/als_read.py),
// also with the ids numbered densely as the program numbers them.
//
// It is optional: it takes minutes and a large temporary file, so it runs
// only when SECTIONS names it exactly (SECTIONS=als-large), never by
// default nor for SECTIONS=als.
func alsLarge(bin string, reps int) plan {
	size, iters := setting("ALS_LARGE_SIZE", "138000,27000,0.005378"), str(count("ALS_LARGE_ITER", 15))
	all := builds(bin, "als")
	build := all[len(all)-1] // openblas when built
	pandas := false          // known once the section runs: plans are built for every run
	setup := func(int) []job {
		if pandas = pyHas("pandas"); !pandas {
			say("als-large: %s has no pandas: the read_csv baseline will be missing", python)
		}
		return []job{{name: "ratings", argv: []string{"@als", "--synthetic", size, "--make-ratings", "{tmp}/ratings.csv", "--quiet"}, parse: func(string) []string { return nil }, timeout: 10 * time.Minute}}
	}
	jobs := func(rep int) []job {
		var jobs []job
		if pandas {
			jobs = append(jobs, job{name: "pandas", argv: []string{python, "bench/als_read.py", "{tmp}/ratings.csv"}, timeout: 10 * time.Minute})
		}
		for _, n := range []int{1, 2} {
			for _, solver := range []string{"cg", "exact"} {
				j := run(fmt.Sprintf("als-large-%s-%s-%d", build, solver, n), n, nil, variant("als", build),
					"--ratings", "{tmp}/ratings.csv", "--factors", "64", "--iterations", iters, "--solver", solver, "--loss-every", "0", "--quiet")
				j.parse, j.timeout = alsLargeLines, 20*time.Minute
				jobs = append(jobs, j)
			}
		}
		return alternate(rep, jobs)
	}
	return plan{name: "als-large", optional: true, phases: []phase{{1, setup}, {reps, jobs}}, unset: openblasChoice()}
}

// alsLargeLines turns the output of examples/als into two benchmark
// lines: the time until the input is ready, and the mean time of an
// iteration with the last loss.
func alsLargeLines(out string) []string {
	ready := regexp.MustCompile(`^als: .*input ready in ([0-9.]+) s`)
	iteration := regexp.MustCompile(`^iteration \d+/\d+: ([0-9.]+) s(?:, loss (\S+))?`)
	var lines []string
	total, n, last := 0.0, 0, ""
	for _, l := range locality0(out) {
		if m := ready.FindStringSubmatch(l); m != nil {
			lines = append(lines, fmt.Sprintf("BenchmarkALSLarge/input 1 %s s/op", m[1]))
		}
		if m := iteration.FindStringSubmatch(l); m != nil {
			s, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return nil
			}
			total, n = total+s, n+1
			if m[2] != "" {
				last = m[2]
			}
		}
	}
	if len(lines) != 1 || n == 0 || last == "" {
		return nil
	}
	return append(lines, fmt.Sprintf("BenchmarkALSLarge/iteration %d %.3f s/op %s loss", n, total/float64(n), last))
}
