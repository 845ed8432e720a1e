/* A job of C ranks with one rank of Go's comm library (rank g, the first
 * argument), which knows nothing of channels and talks on contexts of its
 * own: the C ranks exchange messages among themselves (8 bytes and 1 MiB
 * with each other C rank, each checked), then every rank, the Go one too,
 * meets in the relays' barrier. Rank 0 prints PASS. */
#include "conformance/check.h"

#define BIG (1 << 20)

int main(int argc, char **argv)
{
	OK(MPI_Init(&argc, &argv));
	int n;
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	int g = argc > 1 ? atoi(argv[1]) : -1;
	char *out = malloc(BIG), *in = malloc(BIG);
	for (int p = 0; p < n; p++) {
		if (p == me || p == g)
			continue;
		long small = me * 1000L + p, got = -1;
		memset(out, 'a' + me, BIG);
		MPI_Request rs[2];
		OK(MPI_Isend(&small, 1, MPI_LONG, p, 5, MPI_COMM_WORLD, &rs[0]));
		OK(MPI_Isend(out, BIG, MPI_CHAR, p, 6, MPI_COMM_WORLD, &rs[1]));
		OK(MPI_Recv(&got, 1, MPI_LONG, p, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		OK(MPI_Recv(in, BIG, MPI_CHAR, p, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		OK(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
		CHECK(got == p * 1000L + me, "from rank %d: %ld", p, got);
		CHECK(in[0] == 'a' + p && in[BIG - 1] == 'a' + p, "1 MiB from rank %d: %c…%c", p, in[0], in[BIG - 1]);
	}
	OK(MPI_Barrier(MPI_COMM_WORLD));
	free(out);
	free(in);
	DONE();
}
