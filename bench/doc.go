// Package bench holds the benchmarks of the runtime spine and nothing a
// program would import.
//
//   - pingpong/ is one program with two halves measured in the same run:
//     -mode tessera, an SPMD Tessera program launched as 2 localities (two
//     processes over TCP), and -mode raw, the baseline of plain Go TCP
//     between two processes (it starts its peer as a child of itself). Each
//     measures the round trip of a 64-byte message (-test rtt) and the
//     throughput of 8 MiB blocks (-test bw), and prints one line per
//     measurement:
//
//     RESULT name=tessera_rtt us_per_rtt=... n=...
//     RESULT name=raw_bw gbps=... n=...
//
//   - tasks_test.go is a Go benchmark: 1,000,000 empty tasks spawned with
//     runtime.Spawn and awaited with WhenAll on a one-locality runtime,
//     against goroutines with a channel per result in the same process.
//
//   - run.sh builds the programs, launches the Tessera jobs itself (it sets
//     the TESSERA_* environment for both localities), runs the baselines and
//     the Go benchmark three times each, and writes docs/benchmarks.md with
//     the medians, the ratios and the targets. `make bench` runs it.
package bench
