"""primitives.Random (random_d) reproduced in NumPy, for the comparison
scripts that must start from the same values as the Tessera programs."""

import numpy as np


def splitmix64(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def random_uniform(seed, n):
    """Elements 0..n-1 (row-major) of random_d with this seed: uniform in [0, 1)."""
    with np.errstate(over="ignore"):
        s = splitmix64(np.array([seed], dtype=np.uint64))[0]
        i = np.arange(n, dtype=np.uint64)
        z = splitmix64(s + (i + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))
