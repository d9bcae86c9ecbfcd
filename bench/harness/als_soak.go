package main

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// alsSoak is examples/als run long on a small problem, to show that its
// memory stays flat: 2000 x 2000 ratings, 16 factors, 2 localities, 3000
// iterations, each locality printing its peak RSS every 300 (--memory-every).
func alsSoak(reps int) plan {
	iters, every := count("SOAK_ITER", 3000), count("SOAK_EVERY", 300)
	jobs := func(int) []job {
		j := run("als-soak", 2, nil, "als", "--synthetic", "2000,2000,0.01", "--factors", "16",
			"--iterations", str(iters), "--memory-every", str(every), "--quiet")
		j.parse, j.timeout = soakLines(every, iters), 30*time.Minute
		return []job{j}
	}
	return plan{name: "als-soak", phases: []phase{{1, jobs}}}
}

// soakLines returns the parser of the soak's output: a benchmark line of
// the peak RSS over the localities after the first report (iteration
// every) and after the last (iteration last), in KiB.
func soakLines(every, last int) func(string) []string {
	mem := regexp.MustCompile(`memory: locality (\d+), iteration (\d+): peak RSS (\d+) KiB`)
	return func(out string) []string {
		peak := map[int]int64{}
		for _, m := range mem.FindAllStringSubmatch(out, -1) {
			k, _ := strconv.Atoi(m[2])
			kib, _ := strconv.ParseInt(m[3], 10, 64)
			peak[k] = max(peak[k], kib)
		}
		first, end := peak[every], peak[last]
		if first == 0 || end == 0 {
			return nil
		}
		return []string{
			fmt.Sprintf("BenchmarkALSSoak/peak-rss-first 1 %d KiB", first),
			fmt.Sprintf("BenchmarkALSSoak/peak-rss-last 1 %d KiB", end),
		}
	}
}
