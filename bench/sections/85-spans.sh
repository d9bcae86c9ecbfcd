#!/usr/bin/env bash
# Section of `make bench`: what OpenTelemetry spans cost on the action round
# trip — BenchmarkSpansRoundTrip (bench/spans_test.go): the same 64-byte
# call between two localities over loopback TCP in one process, without a
# span hook, with the hook over the no-op global provider, and with the hook
# over an SDK provider sampling every span. Run by bench/run.sh (see there
# for the protocol); uses bench/lib.sh. SPANS_BENCHTIME (2x) sets the
# rounds (5,000 calls of each kind per round).
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

SPANS_BENCHTIME=${SPANS_BENCHTIME:-2x}
SP=(go test -run '^$' -bench '^BenchmarkSpansRoundTrip$' -benchtime "$SPANS_BENCHTIME" -count "$REPS" ./bench/)
SP_SHOWN="go test -run '^\$' -bench '^BenchmarkSpansRoundTrip\$' -benchtime $SPANS_BENCHTIME -count $REPS ./bench/"

say "spans benchmark: $SP_SHOWN"
"${SP[@]}" | tee "$tmp/sp" >&2

# metric UNIT: that metric of every repetition.
metric() { awk -v u="$1" '$1 ~ /^BenchmarkSpansRoundTrip(-[0-9]+)?$/ { for (i=2; i<=NF; i++) if ($i==u) print $(i-1) }' "$tmp/sp"; }
declare -A wall cpu allocs
for k in off noop on; do
	wall[$k]=$(metric "$k-ns/call" | median)
	cpu[$k]=$(metric "$k-cpu-ns/call" | median)
	allocs[$k]=$(metric "$k-allocs/call" | median)
done
r_noop=$(metric noop/off | median)
r_on=$(metric on/off | median)
c_noop=$(metric cpu-noop/off | median)
c_on=$(metric cpu-on/off | median)

cat >>"$SUMMARY" <<EOF
| Action round trip with OpenTelemetry spans (SDK, every span sampled), 2 localities over TCP in one process (CPU time) | $(fmt "${cpu[on]}" '%.0f') ns/call | $(fmt "${cpu[off]}" '%.0f') ns/call (no span hook) | $(fmt "$c_on" '%.2f') | — | |
EOF

cat <<EOF
## Spans

What OpenTelemetry spans cost on an action call (\`runtime.Config.Spans\`,
\`trace.NewOTelSpans\`). \`BenchmarkSpansRoundTrip\` runs three jobs of two
localities each in one process, joined over loopback TCP: **off** has no
span hook; **noop** has \`trace.NewOTelSpans(nil)\` over the global
provider, a no-op (the hook is called, no span context travels); **on** has
an SDK \`TracerProvider\` that samples every span and hands it to a batch
processor whose exporter drops it. Each call then makes a client span on
the caller and a server span on the callee, and carries 26 bytes of trace
context in the parcel header. The calls of the three jobs alternate one by
one (5,000 of each per round, the order rotating every round). CPU time is
the process's (getrusage), which the other programs of this shared machine
do not inflate; allocations are those of both localities, per call.

    $SP_SHOWN

| | wall ns/call | CPU ns/call | allocations/call | wall ratio to off | CPU ratio to off |
|---|---|---|---|---|---|
| off | $(fmt "${wall[off]}" '%.0f') | $(fmt "${cpu[off]}" '%.0f') | $(fmt "${allocs[off]}" '%.0f') | 1 | 1 |
| noop | $(fmt "${wall[noop]}" '%.0f') | $(fmt "${cpu[noop]}" '%.0f') | $(fmt "${allocs[noop]}" '%.0f') | $(fmt "$r_noop" '%.3f') | $(fmt "$c_noop" '%.3f') |
| on | $(fmt "${wall[on]}" '%.0f') | $(fmt "${cpu[on]}" '%.0f') | $(fmt "${allocs[on]}" '%.0f') | $(fmt "$r_on" '%.3f') | $(fmt "$c_on" '%.3f') |

Without a hook the action path checks one nil interface per call on each
side and allocates nothing for spans; the header carries an empty
\`Trace\` (2 bytes).
EOF
say "spans: cpu on/off $c_on, noop/off $c_noop; allocs off ${allocs[off]} noop ${allocs[noop]} on ${allocs[on]}"
