/*
 * One-process LAPACK (through LAPACKE, OpenBLAS's threads as
 * OPENBLAS_NUM_THREADS says) on the matrices examples/linalg generates, the
 * baselines of the linalg section. Prints Go benchmark lines:
 *
 *   lapack -op potrf -n 8192            BenchmarkDpotrf/n=8192 1 S s/op G GFLOP/s
 *   lapack -op getrf -n 8192            BenchmarkDgetrf/n=8192 ...
 *   lapack -op geqrf -m 4000000 -cols 64  BenchmarkDgeqrf/m=.../cols=64 ...
 *   lapack -op gesdd -m 200000 -cols 2000 -rank 20
 *                                       BenchmarkDgesdd/m=.../cols=... 1 S s/op
 *                                       and for I < rank the value
 *                                       BenchmarkSVDValue/m=.../cols=.../i=I 1 V sigma
 *
 * -repeat R times R factorisations (the matrix made again before each,
 * untimed) and prints the fastest. The elements are examples/linalg's,
 * for the same -seed (see uniform there).
 *
 *   cc -O2 -o lapack bench/lapack/lapack.c $(pkg-config --cflags --libs lapacke openblas)
 */
#include <lapacke.h>
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* uniform is a reproducible value in [-1, 1) for (seed, i, j): the same
 * bits as examples/linalg's. */
static double uniform(uint64_t seed, uint64_t i, uint64_t j) {
	uint64_t z = seed * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL + j * 0x94d049bb133111ebULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what, lapack_int info) {
	fprintf(stderr, "lapack: %s failed: info %d\n", what, (int)info);
	exit(1);
}

static double *alloc(size_t n, const char *what) {
	double *p = malloc(n * sizeof(double));
	if (p == NULL) {
		fprintf(stderr, "lapack: no memory for %s (%zu doubles)\n", what, n);
		exit(1);
	}
	return p;
}

/* svdTerms is how many rank-one terms examples/linalg sums for its SVD
 * matrix: 2^-60 is below a double's precision relative to the first. */
static int svdTerms(int cols) { return cols < 60 ? cols : 60; }

/* makeSVD fills a (column-major, m x c) with sum_t 2^-t u_t(i) v_t(j). */
static void makeSVD(double *a, int m, int c, uint64_t seed) {
	int terms = svdTerms(c);
	double *u = alloc((size_t)m * terms, "U"), *v = alloc((size_t)c * terms, "V");
	for (int t = 0; t < terms; t++) {
		for (int i = 0; i < m; i++)
			u[i + (size_t)t * m] = uniform(seed + 3 + t, i, 0);
		for (int j = 0; j < c; j++)
			v[j + (size_t)t * c] = ldexp(uniform(seed + 1000 + t, j, 0), -t);
	}
	cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, m, c, terms, 1.0, u, m, v, c, 0.0, a, m);
	free(u);
	free(v);
}

int main(int argc, char **argv) {
	const char *op = "potrf";
	int n = 1024, m = 20000, cols = 64, rank = 10, repeat = 1;
	uint64_t seed = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *f = argv[i], *v = argv[i + 1];
		if (!strcmp(f, "-op")) op = v;
		else if (!strcmp(f, "-n")) n = atoi(v);
		else if (!strcmp(f, "-m")) m = atoi(v);
		else if (!strcmp(f, "-cols")) cols = atoi(v);
		else if (!strcmp(f, "-rank")) rank = atoi(v);
		else if (!strcmp(f, "-repeat")) repeat = atoi(v);
		else if (!strcmp(f, "-seed")) seed = strtoull(v, NULL, 10);
		else {
			fprintf(stderr, "lapack: unknown flag %s (want -op -n -m -cols -rank -repeat -seed)\n", f);
			return 2;
		}
	}
	if (n < 1 || m < 1 || cols < 1 || m < cols || repeat < 1 || rank < 1 || rank > cols) {
		fprintf(stderr, "lapack: -n %d -m %d -cols %d -rank %d -repeat %d: want positive sizes, m >= cols >= rank\n", n, m, cols, rank, repeat);
		return 2;
	}
	int square = !strcmp(op, "potrf") || !strcmp(op, "getrf");
	size_t elems = square ? (size_t)n * n : (size_t)m * cols;
	double *a = alloc(elems, "the matrix");
	double best = INFINITY, flops = 0;
	double *s = NULL;
	for (int r = 0; r < repeat; r++) {
		double start = 0, took;
		lapack_int info = 0;
		if (!strcmp(op, "potrf")) {
			for (size_t j = 0; j < (size_t)n; j++)
				for (size_t i = 0; i < (size_t)n; i++)
					a[i + j * n] = i == j ? (double)n : uniform(seed, i < j ? i : j, i < j ? j : i);
			flops = pow(n, 3) / 3;
			start = now();
			info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, a, n);
		} else if (!strcmp(op, "getrf")) {
			/* Column-major storage of examples/linalg's row-major A: the
			 * factorisation of Aᵀ, the same work. */
			for (size_t i = 0; i < (size_t)n; i++)
				for (size_t j = 0; j < (size_t)n; j++)
					a[j + i * n] = uniform(seed + 1, i, j);
			lapack_int *piv = malloc(n * sizeof(lapack_int));
			flops = 2 * pow(n, 3) / 3;
			start = now();
			info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, a, n, piv);
			free(piv);
		} else if (!strcmp(op, "geqrf")) {
			for (size_t j = 0; j < (size_t)cols; j++)
				for (size_t i = 0; i < (size_t)m; i++)
					a[i + j * m] = uniform(seed + 2, i, j);
			double *tau = alloc(cols, "tau");
			flops = 2.0 * m * cols * cols - 2.0 * pow(cols, 3) / 3;
			start = now();
			info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, cols, a, m, tau);
			free(tau);
		} else if (!strcmp(op, "gesdd")) {
			makeSVD(a, m, cols, seed);
			free(s);
			s = alloc(cols, "the singular values");
			start = now();
			info = LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, cols, a, m, s, NULL, 1, NULL, 1);
		} else {
			fprintf(stderr, "lapack: -op %s: want potrf, getrf, geqrf or gesdd\n", op);
			return 2;
		}
		took = now() - start;
		if (info != 0) die(op, info);
		if (took < best) best = took;
	}
	if (square)
		printf("BenchmarkD%s/n=%d 1 %.6f s/op %.3f GFLOP/s\n", op, n, best, flops / best / 1e9);
	else if (flops > 0)
		printf("BenchmarkD%s/m=%d/cols=%d 1 %.6f s/op %.3f GFLOP/s\n", op, m, cols, best, flops / best / 1e9);
	else {
		printf("BenchmarkD%s/m=%d/cols=%d 1 %.6f s/op\n", op, m, cols, best);
		for (int i = 0; i < rank; i++)
			printf("BenchmarkSVDValue/m=%d/cols=%d/i=%d 1 %.17g sigma\n", m, cols, i, s[i]);
	}
	free(s);
	free(a);
	return 0;
}
