#!/usr/bin/env bash
# test-deps.sh — install what the tests need from outside Go, quietly.
#
#   slurm-wlm, munge      (through scripts/slurm-local.sh install)
#   otf2-tools            (otf2-print: the trace package's real-reader test)
#   python3-otf2          (the python read-back of the trace package's test)
#   prometheus            (promtool: checks what the runtime serves at /metrics)
#
# Installs only as root and only what is missing; elsewhere it says so and
# the tests that need the tools skip, loudly, and fail instead under CI=true.
set -euo pipefail

cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
	echo "test-deps: not root, so slurm, otf2-tools and python3-otf2 are not installed: the tests that need them will skip"
	exit 0
fi

bash scripts/slurm-local.sh install "${TMPDIR:-/tmp}/tessera-slurm"

missing=()
command -v otf2-print >/dev/null 2>&1 || missing+=(otf2-tools)
/usr/bin/python3 -c 'import otf2' >/dev/null 2>&1 || missing+=(python3-otf2)
if [ ${#missing[@]} -gt 0 ]; then
	log="${TMPDIR:-/tmp}/tessera-test-deps.log"
	echo "test-deps: installing ${missing[*]} (log: $log)"
	export DEBIAN_FRONTEND=noninteractive
	if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } >>"$log" 2>&1; then
		echo "test-deps: apt-get install ${missing[*]} failed; see $log" >&2
		tail -n 20 "$log" >&2 || true
		exit 1
	fi
fi

# ---- OpenBLAS (libopenblas-dev, liblapacke-dev): `make test` runs the
# primitives' tests again with -tags openblas when pkg-config finds them.
if ! pkg-config --exists openblas lapacke 2>/dev/null; then
	log="${TMPDIR:-/tmp}/tessera-test-deps.log"
	echo "test-deps: installing libopenblas-dev liblapacke-dev pkg-config (log: $log)"
	export DEBIAN_FRONTEND=noninteractive
	blas_install() { apt-get install -y -q --no-install-recommends libopenblas-dev liblapacke-dev pkg-config; }
	if ! { blas_install || { apt-get update -q && blas_install; }; } >>"$log" 2>&1; then
		echo "test-deps: apt-get install libopenblas-dev liblapacke-dev failed: the -tags openblas tests will not run; see $log" >&2
		[ "${CI:-}" != true ] || exit 1
	fi
fi

# ---- promtool (Debian package prometheus): the runtime's /metrics test runs
# `promtool check metrics` on what a locality serves.
if ! command -v promtool >/dev/null 2>&1; then
	log="${TMPDIR:-/tmp}/tessera-test-deps.log"
	echo "test-deps: installing prometheus for promtool (log: $log)"
	export DEBIAN_FRONTEND=noninteractive
	prom_install() { apt-get install -y -q --no-install-recommends prometheus; }
	if ! { prom_install || { apt-get update -q && prom_install; }; } >>"$log" 2>&1; then
		echo "test-deps: apt-get install prometheus failed: the /metrics test will skip (fail under CI=true); see $log" >&2
		[ "${CI:-}" != true ] || exit 1
	fi
fi

# ---- python3-zarr, python3-dask, python3-sklearn, python3-numpy: the Zarr
# and NPY round trips of primitives and internal/zarr, and the kmeans,
# logreg and pca examples' checks against scikit-learn.
if ! /usr/bin/python3 -c 'import zarr, dask.array, sklearn, numpy' >/dev/null 2>&1; then
	log="${TMPDIR:-/tmp}/tessera-test-deps.log"
	echo "test-deps: installing python3-zarr python3-dask python3-sklearn python3-numpy (log: $log)"
	export DEBIAN_FRONTEND=noninteractive
	py_install() { apt-get install -y -q --no-install-recommends python3-zarr python3-dask python3-sklearn python3-numpy; }
	if ! { py_install || { apt-get update -q && py_install; }; } >>"$log" 2>&1; then
		echo "test-deps: apt-get install python3-zarr python3-dask python3-sklearn python3-numpy failed: the Zarr, NPY and example tests will skip (fail under CI=true); see $log" >&2
		[ "${CI:-}" != true ] || exit 1
	fi
fi

# ---- UCX (libucx-dev): `make test` runs the parcel tests again with
# -tags ucx, which adds the UCX parcelport, when pkg-config finds ucx.
if ! pkg-config --exists ucx 2>/dev/null; then
	log="${TMPDIR:-/tmp}/tessera-test-deps.log"
	echo "test-deps: installing libucx-dev pkg-config (log: $log)"
	export DEBIAN_FRONTEND=noninteractive
	ucx_install() { apt-get install -y -q --no-install-recommends libucx-dev pkg-config; }
	if ! { ucx_install || { apt-get update -q && ucx_install; }; } >>"$log" 2>&1; then
		echo "test-deps: apt-get install libucx-dev failed: the -tags ucx tests will not run; see $log" >&2
		[ "${CI:-}" != true ] || exit 1
	fi
fi
