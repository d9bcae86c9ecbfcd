#!/usr/bin/env bash
# Section of `make bench`: retile_d — primitives.Retile of a 4096 x 4096
# array from rows to columns on 4 localities (bench/retile, `tessera run
# -n 4`, real processes over TCP on this machine), against the raw parcel
# bandwidth of the same build measured in the same repetition: 8 MiB
# []float64 parcels one way between 2 localities with 4 in flight
# (bench/pingpong -mode tessera -test bw). The ratio is the retile's
# effective rate (bytes that cross between localities per second of the
# retile) over that bandwidth.
#
# Environment: RETILE_N (4096), RETILE_REPS (5): timed retiles per job.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

N=${RETILE_N:-4096}
INNER=${RETILE_REPS:-5}

say "building bench/retile and bench/pingpong"
go build -o "$tmp/retile" ./bench/retile
go build -o "$tmp/pingpong" ./bench/pingpong

# job LOCALITIES PROGRAM ARGS...: locality 0's output lines, without prefix.
job() {
	local n=$1 rc=0
	shift
	timeout 600 "$tessera" run -n "$n" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		say "$* on $n localities failed (exit $rc):"
		sed 's/^/  /' "$tmp/err" >&2
		return 1
	fi
	sed -n 's/^\[L0\] //p' "$tmp/out"
}

: >"$tmp/retile_gbps" && : >"$tmp/retile_s" && : >"$tmp/bw_gbps"
for ((r = 1; r <= REPS; r++)); do
	say "retile repetition $r of $REPS"
	job 2 "$tmp/pingpong" -mode tessera -test bw -bw-n 32 -bw-warmup 4 >"$tmp/pp"
	field tessera_bw gbps <"$tmp/pp" >>"$tmp/bw_gbps"
	job 4 "$tmp/retile" -n "$N" -reps "$INNER" >"$tmp/rt"
	sed -n 's/^retile: //p' "$tmp/rt" >&2
	field retile gbps <"$tmp/rt" >>"$tmp/retile_gbps"
	field retile seconds <"$tmp/rt" >>"$tmp/retile_s"
	bytes=$(field retile bytes <"$tmp/rt")
done

g=$(median <"$tmp/retile_gbps")
s=$(median <"$tmp/retile_s")
bw=$(median <"$tmp/bw_gbps")
ratio=$(ratios "$tmp/retile_gbps" "$tmp/bw_gbps" | median)
printf '| retile_d %s x %s row -> column, 4 localities | %s s, %s GB/s | %s GB/s (parcels, 2 localities) | %s | — | no target |\n' \
	"$N" "$N" "$(fmt "$s" %.3f)" "$(fmt "$g" %.3f)" "$(fmt "$bw" %.3f)" "$(fmt "$ratio" %.2f)" >>"$SUMMARY"

cat <<EOF2
## Retile (retile_d) against the parcel bandwidth

A $N x $N array of uniform random values, tiled by rows on 4 localities
(real processes over TCP on this machine), retiled to columns with
\`primitives.Retile\`: each locality fetches the blocks of its new column
tile that the others own (annotate.Plan's pieces, one fetch_block each, as
raw chunks) and copies its own. $bytes bytes cross between localities
per retile (3/4 of the array); each job times $INNER retiles after an
untimed one, from a barrier to a barrier, and checks that every locality
fetched exactly its pieces of the plan. The effective rate is those bytes
over the median time. The baseline is the raw parcel bandwidth of the
same build in the same repetition: 8 MiB \`[]float64\` parcels one way
between 2 localities, 4 in flight (bench/pingpong).

    tessera run -n 4 retile -n $N -reps $INNER          (bench/retile)
    tessera run -n 2 pingpong -mode tessera -test bw -bw-n 32   (bench/pingpong)

| | Per repetition | Median |
|---|---|---|
| retile time (s) | $(list "$tmp/retile_s" %.4f) | $(fmt "$s" %.4f) |
| retile effective rate (GB/s) | $(list "$tmp/retile_gbps" %.3f) | $(fmt "$g" %.3f) |
| parcel bandwidth, 2 localities (GB/s) | $(list "$tmp/bw_gbps" %.3f) | $(fmt "$bw" %.3f) |
| ratio retile / parcels | $(ratios "$tmp/retile_gbps" "$tmp/bw_gbps" | awk '{ printf "%s%.2f", (NR>1 ? ", " : ""), $1 }') | $(fmt "$ratio" %.2f) |

The machine has $(nproc) cores shared by the 4 localities: the retile's 12
transfers run at once over loopback TCP and compete with its copies for
the cores, while the baseline is one stream between two processes.
EOF2
