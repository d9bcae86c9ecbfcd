// Command tessera starts and inspects Tessera jobs.
//
// A Tessera program is SPMD: the same binary runs as N processes, the
// localities, which find each other, prove they belong to the same job and
// then exchange parcels. The tessera command is the launcher that makes
// those N processes on one machine, in the way mpirun or hpxrun.py do for
// MPI and HPX; on a cluster the batch system starts them instead. Later
// this command will also hold the tools that read Tessera traces.
//
// Usage:
//
//	tessera run -n N [flags] [--] prog [args...]
//	tessera info
//	tessera help
//
// # run
//
// run starts N processes of prog with args, the localities 0 to N-1. prog is
// looked up in PATH when it has no slash. `tessera help` lists every flag
// of run; it is made from run's flag set. Each locality gets the launcher's
// environment plus
//
//	TESSERA_LOCALITY        its id, 0 to N-1
//	TESSERA_NUM_LOCALITIES  N
//	TESSERA_NODE_CPUS       the cores the launcher may use, which the N
//	                        localities share
//	TESSERA_SECRET          64 hex digits: 32 random bytes, the same for the
//	                        whole job, which the localities use to prove to
//	                        each other that they belong to it
//	TESSERA_JOB_ID          random hex that names the job
//	TESSERA_LISTEN_HOST     127.0.0.1, where the localities listen
//	TESSERA_ROOT_ADDR       host:port of locality 0, where the others
//	                        connect first
//	TESSERA_ROOT_FD         3, for locality 0 only
//	TESSERA_FAILURE_DIR     a directory of the launcher's, where a
//	                        locality that fails writes its report
//	TESSERA_VERBOSE         1, with --verbose
//	GOMAXPROCS              max(1, cores/N) unless the launcher's
//	                        environment sets it: the localities share the
//	                        machine's cores instead of each running a
//	                        thread per core
//
// Inherited TESSERA_* variables are replaced. The launcher opens the
// root listener itself, on 127.0.0.1 with a port the system picks, before
// any locality starts, and hands it to locality 0 as file descriptor 3
// (hence TESSERA_ROOT_FD), then closes its own copy. Locality 0 accepts on
// the inherited socket, so the address is known to every locality from the
// start and no other process can take the port in between.
//
// With --bind core each locality is bound to a block of the cores the
// launcher may use (as slurm's block distribution and --cpu-bind=cores
// do): N localities on C >= N cores get C/N consecutive cores each; with
// more localities than cores, consecutive localities share one. The
// launcher sets the affinity of the thread it forks the locality from, so
// the process — whatever its program — and all its threads inherit it.
// Binding pays where localities outnumber the cores and talk most with
// their neighbours (a 4-locality AllReduce on 2 cores: docs/benchmarks.md);
// with one locality per core a woken locality must wait for its own core,
// so the default leaves placement to the system.
//
// Every line a locality writes to stdout or stderr comes out on the
// launcher's stdout or stderr prefixed with "[L<id>] ". Lines of different
// localities never mix; a last line without a newline gets one when the
// locality exits, and a line longer than 1 MiB is cut into pieces of 1 MiB.
// The localities' stdin is empty. The launcher's own messages start with
// "[tessera] " and go to stderr.
//
// Each locality runs in a process group of its own, for which the launcher
// plays the terminal. It catches SIGINT, SIGTERM, SIGHUP and SIGQUIT and
// forwards them to the process group of every locality still running, so
// Ctrl-C reaches each locality exactly once and Ctrl-\ makes every Go
// locality print its goroutines, prefixed. Signals and kills go to the
// whole group, so they also reach the processes a locality started (the
// program of a wrapper script, say). When a locality exits, whatever it
// left running in its group is killed: such processes would otherwise
// hold its output open, and run waits until the output of every locality
// has been closed.
//
// # A failed job
//
// A job that fails is reported once. Each locality of a Tessera program
// (runtime.Main) that fails writes a report to TESSERA_FAILURE_DIR
// instead of printing it: whether the job failed there (status 1) or it
// stopped because another locality failed first (status 3), in which
// phase, and the cause. Once every locality has exited, run prints one
// line for the locality where the job failed first, its phase and the
// cause, and one line for the others:
//
//	[tessera] locality 1 failed in main: als on locality 1: ratings r.csv line 58704: column 2 (movieId): "abc" is not an integer
//	[tessera] 3 other localities stopped because locality 1 failed
//
// Localities that failed in the same way on their own (each reading a
// missing file, say) are counted in the second line; one that failed
// with another cause gets a line of its own. A locality that exited
// without a report (it crashed or was killed, or prog is not a Tessera
// program) is named with how it exited: the one the others' reports
// name, or else the first to exit non-zero. With --verbose every
// locality also prints its whole error and the runtime's log of it, and
// run notes every non-zero exit as it happens, as well as the summary.
//
// run exits 0 when every locality exits 0. Otherwise it exits with the
// status of the locality where the job failed first, a locality killed by
// signal s counting as 128+s. Once one locality has exited non-zero the
// others get --grace (10s by default) to notice the dead peer and exit by
// themselves; the launcher then kills those still running with SIGKILL,
// and says so. When the job cannot be run at all (bad flags, fewer than
// one locality, a program that cannot be found or started, a --trace
// directory that exists and is not empty) run says what was wrong in one
// line, starts nothing, and exits 2.
//
// # info
//
// info prints the version of Tessera, the module version and version
// control revision the command was built from, the build tags, among them
// whether the openblas tag was set, the Go version, GOOS/GOARCH and
// GOMAXPROCS.
package main
