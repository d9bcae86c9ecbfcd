#!/usr/bin/env python3
"""Dask baseline of the column normalisation of bench/zarrio -test normalise:
read a Zarr array with dask.array.from_zarr, compute (x - x.mean(0)) /
x.std(0) and write it with to_zarr (no compressor, the input's chunks), on
the threaded scheduler with --threads workers.

    python3 bench/normalise_dask.py --input in.zarr --output out.zarr -n 3 --threads 2

The input is the one bench/zarrio made (-test normalise -input in.zarr).
Prints "BenchmarkNormalise/dask N S s/op M min-s/op C checksum": the
median and the smallest time of one read-normalise-write and the sum of the
result's first 1000 rows, which bench/zarrio prints too.
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np
import zarr


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("-n", type=int, default=3, help="timed repetitions")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    times = []
    with dask.config.set(scheduler="threads", num_workers=a.threads):
        for _ in range(a.n):
            start = time.perf_counter()
            x = da.from_zarr(a.input)
            y = (x - x.mean(axis=0)) / x.std(axis=0)
            y.to_zarr(a.output, overwrite=True, compressor=None)
            times.append(time.perf_counter() - start)
    check = float(np.sum(zarr.open_array(a.output, mode="r")[:1000]))
    times.sort()
    print("BenchmarkNormalise/dask %d %.6g s/op %.6g min-s/op %.10e checksum" % (len(times), times[len(times) // 2], times[0], check))


if __name__ == "__main__":
    main()
