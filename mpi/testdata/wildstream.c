/* wildstream: every rank sends each other rank one numbered message a
 * round (tag 7, a 2000-byte block every third round, 16 bytes else) and
 * receives them with MPI_ANY_SOURCE, checking that each source's numbers
 * come once and in order, whichever path (channel or relay) they take
 * and whenever the relays take the channels back (mpi/revoke_test.go).
 * Every rank is ahead of the others by at most one round: an Allreduce
 * of the stop file's presence (COSCHED_TEST_STREAM_STOP) ends each round.
 * It prints "start", "got i" for each round and "ok" after MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIG 2000

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *stop = getenv("COSCHED_TEST_STREAM_STOP");
	if (!stop) {
		fprintf(stderr, "wildstream: COSCHED_TEST_STREAM_STOP, please\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	long *next = calloc(size, sizeof *next);
	MPI_Request *rq = calloc(size, sizeof *rq);
	static long out[BIG / sizeof(long)], in[BIG / sizeof(long)];
	printf("start\n");
	fflush(stdout);
	for (long i = 1;; i++) {
		int n = i % 3 ? 2 : BIG / sizeof(long), k = 0;
		for (int j = 0; j < n; j++)
			out[j] = i * 1000 + j;
		for (int p = 0; p < size; p++)
			if (p != rank)
				MPI_Isend(out, n, MPI_LONG, p, 7, MPI_COMM_WORLD, &rq[k++]);
		for (int m = 0; m < size - 1; m++) {
			MPI_Status st;
			MPI_Recv(in, BIG / sizeof(long), MPI_LONG, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st);
			int src = st.MPI_SOURCE, got;
			MPI_Get_count(&st, MPI_LONG, &got);
			long r = in[0] / 1000;
			if (src < 0 || src >= size || src == rank || r != next[src] + 1 || got != (r % 3 ? 2 : BIG / (int)sizeof(long)) ||
			    in[got - 1] != r * 1000 + got - 1) {
				printf("FAIL round %ld: from rank %d message %ld (%d longs), want %ld\n", i, src, r, got, next[src] + 1);
				fflush(stdout);
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
			next[src] = r;
		}
		MPI_Waitall(k, rq, MPI_STATUSES_IGNORE);
		printf("got %ld\n", i);
		fflush(stdout);
		long seen = access(stop, F_OK) == 0, any;
		MPI_Allreduce(&seen, &any, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
		if (any)
			break;
	}
	MPI_Finalize();
	printf("ok\n");
	return 0;
}
