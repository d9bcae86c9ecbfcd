#!/usr/bin/env bash
# Runs the benchmarks and writes docs/benchmarks.md: what `make bench` runs.
#
#   bash bench/run.sh                          every section
#   SECTIONS='als cannon' bash bench/run.sh    the sections whose names
#                                              contain one of the words
#   SECTIONS=als-large bash bench/run.sh       ALS at MovieLens-20M's scale
#                                              (optional: only by its name;
#                                              minutes and a 540 MB file)
#   go run ./bench/harness -report             the report alone, from the
#                                              result files
#
# The shell only builds the programs and installs what the baselines need
# (Open MPI, ScaLAPACK, NumPy, SciPy, Dask, OpenBLAS, UCX, when root);
# bench/harness runs the sections (which jobs, in which order, how many
# times), writes one result file per section in Go's benchmark format
# to bench/results/, and renders
# the report with bench/report, which holds the targets. The counts come
# from the environment: REPS (3), LREPS, and those bench/harness/plans.go
# reads.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source bench/lib.sh

openblas=0
apt_ensure 'pkg-config --exists openblas lapacke' libopenblas-dev liblapacke-dev pkg-config && openblas=1
say "building the programs in $work"
go test -c -o /dev/null ./bench/ # compile errors show up here, before anything is timed
build tessera ./cmd/tessera
for p in pingpong collbench rawcoll latbench retile zarrio; do go build -o "$work/$p" "./bench/$p"; done
if apt_ensure 'pkg-config --exists ucx' libucx-dev pkg-config; then # the ucx parcelport's rows
	go build -tags ucx -o "$work/pingpong-ucx" ./bench/pingpong || say "no ucx build of bench/pingpong: no ucx rows"
fi
build dgemm ./bench/cannon
build cannon ./examples/cannon
build als ./examples/als
build kmeans ./examples/kmeans
build conv1d ./bench/conv1d
build linalg ./examples/linalg
if [ "$openblas" = 1 ]; then
	cc -O2 -o "$work/lapack" bench/lapack/lapack.c $(pkg-config --cflags --libs lapacke openblas) -lm || say "bench/lapack failed: no LAPACK rows"
fi
go build -o "$work/tracejob" ./runtime/testdata/tracejob

MPICC=${MPICC:-mpicc}
if apt_ensure "command -v $MPICC && command -v mpirun" openmpi-bin libopenmpi-dev; then
	for prog in allreduce pingpong stream; do
		"$MPICC" -O2 -o "$work/mpi_$prog" "bench/mpi/$prog.c" || say "$MPICC bench/mpi/$prog.c failed: no Open MPI rows"
	done
	apt_ensure 'ldconfig -p | grep -q libscalapack-openmpi' libscalapack-openmpi-dev &&
		{ "$MPICC" -O2 -o "$work/scalapack_factor" bench/mpi/scalapack_factor.c -lscalapack-openmpi -lm || say "bench/mpi/scalapack_factor.c failed: no ScaLAPACK rows"; }
fi
apt_ensure '/usr/bin/python3 -c "import numpy"' python3-numpy || true
apt_ensure '/usr/bin/python3 -c "import dask.array"' python3-dask || true
apt_ensure '/usr/bin/python3 -c "import scipy.linalg"' python3-scipy || true
apt_ensure '/usr/bin/python3 -c "import zarr"' python3-zarr || true
apt_ensure '/usr/bin/python3 -c "import sklearn"' python3-sklearn || true

go run ./bench/harness -bin "$work" "$@"
