/*
 * ScaLAPACK's pdpotrf or pdgetrf on a P x Q BLACS grid (2 x 2 by default)
 * of examples/linalg's matrices, the baselines of the linalg section:
 *
 *   mpirun -np 4 scalapack_factor -op potrf -n 8192 -nb 128
 *
 * Rank 0 prints a Go benchmark line, the fastest of -repeat
 * factorisations (the matrix made again before each, untimed), timed
 * between barriers:
 *
 *   BenchmarkPdpotrf/n=8192/nb=128 1 S s/op G GFLOP/s
 *
 *   mpicc -O2 -o scalapack_factor bench/mpi/scalapack_factor.c -lscalapack-openmpi
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int context, int request, int *value);
void Cblacs_gridinit(int *context, const char *order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);
void Cblacs_exit(int notDone);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desca, int *info);
void pdgetrf_(const int *m, const int *n, double *a, const int *ia, const int *ja, const int *desca, int *ipiv, int *info);

/* uniform is examples/linalg's reproducible value in [-1, 1). */
static double uniform(uint64_t seed, uint64_t i, uint64_t j) {
	uint64_t z = seed * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL + j * 0x94d049bb133111ebULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

/* global is the global index of local index l of a block-cyclic dimension. */
static int global(int l, int nb, int me, int procs) { return ((l / nb) * procs + me) * nb + l % nb; }

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	const char *op = "potrf";
	int n = 1024, nb = 128, p = 2, q = 2, repeat = 1;
	uint64_t seed = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *f = argv[i], *v = argv[i + 1];
		if (!strcmp(f, "-op")) op = v;
		else if (!strcmp(f, "-n")) n = atoi(v);
		else if (!strcmp(f, "-nb")) nb = atoi(v);
		else if (!strcmp(f, "-p")) p = atoi(v);
		else if (!strcmp(f, "-q")) q = atoi(v);
		else if (!strcmp(f, "-repeat")) repeat = atoi(v);
		else if (!strcmp(f, "-seed")) seed = strtoull(v, NULL, 10);
		else {
			fprintf(stderr, "scalapack_factor: unknown flag %s (want -op -n -nb -p -q -repeat -seed)\n", f);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	int potrf = !strcmp(op, "potrf");
	if (!potrf && strcmp(op, "getrf")) {
		fprintf(stderr, "scalapack_factor: -op %s: want potrf or getrf\n", op);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int me, procs;
	Cblacs_pinfo(&me, &procs);
	if (procs != p * q || n < 1 || nb < 1 || repeat < 1) {
		fprintf(stderr, "scalapack_factor: rank %d: %d processes for a %d x %d grid, -n %d -nb %d -repeat %d: want p*q processes and positive sizes\n", me, procs, p, q, n, nb, repeat);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int ctxt, myrow, mycol, zero = 0, one = 1, info;
	Cblacs_get(-1, 0, &ctxt);
	Cblacs_gridinit(&ctxt, "Row", p, q);
	Cblacs_gridinfo(ctxt, &p, &q, &myrow, &mycol);
	int mloc = numroc_(&n, &nb, &myrow, &zero, &p), nloc = numroc_(&n, &nb, &mycol, &zero, &q);
	int lld = mloc > 1 ? mloc : 1, desc[9];
	descinit_(desc, &n, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
	if (info != 0) {
		fprintf(stderr, "scalapack_factor: rank %d: descinit: info %d\n", me, info);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	double *a = malloc((size_t)lld * (nloc > 0 ? nloc : 1) * sizeof(double));
	int *piv = malloc((size_t)(mloc + nb) * sizeof(int));
	double best = INFINITY;
	for (int r = 0; r < repeat; r++) {
		for (int lj = 0; lj < nloc; lj++) {
			size_t gj = global(lj, nb, mycol, q);
			for (int li = 0; li < mloc; li++) {
				size_t gi = global(li, nb, myrow, p);
				double v;
				if (potrf)
					v = gi == gj ? (double)n : uniform(seed, gi < gj ? gi : gj, gi < gj ? gj : gi);
				else
					v = uniform(seed + 1, gi, gj);
				a[li + (size_t)lj * lld] = v;
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
		double start = MPI_Wtime();
		if (potrf)
			pdpotrf_("L", &n, a, &one, &one, desc, &info);
		else
			pdgetrf_(&n, &n, a, &one, &one, desc, piv, &info);
		MPI_Barrier(MPI_COMM_WORLD);
		double took = MPI_Wtime() - start;
		if (info != 0) {
			fprintf(stderr, "scalapack_factor: rank %d: pd%s: info %d\n", me, op, info);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (took < best) best = took;
	}
	if (me == 0) {
		double flops = (potrf ? 1.0 : 2.0) * pow(n, 3) / 3;
		printf("BenchmarkPd%s/n=%d/nb=%d 1 %.6f s/op %.3f GFLOP/s\n", op, n, nb, best, flops / best / 1e9);
	}
	free(a);
	free(piv);
	Cblacs_gridexit(ctxt);
	MPI_Finalize();
	return 0;
}
