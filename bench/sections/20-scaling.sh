#!/usr/bin/env bash
# Section of `make bench`: how the costs grow with the number of localities —
# action round trips (bench/latbench: locality 0 calling the others in turn,
# and every locality calling its neighbour at once) and AllReduce of one
# float64 and of 1 MiB (bench/collbench) on 2 to 8 localities of this
# machine. How they grow with the data size is the parcel-size sweep of the
# parcelports section; ALS and Cannon on 1, 2 and 4 localities are in their
# own sections.
#
# Environment: SCALE_SIZES (2 3 4 6 8).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

SCALE_SIZES=${SCALE_SIZES:-2 3 4 6 8}
LAT_FLAGS=(-n 3000 -warmup 300)
COLL_FLAGS=(-test allreduce1,allreduce1mib -n 1000 -warmup 200 -big-n 40 -big-warmup 5)

say "building latbench and collbench"
go build -o "$tmp/latbench" ./bench/latbench
go build -o "$tmp/collbench" ./bench/collbench

# job N PROGRAM FLAGS...: locality 0's RESULT lines of a job of N.
job() {
	local n=$1 prog=$2 rc=0
	shift 2
	timeout 300 "$tessera" run -n "$n" "$prog" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		say "$(basename "$prog") on $n localities failed (exit $rc):"
		sed 's/^/  /' "$tmp/err" >&2
		return 1
	fi
	sed -n 's/^\[L0\] //p' "$tmp/out" | grep '^RESULT'
}

for ((r = 1; r <= REPS; r++)); do
	for n in $SCALE_SIZES; do
		say "scaling repetition $r of $REPS, $n localities"
		job "$n" "$tmp/latbench" "${LAT_FLAGS[@]}" | sed "s/\$/ n=$n/" >>"$tmp/results"
		job "$n" "$tmp/collbench" "${COLL_FLAGS[@]}" | sed "s/\$/ n=$n/" >>"$tmp/results"
	done
done
cat "$tmp/results" >&2

# cell NAME KEY N FORMAT: the median of KEY over the RESULT lines of NAME on N localities.
cell() { awk -v n="name=$1" -v s="n=$3" '$2==n && $NF==s' "$tmp/results" | field "$1" "$2" | median | xargs -I{} awk -v v={} -v f="$4" 'BEGIN { printf f, v }'; }

rows=""
for n in $SCALE_SIZES; do
	rows+="| $n | $(cell fan us "$n" '%.1f') | $(cell ring us "$n" '%.1f') | $(cell allreduce1 us "$n" '%.1f') | $(cell allreduce1mib us "$n" '%.0f') µs, $(cell allreduce1mib gbps "$n" '%.3f') GB/s |"$'\n'
done

cat <<EOF
## Scaling with the number of localities

Every job runs on this one 2-core machine (\`tessera run -n N\`, so from 2
localities on, GOMAXPROCS=1 each and from 3 on more processes than cores).
Medians of $REPS repetitions, in µs per operation.

- *fan*: locality 0 calls a 64-byte echo action on localities 1..N-1 in
  turn, one call in flight, the others only serving (\`bench/latbench\`).
- *ring*: every locality calls its right neighbour at the same time; the
  slowest locality's mean.
- AllReduce (sum) of one float64 and of 1 MiB per locality (\`bench/collbench\`).

    tessera run -n N latbench ${LAT_FLAGS[*]}
    tessera run -n N collbench ${COLL_FLAGS[*]}

| Localities | fan round trip µs | ring round trip µs | AllReduce 1 double µs | AllReduce 1 MiB |
|---|---|---|---|---|
$rows
What a 2-core machine can show: the cost of one more process in the
protocol — a fan round trip should stay flat as N grows if nothing in the
runtime scans all peers, and AllReduce grows with log2 N steps for one
double and stays near-constant in bytes moved per locality for 1 MiB (ring
algorithm). What it cannot show: any speed-up, and latencies free of
scheduling — with more processes than cores, the ring and AllReduce
figures include the time a locality waits for a core (about one time slice
of the host per extra process), which real nodes do not pay.
EOF
