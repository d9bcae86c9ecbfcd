package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/bench/report"
)

// linalg is the dense linear algebra section: examples/linalg's Cholesky,
// LU, TSQR and truncated SVD on 4 localities against one-process LAPACK
// (bench/lapack), ScaLAPACK (bench/mpi/scalapack_factor.c) and Dask
// (bench/linalg_dask.py), each repetition running every job once in
// reversed order every other time; then the Cholesky of the scaling rows,
// traced, on 1, 2 and 4 localities, each followed by `tessera trace
// summary` of its archive. Sizes come from report.Linalg (LINALG_*
// variables), the repetitions from LINALG_REPS (1: a 16384 Cholesky takes
// minutes on 2 cores), the block size of Tessera's layout from LINALG_NB,
// its parcelport from LINALG_PARCELPORT (shm: the localities share one
// machine).
func linalg(bin string) plan {
	s := report.Linalg()
	reps := count("LINALG_REPS", 1)
	nb := setting("LINALG_NB", "256")
	prog := "linalg"
	if have(bin, "linalg-openblas") {
		prog = "linalg-openblas"
	} else {
		say("linalg: no openblas build of examples/linalg: the Tessera rows run gonum's BLAS")
	}
	port := setting("LINALG_PARCELPORT", "shm")
	long := 45 * time.Minute
	traced := func(name, localities string, runFlags []string, args ...string) job {
		k, _ := strconv.Atoi(localities)
		j := run(name, k, append([]string{"--parcelport", port}, runFlags...), prog, append([]string{"--nb", nb, "--check=false"}, args...)...)
		j.parse, j.timeout = linalgLines, long
		return j
	}
	tess := func(name, localities string, args ...string) job { return traced(name, localities, nil, args...) }
	lapackJob := func(name string, args ...string) job {
		return job{name: name, argv: append([]string{"@lapack"}, args...), env: []string{"OPENBLAS_NUM_THREADS=2"}, timeout: long}
	}
	haveLAPACK := have(bin, "lapack")
	if !haveLAPACK {
		say("linalg: no bench/lapack program in %s (it needs OpenBLAS and LAPACKE): the LAPACK rows will be missing", bin)
	}
	// lapack is the job, or none without the program.
	lapack := func(name string, args ...string) []job {
		if !haveLAPACK {
			return nil
		}
		return []job{lapackJob(name, args...)}
	}
	haveMPI := have(bin, "scalapack_factor")
	scalapack := func(op, n, block string) job {
		return job{name: "pd" + op + "-" + block, group: "scalapack", timeout: long, env: []string{"OPENBLAS_NUM_THREADS=1"}, parse: linalgLines,
			argv: []string{"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", "@scalapack_factor", "-op", op, "-n", n, "-nb", block}}
	}
	dask := pyHas("dask.array") && pyHas("scipy")
	daskJob := func(op string, args ...string) job {
		return job{name: "dask-" + op, argv: append([]string{python, "bench/linalg_dask.py", "--op", op, "--workers", "2"}, args...),
			env: []string{"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"}, parse: linalgLines, timeout: long}
	}
	if !haveMPI {
		say("linalg: no ScaLAPACK program in %s: the ScaLAPACK rows will be missing", bin)
	}
	if !dask {
		say("linalg: %s lacks Dask or SciPy: the Dask rows will be missing", python)
	}
	factor := func(op, lapackOp, n string) []job {
		js := append([]job{tess(op, s.Localities, "--ops", op, "-n", n)}, lapack("d"+lapackOp, "-op", lapackOp, "-n", n)...)
		if haveMPI {
			for _, b := range s.ScaLAPACKBlocks {
				js = append(js, scalapack(lapackOp, n, b))
			}
		}
		if dask {
			js = append(js, daskJob(op, "-n", n, "--chunk", s.DaskChunk))
		}
		return js
	}
	jobs := func(rep int) []job {
		var js []job
		for _, n := range s.Cholesky {
			js = append(js, alternate(rep, factor("cholesky", "potrf", n))...)
		}
		for _, n := range s.LU {
			js = append(js, alternate(rep, factor("lu", "getrf", n))...)
		}
		shape := []string{"-m", s.TSQRRows, "--cols", s.TSQRCols}
		q := append([]job{
			tess("tsqr", s.Localities, append([]string{"--ops", "tsqr"}, shape...)...),
			tess("tsqr-r", s.Localities, append([]string{"--ops", "tsqr", "--tsqr-q=false"}, shape...)...),
		}, lapack("dgeqrf", "-op", "geqrf", "-m", s.TSQRRows, "-cols", s.TSQRCols)...)
		if dask {
			q = append(q, daskJob("tsqr", "-m", s.TSQRRows, "--cols", s.TSQRCols, "--row-chunks", s.DaskSplit))
		}
		js = append(js, alternate(rep, q)...)
		svdArgs := []string{"-m", s.SVDRows, "--cols", s.SVDCols, "--rank", s.SVDRank, "--power", s.SVDPower, "--oversample", s.SVDOversample}
		// The SVD checks its values against LAPACK's (of the matrix's
		// factors), and the section's check against gesdd's.
		svd := tess("svd", s.Localities, append([]string{"--ops", "svd"}, svdArgs...)...)
		svd.argv = append(svd.argv, "--check=true")
		v := append([]job{svd}, lapack("dgesdd", "-op", "gesdd", "-m", s.SVDRows, "-cols", s.SVDCols, "-rank", s.SVDRank)...)
		if dask {
			v = append(v, daskJob("svd", append(svdArgs, "--row-chunks", s.DaskSplit)...))
		}
		return append(js, alternate(rep, v)...)
	}
	scale := func(rep int) []job {
		var js []job
		for _, k := range s.ScaleLocalities {
			dir := fmt.Sprintf("{tmp}/trace-%s-%d", k, rep)
			j := traced("scale-"+k, k, []string{"--trace", dir}, "--ops", "cholesky", "-n", s.ScaleN)
			sum := job{name: "idle-" + k, argv: []string{"@tessera", "trace", "summary", "-per-locality", dir}, timeout: 10 * time.Minute, parse: idleLines("localities=" + k)}
			js = append(js, j, sum)
		}
		return js
	}
	phases := []phase{{reps, jobs}, {reps, scale}}
	if !strings.Contains(" "+strings.Join(s.Cholesky, " ")+" ", " "+s.ScaleN+" ") {
		// The scaling rows' efficiency needs dpotrf of their order.
		phases = append(phases, phase{reps, func(int) []job { return lapack("dpotrf", "-op", "potrf", "-n", s.ScaleN) }})
	}
	return plan{name: "linalg", phases: phases, check: sameValues("sigma", 1e-8)}
}

// sameValues checks that the lines in unit of the same benchmark (the
// truncated SVD's singular values and gesdd's, by index) agree within
// rel of the first of them.
func sameValues(unit string, rel float64) func([]string) error {
	return func(lines []string) error {
		first := map[string]float64{}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) < 4 || f[3] != unit {
				continue
			}
			v, err := strconv.ParseFloat(f[2], 64)
			if err != nil {
				return fmt.Errorf("%s: %w", l, err)
			}
			w, ok := first[f[0]]
			if !ok {
				first[f[0]] = v
				continue
			}
			if math.Abs(v-w) > rel*math.Abs(w) {
				return fmt.Errorf("%s: %.17g against %.17g, more than %g apart relatively", f[0], v, w, rel)
			}
		}
		return nil
	}
}

// linalgSizes drops the block and chunk sizes from a benchmark name
// ("/nb=128", "/chunk=1024"): the rows name the problem, and the block
// size of a baseline is one of its settings.
var linalgSizes = regexp.MustCompile(`/(nb|chunk)=\d+`)

// linalgLines are the benchmark lines of examples/linalg, bench/lapack,
// ScaLAPACK or Dask (of locality 0 or rank 0) without their block sizes.
func linalgLines(out string) []string {
	var lines []string
	for _, l := range benchLines(out) {
		lines = append(lines, linalgSizes.ReplaceAllString(l, ""))
	}
	return lines
}

// idleLines turns `tessera trace summary -per-locality` into benchmark
// lines: per locality its idle time (lanes x wall time less busy time) and
// its available time, and their sums as CholeskyIdle/NAME.
func idleLines(name string) func(out string) []string {
	row := regexp.MustCompile(`^\s*(\d+|all)\s+(\d+)\s+(\S+)\s+(\S+)\s+([0-9.]+)%$`)
	return func(out string) []string {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			m := row.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			busy, err1 := time.ParseDuration(m[3])
			avail, err2 := time.ParseDuration(m[4])
			if err1 != nil || err2 != nil {
				continue
			}
			bench := "CholeskyIdle/" + name
			if m[1] != "all" {
				bench += "/locality=" + m[1]
			}
			lines = append(lines, fmt.Sprintf("Benchmark%s 1 %.4f idle-s %.4f avail-s %s util-pct", bench, (avail-busy).Seconds(), avail.Seconds(), m[5]))
			if m[1] == "all" {
				return lines // the table ends; the profile follows
			}
		}
		return nil
	}
}
