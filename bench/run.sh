#!/usr/bin/env bash
# Runs the benchmarks and writes docs/benchmarks.md: what `make bench` runs.
#
#   bash bench/run.sh                 every section
#   SECTIONS='als cannon' bash bench/run.sh   the sections whose file names
#                                     contain one of the words (the report
#                                     then holds only those)
#
# Each section is a script bench/sections/NN-name.sh, run in file-name order
# with the helpers of bench/lib.sh and the environment described there: it
# measures Tessera next to a baseline in the same run, appends its rows to
# the summary table and prints its part of the report. A section that fails
# is reported as failed, and the others still run; the script then exits 1.
#
# Environment: REPS (3), OUT (docs/benchmarks.md), SECTIONS (all), and each
# section's own variables (see their headers).
set -euo pipefail
cd "$(dirname "$0")/.."

export REPS=${REPS:-3}
OUT=${OUT:-docs/benchmarks.md}
SECTIONS=${SECTIONS:-}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { printf '%s\n' "$*" >&2; }

say "building tessera"
go build -o "$work/tessera" ./cmd/tessera
export tessera="$work/tessera"
export SUMMARY="$work/summary"
: >"$SUMMARY"

failed=()
: >"$work/body"
for script in bench/sections/*.sh; do
	name=$(basename "$script" .sh)
	if [ -n "$SECTIONS" ]; then
		want=0
		for w in $SECTIONS; do [[ $name == *"$w"* ]] && want=1; done
		[ "$want" = 1 ] || continue
	fi
	say "==== section $name"
	export tmp="$work/$name"
	mkdir -p "$tmp"
	if bash "$script" >"$work/$name.md"; then
		cat "$work/$name.md" >>"$work/body"
	else
		failed+=("$name")
		say "section $name FAILED"
		printf '## %s\n\n**This section failed** in this run; see the output of `make bench`.\n\n' "$name" >>"$work/body"
	fi
	printf '\n' >>"$work/body"
done

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
blas="gonum (pure Go) only: OpenBLAS (libopenblas-dev, liblapacke-dev) was not found, so no -tags openblas figures"
if ob=$(go run -tags openblas ./cmd/tessera info 2>/dev/null | sed -n 's/^blas *//p') && [ -n "$ob" ]; then
	blas="gonum (pure Go) and, in the rows that say openblas, $ob"
fi
mkdir -p "$(dirname "$OUT")"
{
	cat <<HEAD
# Benchmarks

Results of \`make bench\` (\`bash bench/run.sh\`), written by the script;
run it again to refresh them. They come from a shared machine with 2 cores:
other work runs there too, so absolute times move from run to run. The
ratios matter more than the absolute figures — each compares Tessera with a
baseline measured in the same run, right next to it.

- Date: $(date -u '+%Y-%m-%d %H:%M UTC')
- Machine: $(nproc) cores, ${cpu:-unknown CPU}, Linux $(uname -r)
- Go: $(go env GOVERSION); BLAS: $blas
- Repetitions: $REPS of each measurement; figures are medians, ratios the
  median of the per-repetition ratios.
$([ ${#failed[@]} -eq 0 ] || printf '\n**Failed sections in this run:** %s\n' "${failed[*]}")

| Benchmark | Tessera | Baseline | Ratio | Target | |
|---|---|---|---|---|---|
HEAD
	cat "$SUMMARY"
	printf '\n'
	cat "$work/body"
} >"$OUT"
say "wrote $OUT"
[ ${#failed[@]} -eq 0 ]
