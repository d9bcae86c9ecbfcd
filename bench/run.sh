#!/usr/bin/env bash
# Runs the benchmarks and writes docs/benchmarks.md: what `make bench` runs.
#
#   bash bench/run.sh                         every section
#   SECTIONS='als cannon' bash bench/run.sh   the sections whose file names
#                                             contain one of the words
#
# Each section is a script bench/sections/NN-name.sh, run in file-name order
# with the helpers of bench/lib.sh and the environment described there: it
# measures Tessera next to a baseline in the same run, appends its rows to
# the summary table and prints its part of the report. The results of each
# section are kept in bench/results/NN-name.{rows,md} (with the date and
# machine of their run), and the report is assembled from all of them, so a
# run of some sections refreshes those and keeps the others' last results.
# A section that fails keeps its previous results, is named in the report,
# and makes the script exit 1 after the other sections ran.
#
# Environment: REPS (3), OUT (docs/benchmarks.md), RESULTS (bench/results),
# SECTIONS (all), and each section's own variables (see their headers).
set -euo pipefail
cd "$(dirname "$0")/.."

export REPS=${REPS:-3}
OUT=${OUT:-docs/benchmarks.md}
RESULTS=${RESULTS:-bench/results}
SECTIONS=${SECTIONS:-}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { printf '%s\n' "$*" >&2; }

say "building tessera"
go build -o "$work/tessera" ./cmd/tessera
export tessera="$work/tessera"
mkdir -p "$RESULTS"

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
pure=$("$tessera" info | sed -n 's/^blas *//p')
blas="$pure only: OpenBLAS (libopenblas-dev, liblapacke-dev) was not found, so no -tags openblas figures"
if ob=$(go run -tags openblas ./cmd/tessera info 2>/dev/null | sed -n 's/^blas *//p') && [ -n "$ob" ]; then
	blas="$pure and, in the rows that say openblas, $ob"
	[ -z "${OPENBLAS_CORETYPE:-}" ] || blas+=", its kernels chosen by OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE in the environment"
fi
# How an idle core waits: with cpuidle-haltpoll a core polls for
# guest_halt_poll_ns before it halts, and a halted core of a virtual
# machine is woken through the hypervisor (the blocking round trip).
idle=$(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || true)
[ -z "$idle" ] || idle="; idle driver $idle"
[ ! -r /sys/module/haltpoll/parameters/guest_halt_poll_ns ] || idle+=" (guest_halt_poll_ns $(cat /sys/module/haltpoll/parameters/guest_halt_poll_ns))"
machine="$(nproc) cores, ${cpu:-unknown CPU}, Linux $(uname -r)$idle, $(go env GOVERSION); BLAS: $blas"

failed=()
for script in bench/sections/*.sh; do
	name=$(basename "$script" .sh)
	if [ -n "$SECTIONS" ]; then
		want=0
		for w in $SECTIONS; do [[ $name == *"$w"* ]] && want=1; done
		[ "$want" = 1 ] || continue
	fi
	say "==== section $name"
	export tmp="$work/$name"
	export SUMMARY="$work/$name.rows"
	mkdir -p "$tmp"
	: >"$SUMMARY"
	if bash "$script" >"$work/$name.md"; then
		cp "$SUMMARY" "$RESULTS/$name.rows"
		{
			cat "$work/$name.md"
			printf '\n*Measured %s with REPS=%s on %s.*\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$REPS" "$machine"
		} >"$RESULTS/$name.md"
	else
		failed+=("$name")
		say "section $name FAILED; its previous results stay"
	fi
done

mkdir -p "$(dirname "$OUT")"
{
	cat <<HEAD
# Benchmarks

Results of \`make bench\` (\`bash bench/run.sh\`), written by the script;
run it again to refresh them (\`SECTIONS=name\` refreshes some sections and
keeps the others' last results, kept in \`bench/results/\`). They come from a
shared machine with 2 cores: other work runs there too, so absolute times
move from run to run. The ratios matter more than the absolute figures —
each compares Tessera with a baseline measured in the same run, right next
to it. Each section ends with the date and the machine of its run.

Figures are medians of the repetitions; ratios the median of the
per-repetition ratios.
$([ ${#failed[@]} -eq 0 ] || printf '\n**Sections that failed in the last run (their earlier results are shown):** %s\n' "${failed[*]}")

| Benchmark | Tessera | Baseline | Ratio | Target | |
|---|---|---|---|---|---|
HEAD
	cat "$RESULTS"/*.rows 2>/dev/null || true
	printf '\n'
	for f in "$RESULTS"/*.md; do
		[ -e "$f" ] || continue
		cat "$f"
		printf '\n'
	done
} >"$OUT"
say "wrote $OUT"
[ ${#failed[@]} -eq 0 ]
