/* mpistream: pairs of ranks (0-1, 2-3, ...) exchange numbered messages
 * until a file appears,
 * checking that each arrives exactly once and in order, whatever happens
 * to their agents meanwhile (node/mpiresume_test.go kills and restarts
 * them). Round i: each rank posts receives for tags 2 then 1 (matched out
 * of order: the relay queues tag 1's message), Isends i with tags 1 and
 * 2, then a blocking Send/Recv ping-pong of a 6000-byte block of i (tag
 * 3); every third round an Allreduce, every fourth a Barrier. It prints
 * "start", "got i" for each round and "ok" after MPI_Finalize. A round's
 * message also says whether its sender saw the stop file
 * (COSCHED_TEST_STREAM_STOP): both end after the same round (with more
 * than two ranks, an Allreduce of it each round ends every pair there). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BLOCK 6000

static void fail(int rank, const char *what, long round, long got)
{
	printf("FAIL round %ld: %s: got %ld\n", round, what, got);
	fprintf(stderr, "rank %d: FAIL round %ld: %s: got %ld\n", rank, round, what, got);
	fflush(stdout);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *stop = getenv("COSCHED_TEST_STREAM_STOP");
	if (size % 2 || !stop) {
		fprintf(stderr, "mpistream: an even number of ranks and COSCHED_TEST_STREAM_STOP, please\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	printf("start\n");
	fflush(stdout);
	int peer = rank ^ 1;
	static long block[BLOCK / sizeof(long)], back[BLOCK / sizeof(long)];
	for (long i = 1;; i++) {
		long mine[2] = {i, access(stop, F_OK) == 0}, in1[2], in2[2];
		MPI_Request rq[4];
		MPI_Irecv(in2, 2, MPI_LONG, peer, 2, MPI_COMM_WORLD, &rq[0]);
		MPI_Irecv(in1, 2, MPI_LONG, peer, 1, MPI_COMM_WORLD, &rq[1]);
		MPI_Isend(mine, 2, MPI_LONG, peer, 1, MPI_COMM_WORLD, &rq[2]);
		MPI_Isend(mine, 2, MPI_LONG, peer, 2, MPI_COMM_WORLD, &rq[3]);
		for (size_t k = 0; k < BLOCK / sizeof(long); k++)
			block[k] = i * 1000003 + (long)k + rank;
		MPI_Status st;
		if (rank % 2 == 0) {
			MPI_Send(block, BLOCK / sizeof(long), MPI_LONG, peer, 3, MPI_COMM_WORLD);
			MPI_Recv(back, BLOCK / sizeof(long), MPI_LONG, peer, 3, MPI_COMM_WORLD, &st);
		} else {
			MPI_Recv(back, BLOCK / sizeof(long), MPI_LONG, peer, 3, MPI_COMM_WORLD, &st);
			MPI_Send(block, BLOCK / sizeof(long), MPI_LONG, peer, 3, MPI_COMM_WORLD);
		}
		for (size_t k = 0; k < BLOCK / sizeof(long); k++)
			if (back[k] != i * 1000003 + (long)k + peer)
				fail(rank, "tag 3 block: lost, repeated or out of order", i, back[k]);
		MPI_Status sts[4];
		MPI_Waitall(4, rq, sts);
		if (in1[0] != i)
			fail(rank, "tag 1: lost, repeated or out of order", i, in1[0]);
		if (in2[0] != i)
			fail(rank, "tag 2: lost, repeated or out of order", i, in2[0]);
		if (i % 3 == 0) {
			long x = i + rank, sum = 0;
			MPI_Allreduce(&x, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
			if (sum != size * i + (long)size * (size - 1) / 2)
				fail(rank, "allreduce", i, sum);
		}
		if (i % 4 == 0)
			MPI_Barrier(MPI_COMM_WORLD);
		printf("got %ld\n", i);
		fflush(stdout);
		long seen = mine[1] || in1[1], any = seen;
		if (size > 2) /* every pair ends after the same round */
			MPI_Allreduce(&seen, &any, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
		if (any)
			break;
	}
	MPI_Finalize();
	printf("ok\n");
	return 0;
}
