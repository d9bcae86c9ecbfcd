#!/usr/bin/env python3
"""scikit-learn baseline of examples/kmeans: Lloyd's algorithm on the same
.npy points from the same initial centres (the first k points), the same
number of iterations at most (tol=0: it stops early only when no label
changes, as examples/kmeans does), one initialisation, on the threads
OMP_NUM_THREADS allows.

    python3 bench/kmeans_sklearn.py points.npy --k 16 --iterations 10

Prints "BenchmarkKMeans/sklearn 1 S s/op I inertia" (the fit alone).
"""

import argparse
import time

import numpy as np
from sklearn.cluster import KMeans


def main():
    p = argparse.ArgumentParser()
    p.add_argument("points")
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--iterations", type=int, default=10)
    a = p.parse_args()
    x = np.load(a.points)
    init = x[: a.k].copy()
    km = KMeans(n_clusters=a.k, init=init, n_init=1, max_iter=a.iterations, tol=0, algorithm="lloyd")
    start = time.perf_counter()
    km.fit(x)
    t = time.perf_counter() - start
    print("BenchmarkKMeans/sklearn 1 %.6g s/op %.17g inertia" % (t, km.inertia_))


if __name__ == "__main__":
    main()
