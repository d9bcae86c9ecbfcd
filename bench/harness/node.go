package main

import (
	"os/exec"
	"slices"
	"strings"
	"time"
)

// node measures the localities of one machine talking through shared
// memory: Open MPI over its shared-memory transport (vader) against the
// shm parcelport and the tcp one, the UCX port (when bench/run.sh built
// it: pingpong-ucx) over UCX's tcp and shared-memory transports, and
// Cannon and ALS over shm and tcp. Each phase runs its jobs once a
// repetition, in reversed order every other repetition. The counts are
// the spine's variables (RTT_N, BW_N, COLL_N, ...), so that a short run
// shortens both.
func node(bin string, reps int) plan {
	haveMPI := have(bin, "mpi_pingpong") && have(bin, "mpi_stream") && have(bin, "mpi_allreduce") && mpiHasVader()
	if !haveMPI {
		say("node: no Open MPI programs in %s or no vader transport: the Open MPI rows will be missing", bin)
	}
	haveUCX := have(bin, "pingpong-ucx")
	if !haveUCX {
		say("node: no pingpong-ucx in %s (no UCX to build with -tags ucx): the UCX rows will be missing", bin)
	}
	return nodePlan(reps, haveMPI, haveUCX)
}

// nodePlan is the node section's plan, with the Open MPI jobs when
// haveMPI and the UCX jobs when haveUCX.
func nodePlan(reps int, haveMPI, haveUCX bool) plan {
	rttN, rttWarm := str(count("RTT_N", 20000)), str(count("RTT_WARM", 2000))
	bwN, bwWarm := str(count("BW_N", 128)), str(count("BW_WARM", 16))
	pp := []string{"-mode", "tessera", "-test", "rtt,rtt-direct,bw", "-rtt-n", rttN, "-rtt-warmup", rttWarm, "-rtt-size", "64",
		"-bw-n", bwN, "-bw-warmup", bwWarm, "-bw-elems", "1048576", "-window", "4"}
	port := func(name, parcelport string, poll bool, extra ...string) job {
		flags := append([]string{"--parcelport", parcelport}, extra...)
		if poll {
			flags = append(flags, "--progress", "poll")
		}
		return run(name, 2, flags, "pingpong", pp...)
	}
	ucx := func(name, tls string) job {
		j := run(name, 2, []string{"--parcelport", "ucx"}, "pingpong-ucx", pp...)
		j.env, j.group = []string{"UCX_TLS=" + tls}, "ucx"
		return j
	}
	p2p := func(rep int) []job {
		var jobs []job
		if haveMPI {
			jobs = append(jobs, vader("vader-pingpong", "pingpong", 2, rttN, rttWarm, "64"), vader("vader-stream", "stream", 2, bwN, bwWarm, "1048576", "4"))
		}
		jobs = append(jobs, port("tcp", "tcp", false), port("shm", "shm", false), port("tcp-poll", "tcp", true), port("shm-poll", "shm", true),
			port("shm-poll-bound", "shm", true, "--bind", "core")) // as mpirun binds 2 ranks
		if haveUCX {
			jobs = append(jobs, ucx("ucx-tcp", "tcp"), ucx("ucx-sm", "sm,self"))
		}
		return alternate(rep, jobs)
	}
	coll := []string{"-n", str(count("COLL_N", 2000)), "-warmup", str(count("COLL_WARM", 500)), "-big-n", str(count("COLL_BIG_N", 100)), "-big-warmup", str(count("COLL_BIG_WARM", 10))}
	colls := func(rep int) []job {
		var jobs []job
		if haveMPI {
			jobs = append(jobs, vader("vader-coll", "allreduce", 4, coll[1], coll[3], coll[5], coll[7]),
				vaderBound("vader-coll-bound", "allreduce", 4, coll[1], coll[3], coll[5], coll[7]))
		}
		for _, pp := range []string{"tcp", "shm"} {
			jobs = append(jobs,
				run("coll-"+pp, 4, []string{"--parcelport", pp}, "collbench", coll...),
				run("coll-"+pp+"-poll", 4, []string{"--parcelport", pp, "--progress", "poll"}, "collbench", coll...))
		}
		jobs = append(jobs, run("coll-shm-bound", 4, []string{"--parcelport", "shm", "--bind", "core"}, "collbench", coll...),
			run("coll-shm-bound-poll", 4, []string{"--parcelport", "shm", "--bind", "core", "--progress", "poll"}, "collbench", coll...))
		return alternate(rep, jobs)
	}
	size, iters := setting("ALS_SIZE", "4800,4800,0.01"), str(count("ALS_ITER", 5))
	alsArgs := []string{"--ratings", "{tmp}/ratings.csv", "--factors", "40", "--iterations", iters, "--regularization", "0.1", "--alpha", "40", "--seed", "1", "--solver", "exact"}
	setup := func(int) []job {
		return []job{{name: "ratings", argv: []string{"@als", "--synthetic", size, "--make-ratings", "{tmp}/ratings.csv"}, parse: func(string) []string { return nil }}}
	}
	cannonN, cannonWarm := setting("NODE_CANNON_N", "4096"), str(count("CANNON_WARM", 3))
	apps := func(rep int) []job {
		var jobs []job
		for _, pp := range []string{"tcp", "shm"} {
			c := run("cannon-"+pp, 4, []string{"--parcelport", pp}, "cannon", "-n", cannonN, "--repeat", cannonWarm)
			c.parse, c.timeout = cannonLines, 15*time.Minute
			a := run("als-"+pp, 2, []string{"--parcelport", pp}, "als", slices.Clone(alsArgs)...)
			a.parse, a.timeout = alsLines, 15*time.Minute
			jobs = append(jobs, c, a)
		}
		return alternate(rep, jobs)
	}
	return plan{name: "node", phases: []phase{{reps, p2p}, {reps, colls}, {1, setup}, {reps, apps}}, check: agree("loss", 1e-6)}
}

// vader is an Open MPI job on the shared-memory transport: the ob1
// messaging layer (so that the UCX layer Debian's Open MPI may prefer is
// not used) over the self and vader byte transports.
func vader(name, prog string, np int, args ...string) job {
	return job{name: name, group: "mpi", timeout: 2 * time.Minute,
		argv: append([]string{"mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "self,vader", "-np", str(np), "@mpi_" + prog}, args...)}
}

// vaderBound is vader with every rank bound to a core, two to a core where
// ranks outnumber cores (mpirun leaves oversubscribed ranks unbound by
// default).
func vaderBound(name, prog string, np int, args ...string) job {
	j := vader(name, prog, np, args...)
	j.argv = append([]string{j.argv[0], "--bind-to", "core:overload-allowed"}, j.argv[1:]...)
	return j
}

// mpiHasVader says whether Open MPI's ompi_info lists the vader transport.
func mpiHasVader() bool {
	out, err := exec.Command("ompi_info", "--parsable", "--param", "btl", "vader").Output()
	return err == nil && strings.Contains(string(out), "mca:btl:vader:")
}
