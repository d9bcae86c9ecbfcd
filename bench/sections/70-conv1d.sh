#!/usr/bin/env bash
# Section of `make bench`: primitives.Conv1D on the convolution of the JetLag
# paper's Listing 2 — a (2000, 80, 3) input, page-tiled, and a (10, 3, 100)
# kernel, valid padding, output (2000, 71, 100) — against
# bench/conv1d_numpy.py (im2col + one matmul into buffers allocated once)
# with one and with two OpenBLAS threads, the faster taken. Tessera
# (bench/conv1d) runs on 1 and 2 localities (`tessera run -n N`), pure Go
# and, when it builds, with the openblas build tag. Both programs time one
# convolution at a time after warm-up and print the output's sum, which
# must agree.
#
# Environment: CONV_N (10 timed convolutions per run), CONV_WARMUP (2).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

CONV_N=${CONV_N:-10}
CONV_WARMUP=${CONV_WARMUP:-2}
SHAPE=(--pages 2000 --steps 80 --in 3 --kernel 10 --filters 100)
GO_SHAPE=(-pages 2000 -steps 80 -in 3 -kernel 10 -filters 100 -padding valid)

numpy_skip=$(numpy_missing)
openblas_own_kernels

build_variants conv1d ./bench/conv1d

# tessera_conv BUILD N: the median seconds of one convolution on N
# localities; the checksum goes to $tmp/sums.
tessera_conv() {
	local bin="$tmp/conv1d" rc=0
	[ "$1" = pure ] || bin="$tmp/conv1d-$1"
	timeout 600 "$tessera" run -n "$2" "$bin" "${GO_SHAPE[@]}" -n "$CONV_N" -warmup "$CONV_WARMUP" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		say "conv1d on $2 localities ($1) failed (exit $rc):"
		sed 's/^/  /' "$tmp/err" >&2
		return 1
	fi
	sed -n 's/^\[L0\] //p' "$tmp/out" >&2
	sed -n 's/^\[L0\] //p' "$tmp/out" | field conv1d_tessera checksum >>"$tmp/sums"
	sed -n 's/^\[L0\] //p' "$tmp/out" | field conv1d_tessera seconds
}
# numpy_conv THREADS: the median seconds of one NumPy convolution.
numpy_conv() {
	OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 timeout 600 "$PY" bench/conv1d_numpy.py "${SHAPE[@]}" -n "$CONV_N" --warmup "$CONV_WARMUP" >"$tmp/npout"
	cat "$tmp/npout" >&2
	field conv1d_numpy checksum <"$tmp/npout" >>"$tmp/sums"
	field conv1d_numpy seconds <"$tmp/npout"
}

for ((r = 1; r <= REPS; r++)); do
	say "conv1d repetition $r of $REPS"
	if [ -z "$numpy_skip" ]; then
		numpy_conv 1 >>"$tmp/np1"
		numpy_conv 2 >>"$tmp/np2"
		paste "$tmp/np1" "$tmp/np2" | tail -n 1 | awk '{ print ($1 < $2) ? $1 : $2 }' >>"$tmp/npbest"
	fi
	for b in "${builds[@]}"; do
		for n in 1 2; do
			tessera_conv "$b" "$n" >>"$tmp/t_${b}_$n"
		done
	done
done
# The sums agree to rounding (they add in different orders).
if ! awk 'NR==1 { f=$1 } { d=($1-f)/f; if (d<0) d=-d; if (d>1e-9) bad=1 } END { exit bad }' "$tmp/sums"; then
	say "the convolutions' checksums differ:"
	sort "$tmp/sums" | uniq -c >&2
	exit 1
fi

np_cell="—" ratio_cell="—" status="NumPy skipped: $numpy_skip"
if [ -z "$numpy_skip" ]; then
	np_best=$(median <"$tmp/npbest")
	np_cell="$(fmt "$np_best" '%.3f') s (NumPy im2col + matmul, best of 1 and 2 OpenBLAS threads)"
fi
rows=""
for b in "${builds[@]}"; do
	for n in 1 2; do
		t=$(median <"$tmp/t_${b}_$n")
		if [ -z "$numpy_skip" ]; then
			ratio=$(ratios "$tmp/t_${b}_$n" "$tmp/npbest" | median)
			ratio_cell=$(fmt "$ratio" '%.2f')
			status=$(meets "$ratio" '<=' 1.0)
		fi
		rows+="| Conv1D (2000, 80, 3) * (10, 3, 100), valid, $n localit$([ "$n" = 1 ] && echo y || echo ies) ($b build) | $(fmt "$t" '%.3f') s | $np_cell | $ratio_cell | ≤ 1.0 | $status |"$'\n'
	done
done
printf '%s' "$rows" >>"$SUMMARY"

cat <<EOF
## Conv1D (bench/conv1d) against NumPy

The convolution of the JetLag paper's Listing 2: an input of 2000 pages
(samples) x 80 time steps x 3 channels, page-tiled, and a kernel of 10 taps
x 3 channels x 100 filters held whole by every locality; valid padding,
stride 1, so the output is (2000, 71, 100): 2000 x 71 x 100 x 30
multiply-adds (0.85 GFLOP) and 113.6 MB of output per convolution.
\`primitives.Conv1D\` multiplies each locality's im2col matrix (its pages x
71 rows, 30 columns) by the kernel as a 30 x 100 matrix with
\`blas64.Gemm\` (OpenBLAS, or the pure build's own Dgemm), in blocks of 256 rows spread over the locality's cores,
setting the result array (beta 0), whose memory is that of a released
array as it was left (no pass clearing it; OpenBLAS clears each block of
C just before it writes it, the pure build's Gemm stores without reading);
page tiling needs no communication. The baseline,
\`bench/conv1d_numpy.py\`, does the same in NumPy with the im2col and output
buffers allocated once (Tessera makes a new result array every call, in
the memory of the one the program released),
with \`OPENBLAS_NUM_THREADS=1\` and \`=2\`, the faster taken.${blas_kernels:+
$blas_kernels} The input and
kernel are \`primitives.Random\`'s values (seeds 1 and 2), which the NumPy
script reproduces; every run prints the sum of the output, and the script
checks that all agree (to 1e-9, as they add in different orders). Each program times one convolution at a time,
$CONV_WARMUP warm-up then $CONV_N timed (with \`tessera run -n 2\`, from a barrier before
to a barrier after, on locality 0); the figures are the medians.

    tessera run -n N conv1d ${GO_SHAPE[*]} -n $CONV_N -warmup $CONV_WARMUP
    OPENBLAS_NUM_THREADS=T python3 bench/conv1d_numpy.py ${SHAPE[*]} -n $CONV_N --warmup $CONV_WARMUP

| Build | Localities | Seconds per repetition | Median |
|---|---|---|---|
$(for b in "${builds[@]}"; do for n in 1 2; do printf '| %s | %d | %s | %s |\n' "$b" "$n" "$(list "$tmp/t_${b}_$n" %.3f)" "$(fmt "$(median <"$tmp/t_${b}_$n")" '%.3f')"; done; done)
$(if [ -z "$numpy_skip" ]; then
	printf '| NumPy, 1 thread | 1 | %s | %s |\n' "$(list "$tmp/np1" %.3f)" "$(fmt "$(median <"$tmp/np1")" '%.3f')"
	printf '| NumPy, 2 threads | 1 | %s | %s |\n' "$(list "$tmp/np2" %.3f)" "$(fmt "$(median <"$tmp/np2")" '%.3f')"
else
	printf '| NumPy | — | skipped: %s | — |\n' "$numpy_skip"
fi)

The pure-Go build multiplies with the primitives' own Dgemm
(\`internal/linalg\`: packed blocks and an AVX-512 8 x 16 micro-kernel in
Go assembly, about 36-39 GFLOP/s on one core here, AVX2 4 x 8 on CPUs
without AVX-512), where gonum's, an SSE2 axpy loop, reached about 6 on
two; OpenBLAS's Haswell kernels reach about 28 on one core, its AVX-512
ones about 46. With \`tessera run -n 2\` on
this 2-core machine each locality has one core (GOMAXPROCS=1) and 1000
pages.
EOF
