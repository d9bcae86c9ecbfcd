/*
 * pingpong.c: the Open MPI baseline for the action round trip of
 * bench/pingpong. Run with
 *
 *   mpicc -O2 -o pingpong bench/mpi/pingpong.c
 *   mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp ./pingpong
 *
 * Rank 0 sends SIZE bytes to rank 1, which sends them back; rank 0 waits
 * for them before the next send. After WARMUP round trips and an
 * MPI_Barrier, N round trips are timed and rank 0 prints
 *
 *   BenchmarkMPI/mpi_rtt N US us/rtt
 *
 * Open MPI polls while it waits in MPI_Recv (it does not block in the
 * kernel), which is what the Tessera poll progress mode is compared with.
 *
 * Arguments (optional): N WARMUP SIZE, default 20000 2000 64.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	int warm = argc > 2 ? atoi(argv[2]) : 2000;
	int bytes = argc > 3 ? atoi(argv[3]) : 64;
	if (size != 2 || n < 1 || warm < 0 || bytes < 1) {
		if (rank == 0)
			fprintf(stderr, "pingpong: needs 2 ranks and N >= 1, WARMUP >= 0, SIZE >= 1 (have %d ranks, N=%d WARMUP=%d SIZE=%d)\n",
			        size, n, warm, bytes);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	char *buf = calloc((size_t)bytes, 1);
	double start = 0;
	for (int i = 0; i < warm + n; i++) {
		if (i == warm) {
			MPI_Barrier(MPI_COMM_WORLD);
			start = MPI_Wtime();
		}
		if (rank == 0) {
			MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	if (rank == 0)
		printf("BenchmarkMPI/mpi_rtt %d %.3f us/rtt\n", n, (MPI_Wtime() - start) / n * 1e6);
	fflush(stdout);
	free(buf);
	MPI_Finalize();
	return 0;
}
