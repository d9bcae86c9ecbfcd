package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// count is the whole number in the environment variable name, or def.
func count(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// setting is the environment variable name, or def when it is empty.
func setting(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// words is the words of the environment variable name, or def's.
func words(name, def string) []string {
	if v := strings.Fields(os.Getenv(name)); len(v) > 0 {
		return v
	}
	return strings.Fields(def)
}

func str(n int) string { return strconv.Itoa(n) }

// alternate returns jobs, reversed in even repetitions.
func alternate(rep int, jobs []job) []job {
	if rep%2 == 0 {
		slices.Reverse(jobs)
	}
	return jobs
}

// have says whether the bin directory holds the program name.
func have(bin, name string) bool {
	_, err := os.Stat(filepath.Join(bin, name))
	return err == nil
}

// run is a `tessera run -n N` job of a program in the bin directory.
func run(name string, n int, runFlags []string, prog string, args ...string) job {
	argv := append([]string{"@tessera", "run", "-n", str(n)}, runFlags...)
	return job{name: name, argv: append(append(argv, "@"+prog), args...), timeout: 10 * time.Minute}
}

// gotest is a `go test -bench` job.
func gotest(name, bench, benchtime string, reps int, pkg string) job {
	return job{name: name, argv: []string{"go", "test", "-run", "^$", "-bench", bench, "-benchtime", benchtime, "-count", str(reps), pkg}, timeout: 30 * time.Minute}
}

// cpus are the first two CPUs this process may run on.
func cpus() []string {
	out, err := exec.Command("taskset", "-pc", str(os.Getpid())).Output()
	if err != nil {
		return nil
	}
	_, list, _ := strings.Cut(strings.TrimSpace(string(out)), ": ")
	var ids []string
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, _ := strconv.Atoi(lo)
		b := a
		if isRange {
			b, _ = strconv.Atoi(hi)
		}
		for i := a; i <= b && len(ids) < 2; i++ {
			ids = append(ids, str(i))
		}
	}
	return ids
}

// builds are the variants of prog that bin holds: "pure" (prog) and
// "openblas" (prog-openblas).
func builds(bin, prog string) []string {
	b := []string{"pure"}
	if have(bin, prog+"-openblas") {
		b = append(b, "openblas")
	}
	return b
}

func variant(prog, build string) string {
	if build == "pure" {
		return prog
	}
	return prog + "-" + build
}

// python is Debian's python3, where python3-numpy and python3-dask install.
const python = "/usr/bin/python3"

func pyHas(module string) bool { return exec.Command(python, "-c", "import "+module).Run() == nil }

func plans(bin string) []plan {
	reps := count("REPS", 3)
	return []plan{spine(bin, reps), parcelports(reps), node(bin, reps), scaling(reps), cannon(bin, reps), retile(reps), als(bin, reps), alsSoak(reps), conv1d(bin, reps), zarrIO(bin, reps), kmeans(reps), linalg(bin), tracing(reps), spans(reps), alsLarge(bin, reps)}
}

func spine(bin string, reps int) plan {
	lreps := count("LREPS", max(reps, 7))
	rttN, rttWarm := str(count("RTT_N", 20000)), str(count("RTT_WARM", 2000))
	rttFlags := []string{"-rtt-n", rttN, "-rtt-warmup", rttWarm, "-rtt-size", "64"}
	bwFlags := []string{"-bw-n", str(count("BW_N", 128)), "-bw-warmup", str(count("BW_WARM", 16)), "-bw-elems", "1048576", "-window", "4"}
	pp := func(test string, extra ...string) []string {
		return append(append(append([]string{"-mode", "tessera", "-test", test}, rttFlags...), bwFlags...), extra...)
	}
	// The spine measures the tcp parcelport against raw TCP and Open MPI
	// over TCP, so its jobs force tcp, which the default shm port would
	// replace between localities of this machine.
	tcp := func(runFlags ...string) []string { return append([]string{"--parcelport", "tcp"}, runFlags...) }
	tessera := func(name string, runFlags []string, args []string) job {
		return run(name, 2, tcp(runFlags...), "pingpong", args...)
	}
	raw := func(name string, args ...string) job {
		return job{name: name, argv: append([]string{"@pingpong", "-mode", "raw"}, args...), timeout: 2 * time.Minute}
	}
	mpi := func(name, prog string, np int, args ...string) job {
		return job{name: name, group: "mpi", timeout: 2 * time.Minute, argv: append([]string{"mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp", "-np", str(np), "@mpi_" + prog}, args...)}
	}
	haveMPI := have(bin, "mpi_pingpong") && have(bin, "mpi_stream") && have(bin, "mpi_allreduce")
	if !haveMPI {
		say("spine: no Open MPI programs in %s: the Open MPI rows will be missing", bin)
	}
	ids := cpus()
	rttJobs := func(rep int) []job {
		jobs := []job{
			raw("raw", append(append([]string{"-test", "rtt,rtt-timer,rtt-work,bw"}, rttFlags...), bwFlags[:6]...)...),
			tessera("tessera", nil, pp("rtt,rtt-direct,bw")),
			tessera("paired", nil, append([]string{"-mode", "tessera", "-test", "rtt-paired,rtt-paired-direct", "-pair-burst", str(count("PAIR_BURST", 1000))}, rttFlags...)),
			raw("late", "-test", "rtt", "-rtt-n", rttN, "-rtt-warmup", str(count("LATE_WARM", 60000)), "-rtt-size", "64"),
		}
		h := raw("handoff", append([]string{"-test", "rtt-handoff"}, rttFlags...)...)
		h.env = []string{"GOMAXPROCS=1"}
		jobs = append(jobs, h)
		if len(ids) >= 1 {
			one := tessera("onecpu", nil, append([]string{"-mode", "tessera", "-test", "rtt,rtt-direct"}, rttFlags...))
			one.argv = append([]string{"taskset", "-c", ids[0]}, one.argv...)
			oneRaw := raw("onecpu-raw", append([]string{"-test", "rtt"}, rttFlags...)...)
			oneRaw.argv = append([]string{"taskset", "-c", ids[0]}, oneRaw.argv...)
			jobs = append(jobs, one, oneRaw)
		}
		if len(ids) == 2 {
			apart := tessera("apart", []string{"--bind", "core"}, append([]string{"-mode", "tessera", "-test", "rtt,rtt-direct"}, rttFlags...))
			apart.argv = append([]string{"taskset", "-c", ids[0] + "," + ids[1]}, apart.argv...)
			apartRaw := raw("apart-raw", append([]string{"-test", "rtt", "-peer-cpu", ids[1]}, rttFlags...)...)
			apartRaw.argv = append([]string{"taskset", "-c", ids[0]}, apartRaw.argv...)
			jobs = append(jobs, apart, apartRaw)
		}
		if haveMPI {
			jobs = append(jobs, mpi("mpi-pingpong", "pingpong", 2, rttN, rttWarm, "64"))
		}
		jobs = append(jobs, tessera("poll", []string{"--progress", "poll"}, pp("rtt,rtt-direct,bw")))
		if haveMPI {
			jobs = append(jobs, mpi("mpi-stream", "stream", 2, bwFlags[1], bwFlags[3], "1048576", "4"))
		}
		jobs = append(jobs,
			run("nbio", 2, []string{"--parcelport", "nbio"}, "pingpong", append([]string{"-mode", "tessera", "-test", "bw"}, bwFlags...)...),
			tessera("reno", []string{"--tcp-congestion", "reno"}, append([]string{"-mode", "tessera", "-test", "bw"}, bwFlags...)))
		return alternate(rep, jobs)
	}
	collFlags := []string{"-n", str(count("COLL_N", 2000)), "-warmup", str(count("COLL_WARM", 500)), "-big-n", str(count("COLL_BIG_N", 100)), "-big-warmup", str(count("COLL_BIG_WARM", 10))}
	collJobs := func(rep int) []job {
		var jobs []job
		if haveMPI {
			jobs = append(jobs, mpi("mpi-coll", "allreduce", 4, collFlags[1], collFlags[3], collFlags[5], collFlags[7]))
		}
		jobs = append(jobs,
			run("rawcoll", 4, nil, "rawcoll", append([]string{"-port", "{freeport}"}, collFlags...)...),
			run("coll", 4, tcp(), "collbench", collFlags...),
			run("coll-bound", 4, tcp("--bind", "core"), "collbench", append([]string{"-test", "allreduce1"}, collFlags...)...),
			run("coll-poll", 4, tcp("--progress", "poll"), "collbench", collFlags...))
		return alternate(rep, jobs)
	}
	once := func(int) []job {
		return []job{
			gotest("tasks", "^BenchmarkTasks$", setting("BENCHTIME", "2x"), reps, "./bench/"),
			gotest("agas", "^BenchmarkAGAS", "5x", reps, "./bench/"),
			{name: "resolve", argv: []string{"go", "test", "-run", "^$", "-bench", "^BenchmarkResolveCached$", "-count", str(reps), "./agas/"}, timeout: 10 * time.Minute},
		}
	}
	return plan{name: "spine", phases: []phase{{lreps, rttJobs}, {1, once}, {lreps, collJobs}}}
}

func parcelports(reps int) plan {
	flags := []string{"-mode", "tessera", "-test", "rtt,bw,sweep,many,conns", "-rtt-n", "10000", "-rtt-warmup", "1000", "-rtt-size", "64",
		"-bw-n", "64", "-bw-warmup", "8", "-bw-elems", "1048576", "-window", "4",
		"-sweep-sizes", "64,4096,262144,4194304,67108864", "-many-senders", "32", "-many-n", "500"}
	ports := func(rep int) []job {
		return alternate(rep, []job{run("tcp", 2, []string{"--parcelport", "tcp"}, "pingpong", flags...), run("nbio", 2, []string{"--parcelport", "nbio"}, "pingpong", flags...)})
	}
	coal := func(int) []job {
		return []job{gotest("coalescing", "^BenchmarkTCPCoalescing$", "100000x", reps, "./parcel/")}
	}
	return plan{name: "parcelports", phases: []phase{{reps, ports}, {1, coal}}}
}

func scaling(reps int) plan {
	jobs := func(int) []job {
		var jobs []job
		for _, n := range words("SCALE_SIZES", "2 3 4 6 8") {
			k, _ := strconv.Atoi(n)
			jobs = append(jobs,
				run("lat-"+n, k, nil, "latbench", "-n", "3000", "-warmup", "300"),
				run("coll-"+n, k, nil, "collbench", "-test", "allreduce1,allreduce1mib", "-n", "1000", "-warmup", "200", "-big-n", "40", "-big-warmup", "5"))
		}
		return jobs
	}
	return plan{name: "scaling", phases: []phase{{reps, jobs}}}
}

// cannonLines turns the RESULT line of examples/cannon into a benchmark line.
func cannonLines(out string) []string {
	re := regexp.MustCompile(`^RESULT name=cannon n=(\d+) .*seconds=([0-9.]+) gflops=([0-9.]+)`)
	var lines []string
	for _, l := range locality0(out) {
		if m := re.FindStringSubmatch(l); m != nil {
			lines = append(lines, fmt.Sprintf("BenchmarkCannon/n=%s 1 %s s/op %s GFLOP/s", m[1], m[2], m[3]))
		}
	}
	return lines
}

func cannon(bin string, reps int) plan {
	sizes, warm := words("CANNON_SIZES", "2048 4096"), str(count("CANNON_WARM", 3))
	threads := str(goruntime.NumCPU()) // the baseline's OpenBLAS threads besides 1
	tess := func(name, build, p string, n string) job {
		localities, _ := strconv.Atoi(p)
		j := run(name, localities, nil, variant("cannon", build), "-n", n, "--repeat", warm)
		j.parse, j.timeout = cannonLines, 15*time.Minute
		return j
	}
	dgemm := func(name, build, n, t string) job {
		return job{name: name, argv: []string{"@" + variant("dgemm", build), "-n", n, "-repeat", warm}, env: []string{"OPENBLAS_NUM_THREADS=" + t}, timeout: 15 * time.Minute}
	}
	eff := func(int) []job {
		var jobs []job
		for _, b := range builds(bin, "cannon") {
			for _, n := range sizes {
				if b == "pure" {
					jobs = append(jobs, dgemm("dgemm-pure", b, n, threads))
				} else {
					jobs = append(jobs, dgemm("dgemm1-openblas", b, n, "1"), dgemm("dgemmN-openblas", b, n, threads))
				}
				for _, p := range []string{"4", "2", "1"} {
					jobs = append(jobs, tess("cannon-"+b+"-"+p, b, p, n))
				}
			}
		}
		return jobs
	}
	vsDask := func(suffix string, sizes []string) func(int) []job {
		return func(rep int) []job {
			var jobs []job
			for _, n := range sizes {
				nocomm := dgemm("nocomm"+suffix, "openblas", n, "1")
				nocomm.argv = append(nocomm.argv, "-grid", "2")
				dask := job{name: "dask" + suffix, argv: []string{python, "bench/cannon_dask.py", "-n", n, "--repeat", warm}, env: []string{"OPENBLAS_NUM_THREADS=1"}, timeout: 15 * time.Minute}
				jobs = append(jobs, alternate(rep, []job{tess("cannon-dask"+suffix, "openblas", "4", n), nocomm, tess("cannon-dask-pure"+suffix, "pure", "4", n), dask})...)
			}
			return jobs
		}
	}
	phases := []phase{{reps, eff}}
	if have(bin, "cannon-openblas") && pyHas("dask.array") {
		phases = append(phases, phase{reps, vsDask("", sizes)})
		if os.Getenv("OPENBLAS_CORETYPE") != "" {
			own := vsDask("-own", words("CANNON_OWN_SIZES", "4096"))
			phases = append(phases, phase{reps, func(rep int) []job {
				jobs := own(rep)
				for i := range jobs {
					jobs[i].argv = append([]string{"env", "-u", "OPENBLAS_CORETYPE"}, jobs[i].argv...)
				}
				return jobs
			}})
		}
	} else {
		say("cannon: no openblas build or no Dask for %s: the Dask rows will be missing", python)
	}
	return plan{name: "cannon", phases: phases}
}

func retile(reps int) plan {
	n := str(count("RETILE_N", 4096))
	jobs := func(int) []job {
		return []job{
			run("bw", 2, nil, "pingpong", "-mode", "tessera", "-test", "bw", "-bw-n", "32", "-bw-warmup", "4"),
			run("retile", 4, nil, "retile", "-n", n, "-reps", str(count("RETILE_REPS", 5))),
		}
	}
	return plan{name: "retile", phases: []phase{{reps, jobs}}}
}

// alsLines turns the output of examples/als into a benchmark line: the
// time of the iterations and the last loss.
func alsLines(out string) []string {
	iters := regexp.MustCompile(`^als: (\d+) iterations in ([0-9.]+) s`)
	loss := regexp.MustCompile(`^iteration .*, loss (\S+)`)
	last := ""
	for _, l := range locality0(out) {
		if m := loss.FindStringSubmatch(l); m != nil {
			last = m[1]
		}
		if m := iters.FindStringSubmatch(l); m != nil && last != "" {
			return []string{fmt.Sprintf("BenchmarkALS/tessera %s %s s/op %s loss", m[1], m[2], last)}
		}
	}
	return nil
}

// openblasChoice are the variables that choose OpenBLAS's kernels: the
// sections against NumPy unset them, so that NumPy, the baseline, and the
// openblas build run the kernels OpenBLAS picks for this CPU (an older
// kernel chosen for it slows NumPy down).
func openblasChoice() []string { return []string{"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"} }

func als(bin string, reps int) plan {
	size, iters := setting("ALS_SIZE", "4800,4800,0.01"), str(count("ALS_ITER", 5))
	args := []string{"--ratings", "{tmp}/ratings.csv", "--factors", "40", "--iterations", iters, "--regularization", "0.1", "--alpha", "40", "--seed", "1"}
	tess := func(name, build string, n int, runFlags ...string) job {
		// The exact solver: NumPy solves each row exactly too, and the
		// losses must agree (the program's default, CG, approximates).
		j := run(name, n, runFlags, variant("als", build), append(slices.Clone(args), "--solver", "exact")...)
		j.parse = alsLines
		return j
	}
	setup := func(int) []job {
		return []job{{name: "ratings", argv: []string{"@als", "--synthetic", size, "--make-ratings", "{tmp}/ratings.csv"}, parse: func(string) []string { return nil }}}
	}
	numpy := pyHas("numpy")
	pairs := count("TRACE_PAIRS", 3)
	jobs := func(rep int) []job {
		var jobs []job
		if numpy {
			for _, t := range []string{"1", "2"} {
				jobs = append(jobs, job{name: "numpy" + t, argv: append([]string{python, "bench/als_numpy.py", "{tmp}/ratings.csv"}, args[2:]...), env: []string{"OPENBLAS_NUM_THREADS=" + t, "OMP_NUM_THREADS=" + t}, timeout: 15 * time.Minute})
			}
		}
		for _, b := range builds(bin, "als") {
			for _, n := range []int{1, 2, 4} {
				jobs = append(jobs, tess(fmt.Sprintf("als-%s-%d", b, n), b, n))
			}
		}
		for k := 0; k < pairs; k++ {
			pair := []job{tess("als-traced", "pure", 2, "--trace", "{tmp}/trace-"+str(rep)+"-"+str(k), "--trace-format", "otf2"), tess("als-untraced", "pure", 2)}
			if (rep+k)%2 == 0 {
				slices.Reverse(pair)
			}
			jobs = append(jobs, pair...)
		}
		return jobs
	}
	return plan{name: "als", phases: []phase{{1, setup}, {reps, jobs}}, unset: openblasChoice(), check: agree("loss", 1e-6)}
}

func conv1d(bin string, reps int) plan {
	n, warm := str(count("CONV_N", 10)), str(count("CONV_WARMUP", 2))
	numpy := pyHas("numpy")
	jobs := func(int) []job {
		var jobs []job
		if numpy {
			for _, t := range []string{"1", "2"} {
				jobs = append(jobs, job{name: "numpy" + t, argv: []string{python, "bench/conv1d_numpy.py", "--pages", "2000", "--steps", "80", "--in", "3", "--kernel", "10", "--filters", "100", "-n", n, "--warmup", warm},
					env: []string{"OPENBLAS_NUM_THREADS=" + t, "OMP_NUM_THREADS=" + t}, timeout: 10 * time.Minute})
			}
		}
		for _, b := range builds(bin, "conv1d") {
			for _, k := range []int{1, 2} {
				jobs = append(jobs, run(fmt.Sprintf("conv1d-%s-%d", b, k), k, nil, variant("conv1d", b),
					"-pages", "2000", "-steps", "80", "-in", "3", "-kernel", "10", "-filters", "100", "-padding", "valid", "-n", n, "-warmup", warm))
			}
		}
		return jobs
	}
	return plan{name: "conv1d", phases: []phase{{reps, jobs}}, unset: openblasChoice(), check: agree("checksum", 1e-9)}
}

func tracing(reps int) plan {
	benchtime := setting("TRACE_BENCHTIME", "4x")
	once := func(int) []job {
		return []job{gotest("tracer-event", "^BenchmarkTracerEvent$", "2000000x", reps, "./bench/"), gotest("tracing-tasks", "^BenchmarkTracingTasks$", benchtime, reps, "./bench/")}
	}
	jobs := func(rep int) []job {
		on := run("tracejob-on", 2, []string{"--trace", "{tmp}/trace-" + str(rep)}, "tracejob", "run", "200", "6")
		off := run("tracejob-off", 2, nil, "tracejob", "run", "200", "6")
		on.timed, off.timed = "Tracejob", "Tracejob"
		return alternate(rep, []job{on, off})
	}
	return plan{name: "tracing", phases: []phase{{1, once}, {count("JOB_REPS", 3*reps), jobs}}}
}

func spans(reps int) plan {
	benchtime := setting("SPANS_BENCHTIME", "2x")
	return plan{name: "spans", phases: []phase{{1, func(int) []job {
		return []job{gotest("spans", "^BenchmarkSpansRoundTrip$", benchtime, reps, "./bench/")}
	}}}}
}
