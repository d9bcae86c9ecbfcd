#!/usr/bin/env python3
"""Dask baseline of the Cannon benchmark: A @ B of two n x n random
dask arrays in 2 x 2 chunks (the tiles of Cannon on 4 localities), on
Dask's threaded scheduler with one worker thread per core and OpenBLAS
single-threaded in each (set OPENBLAS_NUM_THREADS=1 in the environment).
The inputs are persisted first; the time is that of (A @ B).persist(), the
product kept in chunks as Tessera keeps it in tiles.

    OPENBLAS_NUM_THREADS=1 python3 bench/cannon_dask.py -n 4096 --repeat 3

Prints "BenchmarkDask/n=N K S s/op G GFLOP/s" in Go's benchmark format,
with the best time of the K products.
"""

import argparse
import os
import time

import dask
import dask.array as da


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-n", type=int, default=2048)
    p.add_argument("--grid", type=int, default=2, help="chunks per dimension")
    p.add_argument("--repeat", type=int, default=3, help="products timed in this process")
    p.add_argument("--workers", type=int, default=os.cpu_count())
    a = p.parse_args()
    for name, v in (("-n", a.n), ("--grid", a.grid), ("--repeat", a.repeat), ("--workers", a.workers)):
        if v < 1:
            p.error(f"{name} {v}: want at least 1")
    chunk = -(-a.n // a.grid)
    with dask.config.set(scheduler="threads", num_workers=a.workers):
        x = da.random.random((a.n, a.n), chunks=(chunk, chunk)).persist()
        y = da.random.random((a.n, a.n), chunks=(chunk, chunk)).persist()
        times = []
        for _ in range(a.repeat):
            start = time.perf_counter()
            z = (x @ y).persist()
            times.append(time.perf_counter() - start)
            del z
    best = min(times)
    print(f"BenchmarkDask/n={a.n} {a.repeat} {best:.6f} s/op {2 * a.n ** 3 / best / 1e9:.3f} GFLOP/s")


if __name__ == "__main__":
    main()
