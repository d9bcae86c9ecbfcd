// Package bench holds the benchmarks of the runtime and nothing a program
// would import: the Go benchmarks of this package (tasks, AGAS, tracing,
// spans), the benchmark programs in its directories, and the baselines
// they are measured against (plain Go, Open MPI and ScaLAPACK in mpi/,
// one-process LAPACK in lapack/, NumPy, scikit-learn and Dask in the
// Python scripts).
//
// Every program prints its results in Go's benchmark format
// (internal/benchline), for example
//
//	BenchmarkPingpong/tessera_rtt 20000 23.41 us/rtt
//
// `make bench` runs run.sh, which builds the programs and starts harness/:
// it runs each section's jobs (which, in which order, how many times),
// keeps their lines in results/NAME.txt under the configuration lines
// "job", "rep" and "cmd", and renders docs/benchmarks.md with report/, which
// holds the table of targets and computes the medians and the ratios of
// the same repetition.
package bench
