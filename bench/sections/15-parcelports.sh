#!/usr/bin/env bash
# Section of `make bench`: the two socket parcelports side by side — Go's
# net (tcp, the default) and github.com/lesismal/nbio — through the same
# program, bench/pingpong -mode tessera, started by
# `tessera run --parcelport tcp|nbio -n 2`. The baseline of every nbio
# figure is the tcp figure of the same repetition. Run by bench/run.sh;
# uses bench/lib.sh.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

RTT_N=10000 RTT_WARM=1000 BW_N=64 BW_WARM=8 WINDOW=4
SIZES=64,4096,262144,4194304,67108864
MANY_G=32 MANY_N=500
PP_FLAGS=(-test 'rtt,bw,sweep,many,conns' -rtt-n "$RTT_N" -rtt-warmup "$RTT_WARM" -rtt-size 64
	-bw-n "$BW_N" -bw-warmup "$BW_WARM" -bw-elems 1048576 -window "$WINDOW"
	-sweep-sizes "$SIZES" -many-senders "$MANY_G" -many-n "$MANY_N")

say "building pingpong"
go build -o "$tmp/pingpong" ./bench/pingpong

# port_job PORT: pingpong as a job of 2 localities on PORT; prints locality
# 0's results with the port's name in place of "tessera".
port_job() {
	local port=$1 rc=0
	timeout 300 "$tessera" run --parcelport "$port" -n 2 "$tmp/pingpong" -mode tessera "${PP_FLAGS[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		say "$port job failed (exit $rc):"
		sed 's/^/  /' "$tmp/err" >&2
		return 1
	fi
	sed -n "s/^\[L0\] \(RESULT name=\)tessera_/\1${port}_/p" "$tmp/out"
}

: >"$tmp/results"
for ((r = 1; r <= REPS; r++)); do
	say "parcelports repetition $r of $REPS"
	if ((r % 2)); then order=(tcp nbio); else order=(nbio tcp); fi
	for port in "${order[@]}"; do
		port_job "$port" >>"$tmp/results"
	done
done
cat "$tmp/results" >&2

# sweep PORT SIZE KEY: the values of KEY for one size of the sweep.
sweep() { awk -v n="name=$1_sweep" -v s="size=$2" -v k="$3=" '$1=="RESULT" && $2==n && $3==s { for (i=4; i<=NF; i++) if (index($i, k)==1) print substr($i, length(k)+1) }' "$tmp/results"; }

for port in tcp nbio; do
	field "${port}_rtt" us_per_rtt <"$tmp/results" >"$tmp/${port}_rtt"
	field "${port}_bw" gbps <"$tmp/results" >"$tmp/${port}_bw"
	field "${port}_many" calls_per_s <"$tmp/results" >"$tmp/${port}_many"
	field "${port}_many" parcels_per_write <"$tmp/results" >"$tmp/${port}_ppw"
	field "${port}_conns" peers <"$tmp/results" >"$tmp/${port}_peers"
	field "${port}_conns" sockets <"$tmp/results" >"$tmp/${port}_sockets"
done
rtt_t=$(median <"$tmp/tcp_rtt") rtt_n=$(median <"$tmp/nbio_rtt")
rtt_ratio=$(ratios "$tmp/nbio_rtt" "$tmp/tcp_rtt" | median)
bw_t=$(median <"$tmp/tcp_bw") bw_n=$(median <"$tmp/nbio_bw")
bw_ratio=$(ratios "$tmp/nbio_bw" "$tmp/tcp_bw" | median)
many_ratio=$(ratios "$tmp/nbio_many" "$tmp/tcp_many" | median)

# The default changes only if nbio wins both: latency and bandwidth.
if awk -v a="$rtt_ratio" -v b="$bw_ratio" 'BEGIN { exit !(a < 1 && b > 1) }'; then
	verdict="nbio wins both in this run"
else
	verdict="tcp stays the default"
fi

{
	printf '| 64-byte round trip, nbio parcelport, 2 processes | %s µs | %s µs (tcp parcelport) | %s | — | %s |\n' \
		"$(fmt "$rtt_n" '%.1f')" "$(fmt "$rtt_t" '%.1f')" "$(fmt "$rtt_ratio" '%.2f')" "$verdict"
	printf '| 8 MiB `[]float64` calls, window %s, nbio parcelport | %s GB/s | %s GB/s (tcp parcelport) | %s | — | %s |\n' \
		"$WINDOW" "$(fmt "$bw_n" '%.2f')" "$(fmt "$bw_t" '%.2f')" "$(fmt "$bw_ratio" '%.2f')" "$verdict"
} >>"$SUMMARY"

# sweep_rows: one row per size, median latency and throughput of both ports.
sweep_rows() {
	local s human
	for s in ${SIZES//,/ }; do
		human=$(awk -v s="$s" 'BEGIN { if (s >= 1048576) printf "%d MiB", s/1048576; else if (s >= 1024) printf "%d KiB", s/1024; else printf "%d B", s }')
		sweep tcp "$s" us_per_call >"$tmp/lt"
		sweep nbio "$s" us_per_call >"$tmp/ln"
		sweep tcp "$s" gbps >"$tmp/gt"
		sweep nbio "$s" gbps >"$tmp/gn"
		printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$human" \
			"$(fmt "$(median <"$tmp/lt")" '%.1f')" "$(fmt "$(median <"$tmp/ln")" '%.1f')" "$(fmt "$(ratios "$tmp/ln" "$tmp/lt" | median)" '%.2f')" \
			"$(fmt "$(median <"$tmp/gt")" '%.3f')" "$(fmt "$(median <"$tmp/gn")" '%.3f')" "$(fmt "$(ratios "$tmp/gn" "$tmp/gt" | median)" '%.2f')"
	done
}

# The coalescing limit (TCPConfig.MaxBatch) on a flood of small parcels:
# BenchmarkTCPCoalescing, REPS runs of each limit; medians.
say "coalescing limit sweep (go test -bench BenchmarkTCPCoalescing ./parcel/)"
go test -run '^$' -bench '^BenchmarkTCPCoalescing$' -benchtime 100000x -count "$REPS" ./parcel/ >"$tmp/coal" 2>&1 || {
	say "the coalescing benchmark failed:"
	sed 's/^/  /' "$tmp/coal" >&2
	exit 1
}
coal_rows=""
for b in 1 4 16 64; do
	grep "^BenchmarkTCPCoalescing/MaxBatch=$b-" "$tmp/coal" | awk '{ for (i=1; i<NF; i++) if ($(i+1)=="parcels/s") print $i }' >"$tmp/coal_ps"
	grep "^BenchmarkTCPCoalescing/MaxBatch=$b-" "$tmp/coal" | awk '{ for (i=1; i<NF; i++) if ($(i+1)=="parcels/write") print $i }' >"$tmp/coal_pw"
	coal_rows+="| $b | $(fmt "$(median <"$tmp/coal_ps")" '%.0f') | $(fmt "$(median <"$tmp/coal_pw")" '%.2f') |"$'\n'
done

cat <<EOF
## Parcelports: tcp and nbio

The same program, \`bench/pingpong -mode tessera\`, as a job of 2
processes on each parcelport, alternating which goes first; every nbio
figure is compared with the tcp figure of the same repetition (ratio = nbio
/ tcp: above 1 nbio takes longer, or moves more bytes per second). The
default stays tcp unless nbio wins both the round trip and the bandwidth:
**${verdict}**.

    tessera run --parcelport tcp|nbio -n 2 pingpong -mode tessera ${PP_FLAGS[*]}

| | tcp | nbio | nbio / tcp |
|---|---|---|---|
| 64-byte round trip, µs | $(list "$tmp/tcp_rtt" %.1f) | $(list "$tmp/nbio_rtt" %.1f) | $(fmt "$rtt_ratio" '%.2f') |
| 8 MiB calls, window $WINDOW, GB/s | $(list "$tmp/tcp_bw" %.2f) | $(list "$tmp/nbio_bw" %.2f) | $(fmt "$bw_ratio" '%.2f') |
| $MANY_G goroutines × $MANY_N echo calls of 64 B at once, calls/s | $(list "$tmp/tcp_many" %.0f) | $(list "$tmp/nbio_many" %.0f) | $(fmt "$many_ratio" '%.2f') |
| the same: parcels per write (coalescing) | $(list "$tmp/tcp_ppw" %.2f) | $(list "$tmp/nbio_ppw" %.2f) | |
| connections of locality 0: peers; socket descriptors (listener included) | $(list "$tmp/tcp_peers" %d); $(list "$tmp/tcp_sockets" %d) | $(list "$tmp/nbio_peers" %d); $(list "$tmp/nbio_sockets" %d) | |

Parcel sizes from 64 B to 64 MiB (\`-test sweep\`): a call carrying a
\`[]float64\` of that size to an action returning its length. Latency is the
time of one call waited for before the next; throughput is payload bytes per
second with $WINDOW calls in flight. From 2000 calls (small) down to 8
(64 MiB) per measurement; medians of $REPS repetitions.

| Size | tcp µs/call | nbio µs/call | nbio / tcp | tcp GB/s | nbio GB/s | nbio / tcp |
|---|---|---|---|---|---|---|
$(sweep_rows)

How the ports differ: tcp writes each parcel (or a batch of parcels
queued while the connection was busy) from the sender's goroutine, with
one write when the payloads come to 4 KiB or less (copied next to their
headers) and one writev otherwise; a reader goroutine per peer reads the
socket and waits in Go's network poller once the socket is drained. nbio has one
poller goroutine per locality that waits in epoll_wait and reads every
connection; its writes never block — what the socket does not take nbio
copies into a cache — so the nbio port holds senders back once nbio keeps
the window (4 MiB per peer) unsent, and copies parcels up to 16 KiB into a
per-peer buffer that the next writer sends in one write. Both open one
connection per pair of localities (asserted by \`TestPortOneConnectionPerPair\`
in \`parcel/\` for a job of 4).

The coalescing limit (\`TCPConfig.MaxBatch\`: the most parcels one write
gathers from a peer's queue; 64 by default, 1 writes each alone), on a
flood of 64-byte parcels from 16 goroutines at once over one connection
between two tcp ports in one process (each \`Send\` returns once its parcel
is written; medians of $REPS runs of 100,000 parcels):

    go test -run '^\$' -bench '^BenchmarkTCPCoalescing\$' -benchtime 100000x ./parcel/

| MaxBatch | parcels/s | parcels per write |
|---|---|---|
${coal_rows}
A sender that finds the connection free writes its parcel at once, so
parcels are gathered only while a write is under way — on loopback, where a
write of 64 bytes never blocks, for a minority of them (about 1.3 to 1.7
parcels per write once the limit allows more than one), and the limit moves
the rate little on this machine (compare the rows; runs differ by more than
10 %). Gathering pays where writes take longer than the senders' turns: on
a slow network, or with many senders on many cores (\`TestTCPBatchesSends\`
holds the connection busy while 64 senders queue, and the default limit then
sends their 64 parcels in one write, 4 in 16, 1 in 64).

Where nbio's time goes: its poller waits in epoll_wait, a blocking system
call during which the poller's thread keeps its P. With GOMAXPROCS=1 (what
\`tessera run -n 2\` gives each locality on 2 cores) a goroutine the poller
wakes cannot run until the Go scheduler's monitor takes that P back, which
can take milliseconds. The nbio port therefore yields (\`runtime.Gosched\`)
after delivering parcels, so the tasks they wake run at once; without it
the 64-byte round trip took about 200 µs on this machine. A sender waiting
for the window is woken by nbio's write callback, on the poller, and waits
for the P the same way; that, and the copy of every byte the socket does not
take at once into nbio's cache, is where the bandwidth goes.
EOF
