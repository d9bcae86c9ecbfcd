#!/usr/bin/env bash
# Section of `make bench`: the ALS example (examples/als) on the smallest
# dataset of the JetLag paper's Figure 6 — 4800 users x 4800 items, 1%
# density, 40 factors, 5 iterations — against bench/als_numpy.py, the same
# sparse algorithm in NumPy on the same file, timed with one and with two
# OpenBLAS threads (the faster taken). Tessera runs on 1, 2 and 4
# localities (`tessera run -n N`), pure Go and, when OpenBLAS is installed,
# with the openblas build tag. Both programs time the iterations alone.
#
# Environment: ALS_SIZE (4800,4800,0.01), ALS_ITER (5), TRACE_PAIRS (3).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

ALS_SIZE=${ALS_SIZE:-4800,4800,0.01}
ALS_ITER=${ALS_ITER:-5}
TRACE_PAIRS=${TRACE_PAIRS:-3} # traced/untraced pairs per repetition

numpy_skip=$(numpy_missing)
openblas_own_kernels

build_variants als ./examples/als
"$tmp/als" --synthetic "$ALS_SIZE" --make-ratings "$tmp/ratings.csv"
ALS_ARGS=(--ratings "$tmp/ratings.csv" --factors 40 --iterations "$ALS_ITER" --regularization 0.1 --alpha 40 --seed 1)

# tessera_als BUILD N [RUN-FLAGS...]: seconds of the iterations on N
# localities; RUN-FLAGS go to tessera run (--trace DIR).
tessera_als() {
	local bin="$tmp/als" rc=0 n=$2
	[ "$1" = pure ] || bin="$tmp/als-$1"
	shift 2
	timeout 600 "$tessera" run -n "$n" "$@" "$bin" "${ALS_ARGS[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		say "als on $n localities failed (exit $rc):"
		sed 's/^/  /' "$tmp/err" >&2
		return 1
	fi
	cat "$tmp/out" >&2
	sed -n 's/^\[L0\] iteration .*, loss //p' "$tmp/out" | tail -n 1 >>"$tmp/losses"
	sed -n 's/^\[L0\] als: [0-9]* iterations in \([0-9.]*\) s.*/\1/p' "$tmp/out"
}
numpy_als() {
	OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 timeout 900 "$PY" bench/als_numpy.py "$tmp/ratings.csv" --factors 40 --iterations "$ALS_ITER" --regularization 0.1 --alpha 40 --seed 1 >"$tmp/npout"
	cat "$tmp/npout" >&2
	sed -n 's/^iteration .*, loss //p' "$tmp/npout" | tail -n 1 >>"$tmp/losses"
	field als_numpy seconds <"$tmp/npout"
}

for ((r = 1; r <= REPS; r++)); do
	say "als repetition $r of $REPS"
	if [ -z "$numpy_skip" ]; then
		numpy_als 1 >>"$tmp/np1"
		numpy_als 2 >>"$tmp/np2"
		paste "$tmp/np1" "$tmp/np2" | tail -n 1 | awk '{ print ($1 < $2) ? $1 : $2 }' >>"$tmp/npbest"
	fi
	for b in "${builds[@]}"; do
		for n in 1 2 4; do
			tessera_als "$b" "$n" >>"$tmp/t_${b}_$n"
		done
	done
	# Tracing on vs off, 2 localities, pure Go: TRACE_PAIRS pairs back to
	# back, alternating which goes first.
	for ((k = 0; k < TRACE_PAIRS; k++)); do
		rm -rf "$tmp/trace"
		if (((r + k) % 2)); then
			tessera_als pure 2 --trace "$tmp/trace" --trace-format otf2 >>"$tmp/traced"
			tessera_als pure 2 >>"$tmp/untraced"
		else
			tessera_als pure 2 >>"$tmp/untraced"
			tessera_als pure 2 --trace "$tmp/trace" --trace-format otf2 >>"$tmp/traced"
		fi
	done
done
# Every run ends with the same loss (to rounding: the sums run in other
# orders), NumPy's included.
if [ ! -s "$tmp/losses" ] || ! awk 'NR==1 { f=$1 } { d=($1-f)/f; if (d<0) d=-d; if (d>1e-6) bad=1 } END { exit bad }' "$tmp/losses"; then
	say "the runs' final losses differ (or none was printed):"
	sort "$tmp/losses" | uniq -c >&2
	exit 1
fi
trace_ratio=$(ratios "$tmp/traced" "$tmp/untraced" | median)
printf '| ALS with full tracing (OTF2 of every task, samplers), 2 localities | %s s | %s s (the same run without tracing) | %s | ≤ 1.05 | %s |\n' \
	"$(fmt "$(median <"$tmp/traced")" '%.3f')" "$(fmt "$(median <"$tmp/untraced")" '%.3f')" "$(fmt "$trace_ratio" '%.3f')" "$(meets "$trace_ratio" '<=' 1.05)" >>"$SUMMARY"

np_cell="—" ratio_cell="—" status="NumPy skipped: $numpy_skip"
if [ -z "$numpy_skip" ]; then
	np_best=$(median <"$tmp/npbest")
	np_cell="$(fmt "$np_best" '%.2f') s (NumPy, best of 1 and 2 OpenBLAS threads)"
fi
rows=""
for b in "${builds[@]}"; do
	t2=$(median <"$tmp/t_${b}_2")
	if [ -z "$numpy_skip" ]; then
		ratio=$(ratios "$tmp/t_${b}_2" "$tmp/npbest" | median)
		ratio_cell=$(fmt "$ratio" '%.2f')
		status=$(meets "$ratio" '<=' 0.5)
	fi
	rows+="| ALS ${ALS_SIZE/,/ x } ratings (users x items,density), 40 factors, $ALS_ITER iterations, 2 localities ($b build) | $(fmt "$t2" '%.2f') s | $np_cell | $ratio_cell | ≤ 0.5 | $status |"$'\n'
done
printf '%s' "$rows" >>"$SUMMARY"

cat <<EOF
## ALS (examples/als) against NumPy

Synthetic ratings of ${ALS_SIZE} users, items and density ($(($(wc -l <"$tmp/ratings.csv") - 1)) ratings, written by
\`als --synthetic $ALS_SIZE --make-ratings\`), 40 factors, $ALS_ITER iterations,
regularization 0.1, alpha 40. Both programs read the same file and start
from the same Y, and print the same loss every iteration (the script shows
both runs' output on stderr, and checks that every run's last loss agrees,
to 1e-6); the times are those of the iterations alone.
The NumPy version (\`bench/als_numpy.py\`) is the sparse one — each user's
system from the user's rated items, never a dense diagonal — run with
\`OPENBLAS_NUM_THREADS=1\` and \`=2\`; the faster is the baseline.

    als --synthetic $ALS_SIZE --make-ratings ratings.csv
    tessera run -n N als ${ALS_ARGS[*]/"$tmp/"/}
    OPENBLAS_NUM_THREADS=T python3 bench/als_numpy.py ratings.csv --factors 40 --iterations $ALS_ITER --regularization 0.1 --alpha 40 --seed 1

| Build | Localities | Seconds per repetition | Median |
|---|---|---|---|
$(for b in "${builds[@]}"; do for n in 1 2 4; do printf '| %s | %d | %s | %s |\n' "$b" "$n" "$(list "$tmp/t_${b}_$n" %.3f)" "$(fmt "$(median <"$tmp/t_${b}_$n")" '%.3f')"; done; done)
$(if [ -z "$numpy_skip" ]; then
	printf '| NumPy, 1 thread | 1 | %s | %s |\n' "$(list "$tmp/np1" %.3f)" "$(fmt "$(median <"$tmp/np1")" '%.3f')"
	printf '| NumPy, 2 threads | 1 | %s | %s |\n' "$(list "$tmp/np2" %.3f)" "$(fmt "$(median <"$tmp/np2")" '%.3f')"
else
	printf '| NumPy | — | skipped: %s | — |\n' "$numpy_skip"
fi)

On this machine 4 localities share 2 cores, so the 4-locality figure shows
the cost of more, smaller tiles and more messages, not more parallelism.
${blas_kernels:+
$blas_kernels
}
Tracing: the same 2-locality pure-Go run with \`tessera run --trace DIR
--trace-format otf2\` (every task's Enter/Leave with GUIDs, the samplers,
the archive merged at the end, inside the timed iterations only as far as
events are recorded) next to one without, $TRACE_PAIRS pairs per repetition
in alternating order, the ratio the median of the per-pair ratios; seconds
traced $(list "$tmp/traced" %.3f), untraced $(list "$tmp/untraced" %.3f).
On this shared machine single pairs differ by ±20% either way; the CPU
time the two runs use differs far less than their wall time.
EOF
