#!/usr/bin/env bash
# Section of `make bench`: the tracer's cost — one Enter/Leave pair on a
# lane (ns, CPU ns and bytes per event), task-heavy rounds with the tracer on
# against the same rounds without it in one process, and a real job of
# task trees across 2 processes traced (`tessera run --trace`) against
# untraced. Run by bench/run.sh (see there for the protocol); uses
# bench/lib.sh. TRACE_BENCHTIME (4x) sets the rounds of the Go benchmark,
# JOB_REPS (3 x REPS) the repetitions of the traced job.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"

TRACE_BENCHTIME=${TRACE_BENCHTIME:-4x}
EV=(go test -run '^$' -bench '^BenchmarkTracerEvent$' -benchtime 2000000x -count "$REPS" ./bench/)
EV_SHOWN="go test -run '^\$' -bench '^BenchmarkTracerEvent\$' -benchtime 2000000x -count $REPS ./bench/"
TK=(go test -run '^$' -bench '^BenchmarkTracingTasks$' -benchtime "$TRACE_BENCHTIME" -count "$REPS" ./bench/)
TK_SHOWN="go test -run '^\$' -bench '^BenchmarkTracingTasks\$' -benchtime $TRACE_BENCHTIME -count $REPS ./bench/"

say "tracer event benchmark: $EV_SHOWN"
"${EV[@]}" | tee "$tmp/ev" >&2
say "traced tasks benchmark: $TK_SHOWN"
"${TK[@]}" | tee "$tmp/tk" >&2

# metric FILE BENCH UNIT: that metric of every repetition of BENCH.
metric() { awk -v b="$2" -v u="$3" '$1 ~ "^"b"(-[0-9]+)?$" { for (i=2; i<=NF; i++) if ($i==u) print $(i-1) }' "$1"; }
ev_ns=$(metric "$tmp/ev" BenchmarkTracerEvent ns/event | median)
ev_cpu=$(metric "$tmp/ev" BenchmarkTracerEvent cpu-ns/event | median)
ev_bytes=$(metric "$tmp/ev" BenchmarkTracerEvent bytes/event | median)
ev_allocs=$(metric "$tmp/ev" BenchmarkTracerEvent allocs/op | median)

declare -A tw uw tc uc wr cr
for g in empty 1us 10us; do
	b="BenchmarkTracingTasks/$g"
	tw[$g]=$(metric "$tmp/tk" "$b" traced-ns/task | median)
	uw[$g]=$(metric "$tmp/tk" "$b" untraced-ns/task | median)
	tc[$g]=$(metric "$tmp/tk" "$b" traced-cpu-ns/task | median)
	uc[$g]=$(metric "$tmp/tk" "$b" untraced-cpu-ns/task | median)
	wr[$g]=$(metric "$tmp/tk" "$b" ratio | median)
	cr[$g]=$(metric "$tmp/tk" "$b" cpu-ratio | median)
done

cost_empty=$(awk -v a="${tc[empty]}" -v b="${uc[empty]}" 'BEGIN { print a - b }')
cost_10us=$(awk -v a="${tc[10us]}" -v b="${uc[10us]}" 'BEGIN { print a - b }')
grain5=$(awk -v c="$cost_empty" 'BEGIN { print c / 0.05 / 1000 }')

# A real job: tracejob (task trees across the localities) on 2 processes,
# traced and untraced, alternating; wall time of the whole run, merge
# included.
say "building tracejob"
go build -o "$tmp/tracejob" ./runtime/testdata/tracejob
JOB_ARGS=(run 200 6)
job_time() {
	local start end rc=0
	start=$(date +%s.%N)
	timeout 300 "$tessera" run -n 2 "$@" "$tmp/tracejob" "${JOB_ARGS[@]}" >"$tmp/job.out" 2>"$tmp/job.err" || rc=$?
	end=$(date +%s.%N)
	if [ "$rc" -ne 0 ]; then
		say "tracejob failed (exit $rc):"
		sed 's/^/  /' "$tmp/job.err" >&2
		return 1
	fi
	awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f\n", e - s }'
}
: >"$tmp/on"
: >"$tmp/off"
JOB_REPS=${JOB_REPS:-$((3 * REPS))} # short runs: more of them
for ((r = 1; r <= JOB_REPS; r++)); do
	say "tracejob repetition $r of $JOB_REPS"
	rm -rf "$tmp/trace"
	if ((r % 2)); then
		job_time --trace "$tmp/trace" >>"$tmp/on"
		job_time >>"$tmp/off"
	else
		job_time >>"$tmp/off"
		job_time --trace "$tmp/trace" >>"$tmp/on"
	fi
done
job_on=$(median <"$tmp/on")
job_off=$(median <"$tmp/off")
job_ratio=$(ratios "$tmp/on" "$tmp/off" | median)
job_tasks=$(awk '{ s += $NF } END { print s }' <(sed -n 's/^\[L[0-9]*\] locality [0-9]* ok //p' "$tmp/job.out"))
evt_bytes=$(du -sb "$tmp/trace" | awk '{ print $1 }')

cat >>"$SUMMARY" <<EOF
| Tracing on, tasks of ~10 µs, one locality (CPU time) | $(fmt "${tc[10us]}" '%.0f') ns/task | $(fmt "${uc[10us]}" '%.0f') ns/task (tracing off) | $(fmt "${cr[10us]}" '%.3f') | ≤ 1.05 | $(meets "${cr[10us]}" '<=' 1.05) |
| Tracing on, empty tasks, one locality (CPU time; worst case) | $(fmt "${tc[empty]}" '%.0f') ns/task | $(fmt "${uc[empty]}" '%.0f') ns/task (tracing off) | $(fmt "${cr[empty]}" '%.2f') | — | $(fmt "$cost_empty" '%.0f') ns a task |
| \`tessera run --trace\`, tracejob on 2 processes, the whole job with writing and merging the archive (wall time) | $(fmt "$job_on" '%.2f') s | $(fmt "$job_off" '%.2f') s (no --trace) | $(fmt "$job_ratio" '%.3f') | — (reported; the ≤ 1.05 target is the ALS row's) | task-heavy worst case |
EOF

cat <<EOF
## Tracing

What the tracer costs (package trace; \`TESSERA_TRACE\`, \`tessera run --trace\`).

**One event.** \`BenchmarkTracerEvent\`: a lane's Enter (with the UINT64
attributes GUID and Parent GUID) and Leave, as the runtime calls them for
a task that runs to its end, into a 1 MiB chunk buffer written to the
event file when full:

    $EV_SHOWN

| Per event | Median of $REPS |
|---|---|
| wall time | $(fmt "$ev_ns" '%.0f') ns |
| CPU time of the process | $(fmt "$ev_cpu" '%.0f') ns |
| bytes in the event file (Enter + attributes and Leave, with their timestamps, averaged) | $(fmt "$ev_bytes" '%.1f') |
| allocations per Enter/Leave pair | $ev_allocs |

**Task-heavy rounds, tracing on against off.** \`BenchmarkTracingTasks\`:
two one-locality runtimes in one process, one with \`Config.Trace.Dir\` set
(OTF2 to a temporary directory, the sampler at 100 ms) and one without;
each round spawns the tasks from a root task and waits for them with
WhenAll, and the runtimes alternate which goes first. Tasks of 0, ~1 and
~10 µs of arithmetic (200,000, 200,000 and 20,000 tasks a round). The CPU
time is the process's (getrusage), which the other programs of this shared
machine do not inflate; the wall time is shown too.

    $TK_SHOWN

| Task grain | Traced CPU ns/task | Untraced CPU ns/task | CPU ratio | Traced wall ns/task | Untraced wall ns/task | Wall ratio |
|---|---|---|---|---|---|---|
| empty | $(fmt "${tc[empty]}" '%.0f') | $(fmt "${uc[empty]}" '%.0f') | $(fmt "${cr[empty]}" '%.3f') | $(fmt "${tw[empty]}" '%.0f') | $(fmt "${uw[empty]}" '%.0f') | $(fmt "${wr[empty]}" '%.3f') |
| ~1 µs | $(fmt "${tc[1us]}" '%.0f') | $(fmt "${uc[1us]}" '%.0f') | $(fmt "${cr[1us]}" '%.3f') | $(fmt "${tw[1us]}" '%.0f') | $(fmt "${uw[1us]}" '%.0f') | $(fmt "${wr[1us]}" '%.3f') |
| ~10 µs | $(fmt "${tc[10us]}" '%.0f') | $(fmt "${uc[10us]}" '%.0f') | $(fmt "${cr[10us]}" '%.3f') | $(fmt "${tw[10us]}" '%.0f') | $(fmt "${uw[10us]}" '%.0f') | $(fmt "${wr[10us]}" '%.3f') |

A traced task costs two events (Enter and Leave; four when it yields and
resumes); a local task's name comes from a cache of function names. With
empty tasks the difference of the CPU columns is the tracer's cost per
task, $(fmt "$cost_empty" '%.0f') ns in this run: tracing stays within 5% for tasks of at
least $(fmt "$grain5" '%.1f') µs, and finer tasks pay more, in proportion. With longer
tasks the difference ($(fmt "$cost_10us" '%.0f') ns at ~10 µs here) also carries the noise of
this shared machine (preemption of the running task shows in CPU
profiles), so that row's ratio moves from run to run.

**A traced job.** \`runtime/testdata/tracejob ${JOB_ARGS[*]}\` on 2 processes
(trees of actions across the localities, each node spawning a local task
and waiting; $job_tasks tasks a run), started by \`tessera run -n 2\` with
and without \`--trace\`, alternating; wall time of the whole run including
locality 0's merge of the archive ($(fmt "$evt_bytes" '%.0f') bytes on disk):

| Repetition | --trace s | untraced s |
|---|---|---|
$(paste "$tmp/on" "$tmp/off" | awk '{ printf "| %d | %s | %s |\n", NR, $1, $2 }')

Median ratio traced/untraced: $(fmt "$job_ratio" '%.3f').
EOF
say "tracer: $ev_ns ns/event ($ev_cpu CPU ns), $ev_bytes bytes/event"
say "tasks 10us: cpu ratio ${cr[10us]}; empty: ${cr[empty]}; job ratio $job_ratio"
