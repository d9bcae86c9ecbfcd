#!/usr/bin/env python3
"""NumPy baseline of primitives.Conv1D (bench/conv1d): Keras' Conv1D with
valid padding, stride 1, dilation 1, no bias, on one process.

The fastest form found: im2col into a buffer allocated once — the window
of every output step is K*C consecutive elements of x, so all windows are
one strided view of x (as_strided) copied with one copyto — then one matrix
product of the (pages*L, size*channels) matrix with the kernel as a
(size*channels, filters) matrix into an output buffer allocated once
(numpy.matmul with out=, OpenBLAS dgemm). The input and kernel are
primitives.Random's values for seeds 1 and 2 (its counter-based generator,
reproduced below), so the checksum equals the Tessera program's.

    python3 bench/conv1d_numpy.py --pages 2000 --steps 80 --in 3 --kernel 10 --filters 100 -n 10

Prints "BenchmarkConv1D/numpy N S s/op M min-s/op C checksum": the
median and the smallest time of one convolution (after warm-up) and the sum
of the output.
"""

import argparse
import time

import numpy as np

from tessera_random import random_uniform


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--pages", type=int, default=2000)
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--in", dest="channels", type=int, default=3)
    p.add_argument("--kernel", type=int, default=10)
    p.add_argument("--filters", type=int, default=100)
    p.add_argument("-n", type=int, default=10, help="timed convolutions")
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    B, T, C, K, F = a.pages, a.steps, a.channels, a.kernel, a.filters
    L = T - K + 1
    x = random_uniform(1, B * T * C).reshape(B, T, C)
    w = random_uniform(2, K * C * F).reshape(K * C, F)
    # The window of output step t of page b is x[b, t:t+K, :], K*C
    # consecutive elements: all windows are one strided view of x.
    s = x.strides
    windows = np.lib.stride_tricks.as_strided(x, shape=(B, L, K * C), strides=(s[0], s[1], s[2]), writeable=False)
    cols = np.empty((B, L, K * C))
    out = np.empty((B * L, F))
    cols2 = cols.reshape(B * L, K * C)  # a view: the same buffer

    def conv():
        np.copyto(cols, windows)
        np.matmul(cols2, w, out=out)

    times = []
    for i in range(a.warmup + a.n):
        t0 = time.perf_counter()
        conv()
        t = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(t)
    # Check against the definition on a few outputs.
    rng = np.random.default_rng(0)
    y = out.reshape(B, L, F)
    for _ in range(20):
        b, t, f = rng.integers(B), rng.integers(L), rng.integers(F)
        ref = sum(x[b, t + k, c] * w[k * C + c, f] for k in range(K) for c in range(C))
        assert abs(y[b, t, f] - ref) <= 1e-12 * max(1.0, abs(ref)), (b, t, f, y[b, t, f], ref)
    times.sort()
    print("BenchmarkConv1D/numpy %d %.6f s/op %.6f min-s/op %.10e checksum"
          % (len(times), times[len(times) // 2], times[0], out.sum()))


if __name__ == "__main__":
    main()
