/* An Open MPI program that checks its own results: point-to-point (a ring
 * and a ping-pong), collectives (Bcast, Allreduce, Reduce, Allgather,
 * Alltoall, Barrier) and a communicator split. It prints "OK rank R of N"
 * and exits 0, or names the first wrong result and exits 1.
 *
 *   check            the checks, once
 *   check loop N     the checks N times (a communication-heavy run)
 *   check abort R C  rank R calls MPI_Abort(MPI_COMM_WORLD, C) after the checks
 *   check nofinal    every rank ends after the checks without MPI_Finalize
 *   check sleep      rank 0 sleeps after MPI_Init (to be cancelled)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size;

#define CHECK(cond, ...)                                                 \
	do {                                                             \
		if (!(cond)) {                                           \
			fprintf(stderr, "rank %d: check failed: ", rank); \
			fprintf(stderr, __VA_ARGS__);                    \
			fprintf(stderr, "\n");                           \
			exit(1);                                         \
		}                                                        \
	} while (0)

static void checks(int iter)
{
	/* ring */
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	int got = -1, send = rank * 1000 + iter;
	MPI_Sendrecv(&send, 1, MPI_INT, next, 1, &got, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	CHECK(got == prev * 1000 + iter, "ring: got %d from %d", got, prev);

	/* a larger ping-pong between 0 and size-1 */
	enum { N = 1 << 16 };
	static int buf[N];
	if (size > 1 && (rank == 0 || rank == size - 1)) {
		int peer = rank == 0 ? size - 1 : 0;
		if (rank == 0) {
			for (int i = 0; i < N; i++)
				buf[i] = i ^ iter;
			MPI_Send(buf, N, MPI_INT, peer, 2, MPI_COMM_WORLD);
			MPI_Recv(buf, N, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (int i = 0; i < N; i++)
				CHECK(buf[i] == (i ^ iter) + 1, "pingpong: buf[%d] = %d", i, buf[i]);
		} else {
			MPI_Status st;
			int count;
			MPI_Recv(buf, N, MPI_INT, peer, 2, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_INT, &count);
			CHECK(count == N, "pingpong: %d ints", count);
			for (int i = 0; i < N; i++)
				buf[i]++;
			MPI_Send(buf, N, MPI_INT, peer, 3, MPI_COMM_WORLD);
		}
	}

	/* collectives */
	int v = rank == 0 ? 42 + iter : -1;
	MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD);
	CHECK(v == 42 + iter, "bcast: %d", v);
	long sum = 0, mine = rank + 1;
	MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	CHECK(sum == (long)size * (size + 1) / 2, "allreduce: %ld", sum);
	int mx = -1;
	MPI_Reduce(&rank, &mx, 1, MPI_INT, MPI_MAX, size - 1, MPI_COMM_WORLD);
	CHECK(rank != size - 1 || mx == size - 1, "reduce max: %d", mx);
	int *all = malloc(sizeof(int) * size), *to = malloc(sizeof(int) * size), *from = malloc(sizeof(int) * size);
	MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < size; i++)
		CHECK(all[i] == i, "allgather: all[%d] = %d", i, all[i]);
	for (int i = 0; i < size; i++)
		to[i] = rank * 100 + i;
	MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < size; i++)
		CHECK(from[i] == i * 100 + rank, "alltoall: from[%d] = %d", i, from[i]);
	free(all);
	free(to);
	free(from);
	MPI_Barrier(MPI_COMM_WORLD);

	/* split into even and odd ranks, reversed */
	MPI_Comm half;
	MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
	int hr, hs;
	MPI_Comm_rank(half, &hr);
	MPI_Comm_size(half, &hs);
	int want = (size - rank % 2 + 1) / 2;
	CHECK(hs == want, "split: size %d, want %d", hs, want);
	int hsum = 0;
	MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
	int wsum = 0;
	for (int r = rank % 2; r < size; r += 2)
		wsum += r;
	CHECK(hsum == wsum, "split allreduce: %d, want %d", hsum, wsum);
	int top = -1; /* the highest world rank of the half is its rank 0 */
	if (hr == 0)
		top = rank;
	MPI_Bcast(&top, 1, MPI_INT, 0, half);
	CHECK(top == rank % 2 + 2 * (hs - 1), "split order: rank 0 of the half is %d", top);
	MPI_Comm_free(&half);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double t0 = now();
	MPI_Init(&argc, &argv);
	double t1 = now();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "sleep") == 0 && rank == 0)
		sleep(600);
	int n = strcmp(mode, "loop") == 0 && argc > 2 ? atoi(argv[2]) : 1;
	for (int i = 0; i < n; i++)
		checks(i);
	if (strcmp(mode, "abort") == 0 && argc > 3 && rank == atoi(argv[2]))
		MPI_Abort(MPI_COMM_WORLD, atoi(argv[3]));
	if (strcmp(mode, "abort") == 0)
		sleep(600);
	double t2 = now();
	printf("OK rank %d of %d (MPI_Init %.2f s, checks %.2f s)\n", rank, size, t1 - t0, t2 - t1);
	fflush(stdout);
	if (strcmp(mode, "nofinal") == 0)
		return 0;
	MPI_Finalize();
	return 0;
}
