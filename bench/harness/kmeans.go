package main

import (
	"fmt"
	"regexp"
	"time"
)

// kmeans is examples/kmeans (Lloyd's algorithm from the first k points) on
// 2,000,000 x 32 points of one Gaussian blob, k = 16, 10 iterations, on 2
// localities, against scikit-learn's Lloyd (one initialisation, the same
// centres, OMP_NUM_THREADS=2) and the same loop in Dask array (threaded, 2
// workers), each repetition in reversed order every other time.
func kmeans(reps int) plan {
	points, iters := str(count("KMEANS_POINTS", 2000000)), str(count("KMEANS_ITER", 10))
	// One blob: 16 centres inside it keep moving for all 10 iterations, where
	// well-separated blobs would converge in two.
	setup := func(int) []job {
		return []job{{name: "points", argv: []string{"@kmeans", "--make-input", "{tmp}/points.npy", "--points", points, "--dims", "32", "--clusters", "1"},
			parse: func(string) []string { return nil }, timeout: 10 * time.Minute}}
	}
	sklearn, dask := pyHas("sklearn"), pyHas("dask.array")
	if !sklearn || !dask {
		say("kmeans: %s lacks scikit-learn or Dask: their rows will be missing", python)
	}
	jobs := func(rep int) []job {
		j := run("kmeans", 2, nil, "kmeans", "--input", "{tmp}/points.npy", "--k", "16", "--iterations", iters)
		j.parse = kmeansLines
		js := []job{j}
		if sklearn {
			js = append(js, job{name: "sklearn", argv: []string{python, "bench/kmeans_sklearn.py", "{tmp}/points.npy", "--k", "16", "--iterations", iters},
				env: []string{"OMP_NUM_THREADS=2", "OPENBLAS_NUM_THREADS=1"}, timeout: 20 * time.Minute})
		}
		if dask {
			js = append(js, job{name: "dask", argv: []string{python, "bench/kmeans_dask.py", "{tmp}/points.npy", "--k", "16", "--iterations", iters},
				env: []string{"OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1"}, timeout: 30 * time.Minute})
		}
		return alternate(rep, js)
	}
	return plan{name: "kmeans", phases: []phase{{1, setup}, {reps, jobs}}, check: agree("inertia", 1e-6)}
}

// kmeansLines turns examples/kmeans's summary into a benchmark line: the
// time of the clustering (not the read) and the inertia.
func kmeansLines(out string) []string {
	summary := regexp.MustCompile(`inertia (\S+); read [0-9.]+ s, clustered ([0-9.]+) s`)
	for _, l := range locality0(out) {
		if m := summary.FindStringSubmatch(l); m != nil {
			return []string{fmt.Sprintf("BenchmarkKMeans/tessera 1 %s s/op %s inertia", m[2], m[1])}
		}
	}
	return nil
}
