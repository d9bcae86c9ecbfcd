#!/usr/bin/env python3
"""Dask baselines of the linalg benchmarks: da.linalg.cholesky, lu, tsqr
and svd_compressed on Dask's threaded scheduler (--workers threads, 2 by
default; set OPENBLAS_NUM_THREADS=1 so that each task's LAPACK is one
thread). The input is persisted first; the time is that of persisting the
factors, kept in chunks as Tessera keeps them in tiles.

    python3 bench/linalg_dask.py --op cholesky -n 8192 --chunk 1024
    python3 bench/linalg_dask.py --op tsqr -m 4000000 --cols 64
    python3 bench/linalg_dask.py --op svd -m 200000 --cols 2000 --rank 20

Prints "BenchmarkDask/OP/... K S s/op [G GFLOP/s]" in Go's benchmark
format, the best of K (--repeat) runs. Cholesky's matrix is symmetric with
n on the diagonal (positive definite), LU's and TSQR's uniform in [-1, 1);
the SVD's is examples/linalg's to the bit (the sum of rank-one terms
2^-t u_t v_tᵀ from the same hash), and the script prints its singular
values as "sigma I VALUE" lines.
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np

MASKS = (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB)


def uniform(seed, i, j):
    """examples/linalg's reproducible value in [-1, 1) for (seed, i, j)."""
    i = np.asarray(i, dtype=np.uint64)
    j = np.asarray(j, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(int(seed) % 2**64) * np.uint64(MASKS[0]) + i * np.uint64(MASKS[1]) + j * np.uint64(MASKS[2])
        z = (z ^ (z >> np.uint64(30))) * np.uint64(MASKS[1])
        z = (z ^ (z >> np.uint64(27))) * np.uint64(MASKS[2])
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) / float(1 << 52) - 1


def svd_matrix(m, cols, seed, row_chunk):
    """The SVD's matrix of examples/linalg, in chunks of whole rows."""
    terms = min(cols, 60)
    t = range(terms)
    v = np.stack([np.ldexp(uniform(seed + 1000 + k, np.arange(cols), 0), -k) for k in t], axis=1)

    def block(block_info=None):
        (lo, hi), _ = block_info[None]["array-location"]
        u = np.stack([uniform(seed + 3 + k, np.arange(lo, hi), 0) for k in t], axis=1)
        return u @ v.T

    rows = tuple(min(row_chunk, m - lo) for lo in range(0, m, row_chunk))
    return da.map_blocks(block, dtype=np.float64, chunks=(rows, (cols,)))


def best(repeat, run):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return min(times), out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--op", choices=("cholesky", "lu", "tsqr", "svd"), required=True)
    p.add_argument("-n", type=int, default=2048, help="order of cholesky's and lu's matrices")
    p.add_argument("--chunk", type=int, default=1024, help="chunk side of cholesky and lu")
    p.add_argument("-m", type=int, default=200000, help="rows of tsqr's and svd's matrices")
    p.add_argument("--cols", type=int, default=64)
    p.add_argument("--row-chunks", type=int, default=8, help="chunks of rows of tsqr and svd")
    p.add_argument("--rank", type=int, default=20)
    p.add_argument("--power", type=int, default=2, help="power iterations of svd_compressed")
    p.add_argument("--oversample", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    for name, v in (("-n", a.n), ("--chunk", a.chunk), ("-m", a.m), ("--cols", a.cols), ("--row-chunks", a.row_chunks), ("--rank", a.rank), ("--repeat", a.repeat), ("--workers", a.workers)):
        if v < 1:
            p.error(f"{name} {v}: want at least 1")
    if a.m < a.cols or a.rank > a.cols:
        p.error(f"-m {a.m} --cols {a.cols} --rank {a.rank}: want m >= cols >= rank")
    row_chunk = -(-a.m // a.row_chunks)
    with dask.config.set(scheduler="threads", num_workers=a.workers):
        if a.op in ("cholesky", "lu"):
            x = da.random.RandomState(a.seed).uniform(-1, 1, size=(a.n, a.n), chunks=(a.chunk, a.chunk))
            if a.op == "cholesky":
                x = (x + x.T) / 2 + a.n * da.eye(a.n, chunks=a.chunk)
            x = x.persist()
            if a.op == "cholesky":
                secs, _ = best(a.repeat, lambda: da.linalg.cholesky(x, lower=True).persist())
                flops = a.n**3 / 3
            else:
                secs, _ = best(a.repeat, lambda: dask.persist(*da.linalg.lu(x)))
                flops = 2 * a.n**3 / 3
            print(f"BenchmarkDask/{a.op}/n={a.n}/chunk={a.chunk} {a.repeat} {secs:.6f} s/op {flops / secs / 1e9:.3f} GFLOP/s")
        elif a.op == "tsqr":
            x = da.random.RandomState(a.seed).uniform(-1, 1, size=(a.m, a.cols), chunks=(row_chunk, a.cols)).persist()
            secs, _ = best(a.repeat, lambda: dask.persist(*da.linalg.tsqr(x)))
            flops = 2 * (2 * a.m * a.cols**2 - 2 * a.cols**3 / 3)  # R and Q, as examples/linalg counts
            print(f"BenchmarkDask/tsqr/m={a.m}/cols={a.cols} {a.repeat} {secs:.6f} s/op {flops / secs / 1e9:.3f} GFLOP/s")
        else:
            x = svd_matrix(a.m, a.cols, a.seed, row_chunk).persist()
            run = lambda: dask.persist(*da.linalg.svd_compressed(x, a.rank, n_power_iter=a.power, n_oversamples=a.oversample, seed=a.seed))
            secs, (_, s, _) = best(a.repeat, run)
            ell = min(a.rank + a.oversample, a.cols)
            flops = 2 * (a.power + 1) * 2 * a.m * a.cols * ell
            print(f"BenchmarkDask/svd/m={a.m}/cols={a.cols}/rank={a.rank} {a.repeat} {secs:.6f} s/op {flops / secs / 1e9:.3f} GFLOP/s")
            for i, v in enumerate(np.asarray(s)):
                print(f"sigma {i} {v:.17g}")


if __name__ == "__main__":
    main()
