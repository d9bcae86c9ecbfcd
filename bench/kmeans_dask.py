#!/usr/bin/env python3
"""Dask array baseline of examples/kmeans: the same Lloyd loop written
with dask.array (the points in 2 row chunks, the threaded scheduler with 2
workers), from the first k points, for the same iterations.

    python3 bench/kmeans_dask.py points.npy --k 16 --iterations 10

Each iteration computes the squared distances as |x|² - 2 x·cᵀ + |c|²,
the labels, and the new centres as (one-hot labels)ᵀ x over the counts,
then brings the k centres to NumPy. Prints "BenchmarkKMeans/dask 1 S
s/op I inertia" (the loop and the final labels; the inertia of the final
centres, from the same distances, so it agrees to about 1e-9).
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("points")
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--iterations", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    pts = np.load(a.points)
    c = pts[: a.k].copy()
    with dask.config.set(scheduler="threads", num_workers=a.threads):
        x = da.from_array(pts, chunks=((len(pts) + 1) // 2, pts.shape[1])).persist()
        sq = (x * x).sum(axis=1).persist()
        start = time.perf_counter()
        inertia = 0.0
        for _ in range(a.iterations):
            d = sq[:, None] - 2 * (x @ c.T) + (c * c).sum(axis=1)[None, :]
            labels = d.argmin(axis=1)
            onehot = (labels[:, None] == np.arange(a.k)[None, :]).astype(x.dtype)
            sums, counts = dask.compute(onehot.T @ x, onehot.sum(axis=0))
            keep = counts > 0
            c = np.where(keep[:, None], sums / np.maximum(counts, 1)[:, None], c)
        # The final labels and inertia, as scikit-learn's fit ends.
        d = sq[:, None] - 2 * (x @ c.T) + (c * c).sum(axis=1)[None, :]
        inertia = float(d.min(axis=1).sum().compute())
        t = time.perf_counter() - start
    print("BenchmarkKMeans/dask 1 %.6g s/op %.17g inertia" % (t, inertia))


if __name__ == "__main__":
    main()
