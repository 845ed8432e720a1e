/* wildmix: wildcard receives fed by both paths at once (mpi/channels_test.go).
 * Rank 0 has a channel to rank 1 (same node) but not to rank 2 (the other
 * node, COSCHED_MPI_CHANNELS=node), so a wildcard receive is posted to the
 * relay and kept in the library too. Each round ranks 1 and 2 send rank 0
 * one numbered message; rank 0 waits until both are there (rank 1's in its
 * channel, rank 2's queued at the relay), then receives twice from
 * MPI_ANY_SOURCE. The first receive takes the channel's message, while the
 * relay gives it rank 2's as well (it was posted there too); the second
 * receive is posted before that Deliver comes, and must still get it.
 * Each round has a communicator of its own, so that no receive of an
 * earlier round, still posted at the relay, is there to take the message.
 * Rank 0 prints PASS after MPI_Finalize, or FAIL and a reason. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 20;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 3) {
		fprintf(stderr, "wildmix: 3 ranks, please\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	long next[3] = {0, 0, 0};
	for (long i = 1; i <= rounds; i++) {
		MPI_Comm c;
		MPI_Comm_dup(MPI_COMM_WORLD, &c);
		if (rank > 0) {
			long v = i * 10 + rank;
			MPI_Send(&v, 1, MPI_LONG, 0, 5, c);
		} else {
			/* both messages in place before the first receive is posted */
			struct timespec ts = {0, 30 * 1000 * 1000};
			nanosleep(&ts, NULL);
			for (int m = 0; m < 2; m++) {
				long v;
				MPI_Status st;
				MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, 5, c, &st);
				int src = st.MPI_SOURCE;
				if (src < 1 || src > 2 || v != i * 10 + src || next[src] != i - 1) {
					printf("FAIL round %ld: %ld from rank %d\n", i, v, src);
					fflush(stdout);
					MPI_Abort(MPI_COMM_WORLD, 2);
				}
				next[src] = i;
			}
		}
		MPI_Barrier(c);
		MPI_Comm_free(&c);
	}
	MPI_Finalize();
	if (rank == 0)
		printf("PASS\n");
	return 0;
}
