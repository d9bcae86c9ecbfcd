#!/usr/bin/env python3
"""NumPy baseline of examples/als: implicit-feedback ALS on one process.

The same algorithm as the Tessera example, in its strongest NumPy form:
each user's normal equations are built from the user's rated items only,

    (YtY + reg I + Yu^T diag(alpha r_u) Yu) x_u = Yu^T (1 + alpha r_u)

(YtY computed once per half-step, Yu the rated rows of Y), never a dense
items x items diagonal, all of them solved in one batched numpy.linalg.solve
(about 10% faster than a solve per user here); items likewise.
It reads the same MovieLens file (ids mapped to dense indices in ascending
order), starts from the same Y (random_d's counter-based generator,
reproduced below), and prints the same loss, so the two runs can be checked
against each other line by line.

    python3 bench/als_numpy.py ratings.csv --factors 40 --iterations 5

Prints "iteration k/K: S s, loss L" per iteration (without the loss on
the iterations --loss-every leaves out) and a final line
"BenchmarkALS/numpy K S s/op L loss" in Go's benchmark format, with the
time of the iterations alone (not the file reading) and the last loss,
which bench/harness compares.
"""

import argparse
import sys
import time

import numpy as np

from tessera_random import random_uniform


def read_ratings(path):
    """The ratings file's columns: with pandas' C parser when it is there
    (a file of MovieLens-20M's size takes minutes with numpy.loadtxt),
    else numpy.loadtxt; the reading is not timed."""
    try:
        import pandas as pd
        df = pd.read_csv(path, usecols=[0, 1, 2])
        uid, iid, r = (df.iloc[:, k].to_numpy() for k in range(3))
    except ImportError:
        data = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(0, 1, 2))
        uid, iid, r = data[:, 0], data[:, 1], data[:, 2]
    users, u = np.unique(uid.astype(np.int64), return_inverse=True)
    items, i = np.unique(iid.astype(np.int64), return_inverse=True)
    return len(users), len(items), u, i, r.astype(np.float64)


def by_row(rows, cols, vals, n):
    """Per row: its column indices (ascending) and values."""
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    bounds = np.searchsorted(rows, np.arange(n + 1))
    return [(cols[bounds[r]:bounds[r + 1]], vals[bounds[r]:bounds[r + 1]]) for r in range(n)]


# BATCH is how many rows' systems one batched solve takes: the systems of
# all rows at once would need rows x f x f doubles (4.5 GB for
# MovieLens-20M's users at f = 64).
BATCH = 4096


def solve(rows, other, reg, alpha):
    """Every row's factors against the whole other factor matrix: each
    row's system built with one matmul over its rated entries, then the
    systems solved BATCH at a time in one batched numpy.linalg.solve
    (faster than a solve per row)."""
    f = other.shape[1]
    base = other.T @ other + reg * np.eye(f)
    n = len(rows)
    out = np.empty((n, f))
    a = np.empty((min(n, BATCH), f, f))
    b = np.empty((min(n, BATCH), f))
    for r0 in range(0, n, BATCH):
        r1 = min(r0 + BATCH, n)
        for r in range(r0, r1):
            cols, vals = rows[r]
            o = other[cols]
            c = alpha * vals
            np.matmul(o.T * c, o, out=a[r - r0])
            b[r - r0] = o.T @ (1.0 + c)
        a[:r1 - r0] += base
        out[r0:r1] = np.linalg.solve(a[:r1 - r0], b[:r1 - r0, :, None])[:, :, 0]
    return out


def loss(u, i, r, x, y, reg, alpha):
    """The objective over every (user, item) pair, from the flat ratings
    (user index, item index, rating) without the dense matrix."""
    total = np.sum((x.T @ x) * (y.T @ y))
    s = np.einsum("ij,ij->i", x[u], y[i])
    total += np.sum(1.0 - 2.0 * s + alpha * r * (1.0 - s) ** 2)
    return total + reg * (np.sum(x * x) + np.sum(y * y))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("ratings")
    p.add_argument("--factors", type=int, default=40)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--regularization", type=float, default=0.1)
    p.add_argument("--alpha", type=float, default=40.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--loss-every", type=int, default=1,
                   help="the loss every K iterations and after the last (0: after the last only)")
    a = p.parse_args()

    n_users, n_items, u, i, r = read_ratings(a.ratings)
    user_rows = by_row(u, i, r, n_users)
    item_rows = by_row(i, u, r, n_items)
    y = random_uniform(a.seed, n_items * a.factors).reshape(n_items, a.factors)
    print(f"als_numpy: {n_users} users x {n_items} items, {len(r)} ratings, {a.factors} factors")
    start = time.perf_counter()
    for k in range(1, a.iterations + 1):
        t0 = time.perf_counter()
        x = solve(user_rows, y, a.regularization, a.alpha)
        y = solve(item_rows, x, a.regularization, a.alpha)
        if k == a.iterations or (a.loss_every > 0 and k % a.loss_every == 0):
            l = loss(u, i, r, x, y, a.regularization, a.alpha)
            print(f"iteration {k}/{a.iterations}: {time.perf_counter() - t0:.3f} s, loss {l:.10g}")
        else:
            print(f"iteration {k}/{a.iterations}: {time.perf_counter() - t0:.3f} s")
    print(f"BenchmarkALS/numpy {a.iterations} {time.perf_counter() - start:.4f} s/op {l:.10g} loss")


if __name__ == "__main__":
    sys.exit(main())
