/*
 * stream.c: the Open MPI baseline for the payload throughput of
 * bench/pingpong (-test bw). Run with
 *
 *   mpicc -O2 -o stream bench/mpi/stream.c
 *   mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl self,tcp ./stream
 *
 * It mirrors the Tessera measurement, where locality 0 calls an action on
 * locality 1 that takes an 8 MiB []float64 and returns its length, with
 * WINDOW calls in flight: rank 0 sends blocks of ELEMS doubles (the same
 * buffer every time) with MPI_Isend and posts an MPI_Irecv for the
 * block's reply, an int; with WINDOW blocks unanswered it waits for the
 * oldest reply before it sends the next. Rank 1 keeps WINDOW MPI_Irecv
 * posted into WINDOW reused buffers; when the oldest completes it sends
 * the number of doubles received back with MPI_Send and posts that
 * buffer's receive again. After WARMUP blocks and an MPI_Barrier, N
 * blocks are timed until the last reply, and rank 0 prints
 *
 *   BenchmarkMPI/mpi_bw N GBPS GB/s
 *
 * Then the same blocks go as Open MPI streams them fastest here: rank 0
 * calls MPI_Send block after block, rank 1 MPI_Recv into one buffer, and
 * answers the last one with one byte (WARMUP, a barrier, N timed):
 *
 *   BenchmarkMPI/mpi_bw_send N GBPS GB/s
 *
 * (gbps is 10^9 bytes of payload per second).
 *
 * Arguments (optional): N WARMUP ELEMS WINDOW, default 128 16 1048576 4.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { TAG_BLOCK = 1, TAG_REPLY = 2 };

/* run streams n blocks (rank 0) or receives them (rank 1), with replies. */
static void run(int rank, int n, int elems, int window, double *block, double **bufs,
                MPI_Request *sends, MPI_Request *replies, int *got)
{
	if (rank == 0) {
		for (int i = 0; i < window; i++)
			sends[i] = replies[i] = MPI_REQUEST_NULL;
		for (int i = 0; i < n; i++) {
			int s = i % window;
			if (replies[s] != MPI_REQUEST_NULL) {
				MPI_Wait(&replies[s], MPI_STATUS_IGNORE);
				MPI_Wait(&sends[s], MPI_STATUS_IGNORE);
				if (got[s] != elems) {
					fprintf(stderr, "stream: rank 1 received %d doubles of block %d, rank 0 sent %d\n",
					        got[s], i - window, elems);
					MPI_Abort(MPI_COMM_WORLD, 1);
				}
			}
			MPI_Irecv(&got[s], 1, MPI_INT, 1, TAG_REPLY, MPI_COMM_WORLD, &replies[s]);
			MPI_Isend(block, elems, MPI_DOUBLE, 1, TAG_BLOCK, MPI_COMM_WORLD, &sends[s]);
		}
		MPI_Waitall(window, replies, MPI_STATUSES_IGNORE);
		MPI_Waitall(window, sends, MPI_STATUSES_IGNORE);
		return;
	}
	MPI_Request *recvs = sends;
	for (int i = 0; i < window && i < n; i++)
		MPI_Irecv(bufs[i], elems, MPI_DOUBLE, 0, TAG_BLOCK, MPI_COMM_WORLD, &recvs[i]);
	for (int i = 0; i < n; i++) {
		int s = i % window, count;
		MPI_Status st;
		MPI_Wait(&recvs[s], &st);
		MPI_Get_count(&st, MPI_DOUBLE, &count);
		MPI_Send(&count, 1, MPI_INT, 0, TAG_REPLY, MPI_COMM_WORLD);
		if (i + window < n)
			MPI_Irecv(bufs[s], elems, MPI_DOUBLE, 0, TAG_BLOCK, MPI_COMM_WORLD, &recvs[s]);
	}
}

/* plain sends n blocks one by one (rank 0) or receives them (rank 1), and
 * rank 1 acknowledges the last with one byte. */
static void plain(int rank, int n, int elems, double *block, double *buf)
{
	char ack = 1;
	for (int i = 0; i < n; i++) {
		if (rank == 0)
			MPI_Send(block, elems, MPI_DOUBLE, 1, TAG_BLOCK, MPI_COMM_WORLD);
		else
			MPI_Recv(buf, elems, MPI_DOUBLE, 0, TAG_BLOCK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	if (rank == 0)
		MPI_Recv(&ack, 1, MPI_BYTE, 1, TAG_REPLY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else
		MPI_Send(&ack, 1, MPI_BYTE, 0, TAG_REPLY, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int n = argc > 1 ? atoi(argv[1]) : 128;
	int warm = argc > 2 ? atoi(argv[2]) : 16;
	int elems = argc > 3 ? atoi(argv[3]) : 1 << 20;
	int window = argc > 4 ? atoi(argv[4]) : 4;
	if (size != 2 || n < 1 || warm < 0 || elems < 1 || window < 1) {
		if (rank == 0)
			fprintf(stderr, "stream: needs 2 ranks and N >= 1, WARMUP >= 0, ELEMS >= 1, WINDOW >= 1 "
			        "(have %d ranks, N=%d WARMUP=%d ELEMS=%d WINDOW=%d)\n", size, n, warm, elems, window);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	double *block = NULL, **bufs = calloc((size_t)window, sizeof *bufs);
	MPI_Request *sends = calloc((size_t)window, sizeof *sends);
	MPI_Request *replies = calloc((size_t)window, sizeof *replies);
	int *got = calloc((size_t)window, sizeof *got);
	if (!bufs || !sends || !replies || !got) {
		fprintf(stderr, "stream: rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (rank == 0) {
		block = malloc((size_t)elems * sizeof *block);
		if (!block) {
			fprintf(stderr, "stream: rank 0: cannot allocate a block of %d doubles\n", elems);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		for (int i = 0; i < elems; i++)
			block[i] = i;
	} else {
		for (int i = 0; i < window; i++) {
			bufs[i] = calloc((size_t)elems, sizeof **bufs);
			if (!bufs[i]) {
				fprintf(stderr, "stream: rank 1: cannot allocate %d buffers of %d doubles\n", window, elems);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		}
	}
	if (warm > 0)
		run(rank, warm, elems, window, block, bufs, sends, replies, got);
	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime();
	run(rank, n, elems, window, block, bufs, sends, replies, got);
	double took = MPI_Wtime() - start;
	if (rank == 0)
		printf("BenchmarkMPI/mpi_bw %d %.4f GB/s\n", n, (double)n * elems * sizeof(double) / took / 1e9);
	fflush(stdout);

	if (warm > 0)
		plain(rank, warm, elems, block, bufs[0]);
	MPI_Barrier(MPI_COMM_WORLD);
	start = MPI_Wtime();
	plain(rank, n, elems, block, bufs[0]);
	took = MPI_Wtime() - start;
	if (rank == 0)
		printf("BenchmarkMPI/mpi_bw_send %d %.4f GB/s\n", n, (double)n * elems * sizeof(double) / took / 1e9);
	fflush(stdout);
	for (int i = 0; i < window; i++)
		free(bufs[i]);
	free(bufs);
	free(block);
	free(sends);
	free(replies);
	free(got);
	MPI_Finalize();
	return 0;
}
