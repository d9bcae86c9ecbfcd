#!/usr/bin/env bash
# Section of `make bench`: cannon_product_d (examples/cannon, `tessera run
# -n N`, localities over TCP) — Cannon on 4 localities (2x2 grid), SUMMA on
# 2 (2x1) and the local product on 1 — against one process multiplying the
# whole matrices with one blas64.Gemm (bench/cannon), with the same BLAS in
# the same run, both warm (the best of CANNON_WARM products per job and
# process). Efficiency = single-process time / Tessera time, the median
# of the per-repetition ratios. Both builds: pure Go, and -tags openblas
# when OpenBLAS is installed (as root the section installs libopenblas-dev
# and liblapacke-dev). Tessera's localities run OpenBLAS single-threaded
# (primitives.Register); the openblas baseline is the faster of 1 and
# nproc OpenBLAS threads (the pure build's Dgemm uses every core by itself).
# Then, with the openblas build, Cannon on 4 localities against Dask's A@B
# in 2 x 2 chunks (bench/cannon_dask.py), both warm and with the same
# statistic: each repetition runs one Tessera job and one Dask process of
# CANNON_WARM products each, alternating which goes first, and the ratio is
# the median over the repetitions of (Tessera's best of its job / Dask's
# best of its process). Each repetition also runs Cannon's Dgemms in 4
# processes without communication (bench/cannon -grid 2), the bound of
# any distributed product of these tiles here, against both. When the
# environment sets OPENBLAS_CORETYPE, the comparison runs again at
# CANNON_OWN_SIZES with it unset, OpenBLAS choosing its kernels itself.
#
# Environment: CANNON_SIZES ("2048 4096"); CANNON_WARM (3): the products
# of each job and process (the scaling table's and the comparison with Dask's); CANNON_OWN_SIZES
# (4096): the sizes of the second comparison.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

SIZES=${CANNON_SIZES:-2048 4096}
WARM=${CANNON_WARM:-3}
LOCS=(4 2 1)
threads=$(nproc)

have_openblas() { pkg-config --exists openblas lapacke 2>/dev/null; }
if ! have_openblas && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	say "installing libopenblas-dev liblapacke-dev pkg-config (apt-get install -y)"
	inst() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libopenblas-dev liblapacke-dev pkg-config; }
	inst >>"$tmp/apt.log" 2>&1 || { apt-get update -q >>"$tmp/apt.log" 2>&1 && inst >>"$tmp/apt.log" 2>&1; } || true
fi

say "building examples/cannon and bench/cannon"
go build -o "$tmp/cannon-pure" ./examples/cannon
go build -o "$tmp/dgemm-pure" ./bench/cannon
builds=(pure)
openblas_note=""
if ! have_openblas; then
	openblas_note="OpenBLAS is not installed (pkg-config openblas lapacke) and could not be installed: no openblas figures."
elif go build -tags openblas -o "$tmp/cannon-openblas" ./examples/cannon 2>"$tmp/openblas.log" &&
	go build -tags openblas -o "$tmp/dgemm-openblas" ./bench/cannon 2>>"$tmp/openblas.log"; then
	builds+=(openblas)
else
	openblas_note="the -tags openblas build failed: $(tail -n 1 "$tmp/openblas.log" | tr -d '|`')"
fi
[ -z "$openblas_note" ] || say "$openblas_note"

# tessera_cannon BUILD LOCALITIES N [K]: the seconds of the best of K
# products (1) of one job; locality 0's RESULT line is left in $tmp/result.
tessera_cannon() {
	local rc=0
	timeout 900 "$tessera" run -n "$2" "$tmp/cannon-$1" -n "$3" --repeat "${4:-1}" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		say "cannon on $2 localities ($1, n=$3) failed (exit $rc):"
		sed 's/^/  /' "$tmp/err" >&2
		return 1
	fi
	sed -n 's/^\[L0\] cannon: //p' "$tmp/out" >&2
	sed -n 's/^\[L0\] //p' "$tmp/out" >"$tmp/result"
	field cannon seconds <"$tmp/result"
}
# dask N K: the seconds of Dask's best of K products in one process; its
# RESULT line is left in $tmp/result.
dask() {
	OPENBLAS_NUM_THREADS=1 timeout 900 "$PY" bench/cannon_dask.py -n "$1" --repeat "$2" >"$tmp/result"
	sed -n 's/^RESULT //p' "$tmp/result" >&2
	field dask seconds <"$tmp/result"
}
# nocomm N K: the seconds of the best of K repetitions of Cannon's Dgemms
# on 4 processes without communication (bench/cannon -grid 2, the openblas
# build, OpenBLAS single-threaded as in the localities).
nocomm() {
	OPENBLAS_NUM_THREADS=1 timeout 900 "$tmp/dgemm-openblas" -n "$1" -grid 2 -repeat "$2" >"$tmp/result"
	sed -n 's/^nocomm: //p' "$tmp/result" >&2
	field nocomm seconds <"$tmp/result"
}
# all_times NAME: every product's seconds in $tmp/result, one per line.
all_times() { field "$1" times <"$tmp/result" | tr ',' '\n'; }
# dgemm BUILD N THREADS: seconds of the single-process Dgemm, the best of
# WARM products into the same C.
dgemm() {
	OPENBLAS_NUM_THREADS=$3 timeout 900 "$tmp/dgemm-$1" -n "$2" -repeat "$WARM" >"$tmp/sout"
	sed -n 's/^dgemm: //p' "$tmp/sout" >&2
	field dgemm seconds <"$tmp/sout"
}
# single BUILD N: the baseline's seconds. The openblas build runs with 1
# and with nproc OpenBLAS threads (files s1_ and sN_) and the faster
# counts: on a busy machine more threads can be slower.
single() {
	if [ "$1" = pure ]; then
		dgemm "$1" "$2" "$threads"
		return
	fi
	local t1 tn
	t1=$(dgemm "$1" "$2" 1)
	tn=$(dgemm "$1" "$2" "$threads")
	echo "$t1" >>"$tmp/s1_$1_$2"
	echo "$tn" >>"$tmp/sN_$1_$2"
	awk -v a="$t1" -v b="$tn" 'BEGIN { print (a < b) ? a : b }'
}

for b in "${builds[@]}"; do
	for n in $SIZES; do
		for ((r = 1; r <= REPS; r++)); do
			say "cannon $b n=$n repetition $r of $REPS"
			single "$b" "$n" >>"$tmp/s_${b}_$n"
			for p in "${LOCS[@]}"; do
				tessera_cannon "$b" "$p" "$n" "$WARM" >>"$tmp/t_${b}_${n}_$p"
			done
		done
	done
done

gflops() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.2f", 2*n*n*n/s/1e9 }'; }
algo() { case $1 in 4) echo "Cannon 2x2" ;; 1) echo "local Dgemm" ;; *) echo "SUMMA ${1}x1" ;; esac; }

# Dask's A@B on the same machine: the threaded scheduler, one worker per
# core, 2 x 2 chunks, OpenBLAS single-threaded in each worker; against
# Cannon on 4 localities, the openblas build, alternating.
dask_skip=""
if ! "$PY" -c 'import dask.array' 2>/dev/null; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		say "installing python3-dask"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-dask >>"$tmp/apt.log" 2>&1 ||
			{ apt-get update -q >>"$tmp/apt.log" 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-dask >>"$tmp/apt.log" 2>&1; } || true
	fi
	"$PY" -c 'import dask.array' 2>/dev/null || dask_skip="Dask is not installed for $PY and could not be installed (python3-dask)"
fi
[[ " ${builds[*]} " == *" openblas "* ]] || dask_skip=${dask_skip:-"there is no openblas build to compare"}
# compare TAG SIZES: the repetitions of the comparison with Dask at each
# of SIZES, into files of TAG: wt_ (Tessera's bests), wtall_ (all its
# products), wn_ (no communication), wp_ (the pure build's Tessera), wd_
# and wdall_ (Dask).
compare() {
	local tag=$1 n r order side
	for n in $2; do
		for ((r = 1; r <= REPS; r++)); do
			order="tessera nocomm pure dask"
			[ $((r % 2)) = 1 ] || order="dask pure nocomm tessera"
			say "cannon against dask ($tag kernels), n=$n, repetition $r of $REPS ($order)"
			for side in $order; do
				if [ "$side" = tessera ]; then
					tessera_cannon openblas 4 "$n" "$WARM" >>"$tmp/wt_${tag}_$n"
					all_times cannon >>"$tmp/wtall_${tag}_$n"
				elif [ "$side" = nocomm ]; then
					nocomm "$n" "$WARM" >>"$tmp/wn_${tag}_$n"
				elif [ "$side" = pure ]; then
					tessera_cannon pure 4 "$n" "$WARM" >>"$tmp/wp_${tag}_$n"
				else
					dask "$n" "$WARM" >>"$tmp/wd_${tag}_$n"
					all_times dask >>"$tmp/wdall_${tag}_$n"
				fi
			done
		done
	done
}
# When the environment chooses OpenBLAS's kernels (OPENBLAS_CORETYPE),
# the comparison runs a second time with OpenBLAS's own choice for this
# CPU, at CANNON_OWN_SIZES, all three programs alike.
coretype=${OPENBLAS_CORETYPE:-}
own_sizes=""
[ -z "$coretype" ] || own_sizes=${CANNON_OWN_SIZES:-4096}
if [ -z "$dask_skip" ]; then
	compare env "$SIZES"
	[ -z "$own_sizes" ] || (unset OPENBLAS_CORETYPE && compare own "$own_sizes")
fi

rows="" table=""
for b in "${builds[@]}"; do
	for n in $SIZES; do
		s=$(median <"$tmp/s_${b}_$n")
		if [ "$b" = openblas ]; then
			for f in s1 sN; do
				th=1
				[ "$f" = s1 ] || th=$threads
				table+="| $b | $n | 1 process, one Dgemm, $th OpenBLAS thread(s) | $(list "$tmp/${f}_${b}_$n" %.3f) | $(fmt "$(median <"$tmp/${f}_${b}_$n")" %.3f) | $(gflops "$n" "$(median <"$tmp/${f}_${b}_$n")") | — |"$'\n'
			done
		fi
		table+="| $b | $n | **baseline**: 1 process, one Dgemm$([ "$b" = pure ] || echo ', the faster of the two') | $(list "$tmp/s_${b}_$n" %.3f) | $(fmt "$s" %.3f) | $(gflops "$n" "$s") | — |"$'\n'
		for p in "${LOCS[@]}"; do
			[ -s "$tmp/t_${b}_${n}_$p" ] || continue
			t=$(median <"$tmp/t_${b}_${n}_$p")
			eff=$(ratios "$tmp/s_${b}_$n" "$tmp/t_${b}_${n}_$p" | median)
			table+="| $b | $n | $p localit$([ "$p" = 1 ] && echo y || echo ies), $(algo "$p") | $(list "$tmp/t_${b}_${n}_$p" %.3f) | $(fmt "$t" %.3f) | $(gflops "$n" "$t") | $(fmt "$eff" %.2f) |"$'\n'
			if [ "$p" = 4 ]; then
				status="no target for the pure-Go build"
				[ "$b" != openblas ] || status=$(meets "$eff" '>=' 0.8)
				rows+="| cannon_product_d $n x $n, 4 localities ($b build) | $(fmt "$t" %.3f) s, $(gflops "$n" "$t") GFLOP/s | $(fmt "$s" %.3f) s, $(gflops "$n" "$s") GFLOP/s (one process, one Dgemm) | $(fmt "$eff" %.2f) | ≥ 0.8 (openblas) | $status |"$'\n'
			fi
		done
	done
done
# dask_table TAG SIZES [SUMMARY]: the comparison's table rows of TAG;
# with SUMMARY, the target rows go to $rows too.
dask_table() {
	local tag=$1 n t d r nb nt
	for n in $2; do
		t=$(median <"$tmp/wt_${tag}_$n") d=$(median <"$tmp/wd_${tag}_$n")
		ratios "$tmp/wt_${tag}_$n" "$tmp/wd_${tag}_$n" >"$tmp/wr_${tag}_$n"
		r=$(median <"$tmp/wr_${tag}_$n")
		nb=$(ratios "$tmp/wn_${tag}_$n" "$tmp/wd_${tag}_$n" | median) nt=$(ratios "$tmp/wt_${tag}_$n" "$tmp/wn_${tag}_$n" | median)
		[ -z "${3:-}" ] || rows+="| cannon_product_d $n x $n, 4 localities (openblas) against Dask, both warm (best of $WARM products per job, median of $REPS jobs) | $(fmt "$t" %.3f) s | $(fmt "$d" %.3f) s (Dask A@B, threads, 2 x 2 chunks) | $(fmt "$r" %.2f) | < 1 (ahead of Dask) | $(meets "$r" '<=' 0.999) |"$'\n'
		printf '| %s | %s | %s | %s | **%s** | %s s against %s s | %s | %s | %s | %s | %s |\n' "$n" "$(list "$tmp/wt_${tag}_$n" %.3f)" "$(list "$tmp/wd_${tag}_$n" %.3f)" \
			"$(list "$tmp/wr_${tag}_$n" %.2f)" "$(fmt "$r" %.2f)" "$(fmt "$(median <"$tmp/wtall_${tag}_$n")" %.3f)" "$(fmt "$(median <"$tmp/wdall_${tag}_$n")" %.3f)" \
			"$(list "$tmp/wn_${tag}_$n" %.3f)" "$(fmt "$nb" %.2f)" "$(fmt "$nt" %.2f)" \
			"$(list "$tmp/wp_${tag}_$n" %.3f)" "$(fmt "$(ratios "$tmp/wp_${tag}_$n" "$tmp/wd_${tag}_$n" | median)" %.2f)"
	done
}
dask_head="| n | Tessera, 4 localities: best of $WARM per job | Dask A@B: best of $WARM per process | Tessera / Dask per repetition | Median ratio | All products, medians: Tessera against Dask | No communication: best of $WARM per run | No communication / Dask | Tessera / no communication | Pure build, 4 localities: best of $WARM per job | Pure build / Dask |
|---|---|---|---|---|---|---|---|---|---|---|"
dask_rows="" own_rows=""
if [ -z "$dask_skip" ]; then
	dask_table env "$SIZES" summary >"$tmp/dask_rows"
	dask_rows=$(cat "$tmp/dask_rows")
	[ -z "$own_sizes" ] || own_rows=$(dask_table own "$own_sizes")
fi
own_text=""
if [ -n "$own_rows" ]; then
	cpu="$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), family $(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //') model $(grep -m1 '^model[[:space:]]' /proc/cpuinfo | sed 's/.*: //')"
	own_text="
The environment of this run set OPENBLAS_CORETYPE=$coretype, so every
program above ran OpenBLAS's $coretype kernels. The same comparison with
the variable unset, OpenBLAS choosing the kernels for this CPU ($cpu)
itself, for every program alike:

$dask_head
$own_rows"
fi
printf '%s' "$rows" >>"$SUMMARY"

cat <<EOF
## Distributed matrix product (cannon_product_d) against one Dgemm

Two n x n matrices of uniform random values, sym-tiled. Tessera multiplies
them with \`CannonProduct\` (examples/cannon: the time of the product alone,
from a moment every locality has its tiles to the moment every locality has
its tile of C); the baseline multiplies the whole matrices in one process
with one \`blas64.Gemm\` (bench/cannon), with the same BLAS, right next to
it. Efficiency is the baseline's time over Tessera's: 1.0 means the
distributed product costs nothing over the single process on the same
machine. GFLOP/s count 2n³ operations. Both sides are warm: a job (a
process) times $WARM products and its figure is the best of them. Tessera's
job releases each product but the last, so the next takes its memory; the
baseline multiplies into the same C each time. A first product pays for
every fresh page it touches, which costs more on this virtual machine
than anything else in it: a fresh 32 MiB buffer took 14-85 ms to touch,
clearing it again 3.3 ms, and a first Cannon product 4096 took 1.55 s
against 1.01-1.02 s for the next ones (OpenBLAS's own kernels).

    tessera run -n N cannon -n SIZE --repeat $WARM          (examples/cannon)
    OPENBLAS_NUM_THREADS=T cannon -n SIZE -repeat $WARM     (bench/cannon, T = 1 and $threads)

Tessera's localities call OpenBLAS single-threaded (each locality already
runs its tasks on every core). The openblas baseline is the faster of one
process with 1 and with $threads OpenBLAS threads, in each repetition (on a
busy machine the threaded one can be the slower). The pure build's Dgemm
(gonum's BLAS with the primitives' own Dgemm, internal/linalg) spreads a
large product over the cores by itself, in both.
$([ -z "$openblas_note" ] || printf '\n**%s**\n' "$openblas_note")

| Build | n | Run | Seconds per repetition (best of $WARM products) | Median | GFLOP/s | Efficiency |
|---|---|---|---|---|---|---|
${table}
This machine has $threads cores: 4 localities share them, so the 4-locality
figures measure what the algorithm costs on top of the machine's Dgemm —
its skew and shifts and the per-locality tiles — not a speed-up, which
needs 4 cores or nodes. On 1 locality the openblas build calls one
single-threaded Dgemm on the whole matrices.

Against Dask (\`bench/cannon_dask.py\`: \`(A @ B).persist()\` of two dask
arrays in 2 x 2 chunks on the threaded scheduler, $threads workers,
OpenBLAS single-threaded, the inputs persisted first), both sides warm
and measured alike: each repetition runs one Tessera job
(\`tessera run -n 4 cannon -n SIZE --repeat $WARM\`, the openblas build)
and one Dask process (\`cannon_dask.py -n SIZE --repeat $WARM\`) of $WARM
products each, Tessera first in odd repetitions and Dask first in even
ones. A side's figure of a repetition is the best of its $WARM products;
the ratio is the median over the $REPS repetitions of Tessera's best over
Dask's (the Tessera and Dask columns of the summary are the medians of
those bests). The sixth column has the median of all $((REPS * WARM)) products
of each side.

Between the two, each repetition also runs Cannon's Dgemms without
Cannon's communication (\`OPENBLAS_NUM_THREADS=1 cannon -n SIZE -grid 2
-repeat $WARM\`, bench/cannon, the openblas build): 4 processes at once,
each multiplying 2 pairs of tiles of its own into its tile of C, as a
locality does with the tiles it receives; a run's time is its slowest
process's. Its tiles and NumPy's arrays are in memory advised for
transparent huge pages (internal/hugepage; NumPy advises arrays of 4 MiB
and more). Tessera's tiles, as its localities share the machine, are in
shared memory segments (Runtime.SharedFloat64s), which this kernel backs
with 4 KiB pages (shmem huge pages: \`$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null || echo unknown)\`);
by hand, the bound with its tiles in such segments took about 1% longer
(best of 3 products 0.929-0.934 s against 0.917-0.924 s, three
alternating runs), and its first product less (0.97-1.01 against
1.08-1.13 s). A locality takes the tile of C from the memory of the
product the job released before (Runtime.Float64s: the example releases
each product but the last), and the bound clears and reuses its own, so
neither touches a fresh page after the first product (Dask's first
product is its slowest too: each side's figure is its best of 3). On this virtual machine
the first touch costs far more than the Dgemm's own writes: a fresh
32 MiB buffer took 14-85 ms to touch, clearing it again 3.3 ms. No
distributed product of these tiles on this machine can be
faster: the two columns after it place Dask and Tessera against it
(medians of the per-repetition ratios). Dask shares one address space and moves no
tile. Tessera's localities are processes, and a product moves 8 tiles of
(SIZE/2)² doubles (256 MiB at 4096); on one machine they lend them
(\`Channel.Lend\`): a segment's descriptor travels instead of its
elements, the receiver maps the segment read-only and multiplies the
sender's memory, and the sender reuses it once every holder has given it
back. No tile is copied. Before the lending the tiles went over loopback
TCP, read and written twice each: a product then took Tessera's 4
localities the bound's user CPU (1.79-1.89 against 1.81-1.90 s, by hand:
\`/proc/stat\` around jobs of 2 and of 6 products, two pairs), the
kernel's copying (0.15 s of CPU for 256 MiB between two processes,
standalone) put Tessera at 1.09 of the bound, and Dask was ahead at 1.04.
With the lending, the same measurement gave Tessera 1.88-1.94 s of user
CPU a product against the bound's 1.83-1.85 s and almost no system CPU
(12-35 ms a product); the 4 KiB pages of the segments account for about
half of the difference. The last two columns run the same Cannon job in the pure
build (built without the openblas tag; its BLAS: $("$tessera" info | sed -n 's/^blas *//p')),
which no OpenBLAS setting changes. They are not the target's figures: the
target is the openblas build against Dask on the same OpenBLAS.
$(if [ -n "$dask_skip" ]; then printf '\nskipped: %s.\n' "$dask_skip"; else printf '\n%s\n%s\n' "$dask_head" "$dask_rows"; fi)
$own_text
EOF
