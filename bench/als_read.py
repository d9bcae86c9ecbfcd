#!/usr/bin/env python3
"""pandas baseline of examples/als's input: read a MovieLens ratings file.

Reads ml-20m/ml-25m's ratings.csv (userId,movieId,rating,timestamp with a
header) or ml-1m/ml-10m's ratings.dat (UserID::MovieID::Rating::Timestamp),
told apart by the first line as the program does, with pandas' C parser on
one core, then numbers the user and item ids densely in ascending order
(pandas.factorize with sort=True), which the program's "input ready" time
also includes.

    python3 bench/als_read.py ratings.csv

Prints two lines in Go's benchmark format:
"BenchmarkALSLarge/pandas_read 1 S s/op N ratings" (read_csv alone) and
"BenchmarkALSLarge/pandas_ready 1 S s/op U users I items" (with the ids
numbered).
"""

import sys
import time

import pandas as pd


def read(path):
    with open(path, "rb") as f:
        first = f.readline()
    if b"::" in first:
        # "::" as a one-character separator with empty columns between:
        # pandas' C parser takes only single-character separators.
        df = pd.read_csv(path, sep=":", header=None, usecols=[0, 2, 4, 6],
                         names=["userId", "a", "movieId", "b", "rating", "c", "timestamp"])
    else:
        df = pd.read_csv(path)
    return df


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: als_read.py RATINGS")
    start = time.perf_counter()
    df = read(sys.argv[1])
    read_s = time.perf_counter() - start
    _, users = pd.factorize(df["userId"], sort=True)
    _, items = pd.factorize(df["movieId"], sort=True)
    ready_s = time.perf_counter() - start
    print(f"BenchmarkALSLarge/pandas_read 1 {read_s:.3f} s/op {len(df)} ratings")
    print(f"BenchmarkALSLarge/pandas_ready 1 {ready_s:.3f} s/op {len(users)} users {len(items)} items")


if __name__ == "__main__":
    main()
