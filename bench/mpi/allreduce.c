/*
 * allreduce.c: the Open MPI baseline for bench/collbench. Run with
 *
 *   mpicc -O2 -o allreduce bench/mpi/allreduce.c
 *   mpirun --allow-run-as-root --oversubscribe -np 4 --mca btl self,tcp ./allreduce
 *
 * Every rank runs each measurement: MPI_Barrier, warm-up operations,
 * MPI_Barrier, then N timed operations; rank 0 prints
 *
 *   BenchmarkColl/mpi_allreduce1 N US us/op GBPS GB/s
 *
 * with microseconds per operation and gbps = bytes per rank / time per
 * operation (10^9 bytes per second), like collbench.
 *
 *   mpi_allreduce1      MPI_Allreduce (MPI_SUM) of one double
 *   mpi_allreduce1mib   MPI_Allreduce (MPI_SUM) of 1 MiB (131072 doubles)
 *   mpi_allgather1mib   MPI_Allgather of 1 MiB per rank
 *
 * Arguments (optional): N WARMUP BIG_N BIG_WARMUP, default 2000 500 100 10.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { MIB = (1 << 20) / 8 };

static int rank, size;

static void report(const char *name, size_t elems, int n, double seconds)
{
	double per = seconds / n;
	if (rank == 0)
		printf("BenchmarkColl/%s %d %.3f us/op %.6f GB/s\n", name, n, per * 1e6,
		       (double)(elems * sizeof(double)) / per / 1e9);
	fflush(stdout);
}

static void allreduce(const char *name, size_t elems, int warm, int n)
{
	double *in = malloc(elems * sizeof(double)), *out = malloc(elems * sizeof(double));
	for (size_t i = 0; i < elems; i++)
		in[i] = (double)(i % 7 + rank);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < warm; i++)
		MPI_Allreduce(in, out, (int)elems, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime();
	for (int i = 0; i < n; i++)
		MPI_Allreduce(in, out, (int)elems, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	report(name, elems, n, MPI_Wtime() - start);
	free(in);
	free(out);
}

static void allgather(const char *name, size_t elems, int warm, int n)
{
	double *in = malloc(elems * sizeof(double)), *out = malloc(size * elems * sizeof(double));
	for (size_t i = 0; i < elems; i++)
		in[i] = (double)(i % 7 + rank);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < warm; i++)
		MPI_Allgather(in, (int)elems, MPI_DOUBLE, out, (int)elems, MPI_DOUBLE, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime();
	for (int i = 0; i < n; i++)
		MPI_Allgather(in, (int)elems, MPI_DOUBLE, out, (int)elems, MPI_DOUBLE, MPI_COMM_WORLD);
	report(name, elems, n, MPI_Wtime() - start);
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	int warm = argc > 2 ? atoi(argv[2]) : 500;
	int bign = argc > 3 ? atoi(argv[3]) : 100;
	int bigwarm = argc > 4 ? atoi(argv[4]) : 10;
	allreduce("mpi_allreduce1", 1, warm, n);
	allreduce("mpi_allreduce1mib", MIB, bigwarm, bign);
	allgather("mpi_allgather1mib", MIB, bigwarm, bign);
	MPI_Finalize();
	return 0;
}
