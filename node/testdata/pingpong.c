/* Ping-pong between the two ranks of a job of two:
 * one-way latency of 8-byte messages and bandwidth of 1 MiB messages,
 * timed with MPI_Wtime after a warm-up. Rank 0 prints
 *   latency_us L bandwidth_MBps B
 * Arguments: round trips of 8 bytes (default 10000) and of 1 MiB (200).
 * Every message's first and last bytes are checked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank;

/* pingpong returns the one-way time of n-byte messages over iters round trips. */
static double pingpong(char *buf, int n, int iters)
{
	int peer = 1 - rank;
	double t0 = 0;
	for (int i = -iters / 10 - 1; i < iters; i++) {
		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		char tag = (char)i;
		if (rank == 0) {
			buf[0] = buf[n - 1] = tag;
			MPI_Send(buf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, n, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, n, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, n, MPI_CHAR, peer, 2, MPI_COMM_WORLD);
		}
		if (buf[0] != tag || buf[n - 1] != tag) {
			fprintf(stderr, "rank %d: round trip %d of %d bytes came back wrong\n", rank, i, n);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	return (MPI_Wtime() - t0) / (2.0 * iters);
}

int main(int argc, char **argv)
{
	int size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int small = argc > 1 ? atoi(argv[1]) : 10000, large = argc > 2 ? atoi(argv[2]) : 200;
	const int big = 1 << 20;
	char *buf = malloc(big);
	memset(buf, 0, big);
	if (size != 2) {
		fprintf(stderr, "pingpong runs on 2 ranks, not %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	double lat = pingpong(buf, 8, small);
	double bw = big / pingpong(buf, big, large);
	if (rank == 0)
		printf("latency_us %.3f bandwidth_MBps %.1f\n", lat * 1e6, bw / 1e6);
	free(buf);
	MPI_Finalize();
	return 0;
}
