package report

import (
	"fmt"
	"os"
	"strings"
)

// LinalgSizes are the sizes of the linalg section, which bench/harness
// runs and the report's rows name: the by default, or those of the
// environment (LINALG_CHOL_SIZES, LINALG_LU_SIZES, LINALG_TSQR as MxC,
// LINALG_SVD as MxC, LINALG_SVD_RANK, LINALG_SVD_POWER, LINALG_SCALE_N,
// LINALG_SCALE_P), read alike by both, so that a run at other sizes reports
// its own rows.
type LinalgSizes struct {
	Cholesky, LU         []string // orders n
	TSQRRows, TSQRCols   string
	SVDRows, SVDCols     string
	SVDRank, SVDPower    string
	ScaleN               string   // the Cholesky of the scaling rows
	ScaleLocalities      []string // its localities
	ScaLAPACKBlocks      []string // block sizes tried for ScaLAPACK (the best counts)
	Localities           string   // of the rows against the baselines
	SVDOversample        string
	DaskChunk, DaskSplit string // Dask's chunk side (cholesky, lu) and row chunks (tsqr, svd)
}

// Linalg reads the linalg section's sizes from the environment.
func Linalg() LinalgSizes {
	words := func(name, def string) []string {
		if v := strings.Fields(os.Getenv(name)); len(v) > 0 {
			return v
		}
		return strings.Fields(def)
	}
	one := func(name, def string) string { return words(name, def)[0] }
	shape := func(name, def string) (string, string) {
		m, c, ok := strings.Cut(one(name, def), "x")
		if !ok {
			m, c, _ = strings.Cut(def, "x")
		}
		return m, c
	}
	s := LinalgSizes{
		Cholesky: words("LINALG_CHOL_SIZES", "8192 16384"), LU: words("LINALG_LU_SIZES", "8192"),
		SVDRank: one("LINALG_SVD_RANK", "20"), SVDPower: one("LINALG_SVD_POWER", "2"), SVDOversample: "10",
		ScaleN: one("LINALG_SCALE_N", "16384"), ScaleLocalities: words("LINALG_SCALE_P", "1 2 4"),
		ScaLAPACKBlocks: words("LINALG_SCALAPACK_NB", "64 128 256"), Localities: "4",
		DaskChunk: one("LINALG_DASK_CHUNK", "1024"), DaskSplit: one("LINALG_DASK_SPLIT", "8"),
	}
	s.TSQRRows, s.TSQRCols = shape("LINALG_TSQR", "4000000x64")
	s.SVDRows, s.SVDCols = shape("LINALG_SVD", "200000x2000")
	return s
}

// scalapackJobs are the names of the ScaLAPACK jobs of op, one a block size.
func (s LinalgSizes) scalapackJobs(op string) []string {
	var jobs []string
	for _, nb := range s.ScaLAPACKBlocks {
		jobs = append(jobs, "pd"+op+"-"+nb)
	}
	return jobs
}

// linalg is the dense linear algebra section: primitives' Cholesky, LU,
// TSQR and truncated SVD on 4 localities against one-process LAPACK,
// ScaLAPACK and Dask, and the Cholesky's scaling with the idle time the
// trace shows.
func linalg() Section {
	s := Linalg()
	lt := Target{Op: "<", Bound: 1, Text: "< 1 (faster)"}
	p := s.Localities
	var rows []Row
	for _, n := range s.Cholesky {
		tess := One("cholesky", fmt.Sprintf("Cholesky/n=%s/localities=%s", n, p), "s/op")
		rows = append(rows,
			Row{ID: "cholesky-lapack-" + n, Name: fmt.Sprintf("Cholesky %s x %s, %s", n, n, localities(p)), Num: tess, Den: One("dpotrf", "Dpotrf/n="+n, "s/op"),
				DenText: "one-process LAPACKE `dpotrf`, OpenBLAS, 2 threads", Format: "%.2f s", Inverse: true, Target: Target{Op: ">=", Bound: 0.8, Text: "efficiency ≥ 0.8"}},
			Row{ID: "cholesky-scalapack-" + n, Name: fmt.Sprintf("Cholesky %s against ScaLAPACK", n), Num: tess, Den: Measure{Jobs: s.scalapackJobs("potrf"), Bench: "Pdpotrf/n=" + n, Unit: "s/op"},
				DenText: "`pdpotrf`, Open MPI, 2 x 2 grid, best block size of " + strings.Join(s.ScaLAPACKBlocks, "/"), Format: "%.2f s", Target: lt},
			Row{ID: "cholesky-dask-" + n, Name: fmt.Sprintf("Cholesky %s against Dask", n), Num: tess, Den: One("dask-cholesky", "Dask/cholesky/n="+n, "s/op"),
				DenText: "`da.linalg.cholesky`, threads, 2 workers", Format: "%.2f s", Target: lt})
	}
	for _, n := range s.LU {
		tess := One("lu", fmt.Sprintf("LU/n=%s/localities=%s", n, p), "s/op")
		rows = append(rows,
			Row{ID: "lu-lapack-" + n, Name: fmt.Sprintf("LU with partial pivoting %s x %s, %s", n, n, localities(p)), Num: tess, Den: One("dgetrf", "Dgetrf/n="+n, "s/op"),
				DenText: "one-process LAPACKE `dgetrf`, OpenBLAS, 2 threads", Format: "%.2f s", Inverse: true, Target: Target{Op: ">=", Bound: 0.7, Text: "efficiency ≥ 0.7"}},
			Row{ID: "lu-scalapack-" + n, Name: fmt.Sprintf("LU %s against ScaLAPACK", n), Num: tess, Den: Measure{Jobs: s.scalapackJobs("getrf"), Bench: "Pdgetrf/n=" + n, Unit: "s/op"},
				DenText: "`pdgetrf`, Open MPI, 2 x 2 grid, best block size of " + strings.Join(s.ScaLAPACKBlocks, "/"), Format: "%.2f s", Target: lt},
			Row{ID: "lu-dask-" + n, Name: fmt.Sprintf("LU %s against Dask", n), Num: tess, Den: One("dask-lu", "Dask/lu/n="+n, "s/op"),
				DenText: "`da.linalg.lu`, threads, 2 workers", Format: "%.2f s", Target: lt})
	}
	tsqr := fmt.Sprintf("m=%s/cols=%s", s.TSQRRows, s.TSQRCols)
	svd := fmt.Sprintf("m=%s/cols=%s", s.SVDRows, s.SVDCols)
	svdTess := func(unit string) Measure {
		return One("svd", fmt.Sprintf("TruncatedSVD/%s/rank=%s/localities=%s", svd, s.SVDRank, p), unit)
	}
	rows = append(rows,
		Row{ID: "tsqr-dask", Name: fmt.Sprintf("TSQR %s x %s with Q, %s", s.TSQRRows, s.TSQRCols, localities(p)), Num: One("tsqr", fmt.Sprintf("TSQR/%s/localities=%s", tsqr, p), "s/op"),
			Den: One("dask-tsqr", "Dask/tsqr/"+tsqr, "s/op"), DenText: "`da.linalg.tsqr` (Q and R), threads, 2 workers", Format: "%.2f s", Target: lt},
		Row{ID: "tsqr-lapack", Name: fmt.Sprintf("TSQR %s x %s, R only, %s", s.TSQRRows, s.TSQRCols, localities(p)), Num: One("tsqr-r", fmt.Sprintf("TSQR/%s/q=false/localities=%s", tsqr, p), "s/op"),
			Den: One("dgeqrf", "Dgeqrf/"+tsqr, "s/op"), DenText: "one-process LAPACKE `dgeqrf` of the whole matrix, 2 threads", Format: "%.2f s", Target: Target{Op: "<=", Bound: 1.2}},
		Row{ID: "svd-dask", Name: fmt.Sprintf("Truncated SVD, rank %s, %s power iterations, %s x %s, %s", s.SVDRank, s.SVDPower, s.SVDRows, s.SVDCols, localities(p)), Num: svdTess("s/op"),
			Den: One("dask-svd", fmt.Sprintf("Dask/svd/%s/rank=%s", svd, s.SVDRank), "s/op"), DenText: "`da.linalg.svd_compressed`, the same rank, oversampling and power iterations", Format: "%.2f s", Target: lt},
		Row{ID: "svd-accuracy", Name: "Its singular values: the largest relative difference from LAPACK's", Num: svdTess("max-rel-diff"), Format: "%.1e",
			Target: Target{Op: "<=", Bound: 1e-8, OfValue: true, Text: "≤ 1e-8"}},
		Row{ID: "svd-gesdd", Name: "Truncated SVD against the whole SVD", Num: svdTess("s/op"), Den: One("dgesdd", "Dgesdd/"+svd, "s/op"),
			DenText: "one-process LAPACKE `dgesdd`, values only, 2 threads", Format: "%.2f s", Detail: true})
	for _, k := range s.ScaleLocalities {
		scale := One("scale-"+k, fmt.Sprintf("Cholesky/n=%s/localities=%s", s.ScaleN, k), "s/op")
		idle := func(unit string) Measure { return One("idle-"+k, "CholeskyIdle/localities="+k, unit) }
		rows = append(rows,
			Row{ID: "scale-" + k, Name: fmt.Sprintf("Cholesky %s, %s, traced", s.ScaleN, localities(k)), Num: scale, Den: One("dpotrf", "Dpotrf/n="+s.ScaleN, "s/op"),
				DenText: "one-process `dpotrf`", Format: "%.2f s", Inverse: true, Detail: true},
			Row{ID: "idle-" + k, Name: fmt.Sprintf("Idle time of its localities (summed), %s", localities(k)), Num: idle("idle-s"), Den: idle("avail-s"),
				DenText: "wall time x lanes, summed", RatioFmt: "%.2f", Format: "%.1f s", Detail: true, Note: "the ratio is the share idle"})
	}
	return Section{Name: "linalg", Title: "Dense linear algebra against LAPACK, ScaLAPACK and Dask", Rows: rows,
		Text: "`examples/linalg` (openblas build, `tessera run -n 4 --parcelport shm linalg --ops OP --check=false`: the shared-memory parcelport (`LINALG_PARCELPORT`), 256-wide blocks (`LINALG_NB`); Cholesky on a 2 x 2 grid, LU and QR's panels on 1 x 4) against `bench/lapack` (LAPACKE through OpenBLAS, `OPENBLAS_NUM_THREADS=2`, one process), `bench/mpi/scalapack_factor.c` (`mpirun -np 4`, Open MPI's default transports, 2 x 2 BLACS grid, the best of the block sizes) and `bench/linalg_dask.py` (threaded scheduler, 2 workers, OpenBLAS single-threaded in each), the same matrices for Tessera and LAPACK (the same generator), timing the factorisation alone; Cholesky and LU factor the matrix in its own memory (`primitives.Donate`), as `dpotrf` and `pdpotrf` do. Efficiency is the baseline's time over Tessera's. The truncated SVD's values must agree with `dgesdd`'s of the same matrix to 1e-8 relative (the section fails otherwise); the accuracy row is the example's own check, against LAPACK's SVD of the matrix from its generating factors. The scaling rows run with `tessera run --trace` and read each locality's busy time from `tessera trace summary -per-locality`: idle is wall time x lanes less busy time, over the whole job (generation and layout included). Sizes: the LINALG_* variables (`bench/report/linalg.go`)."}
}
