/* chanbreak: rank 0 sends rank 1 NMSG messages of 1 MiB (each filled
 * with its number) while rank 1 makes no MPI call, so that most of them
 * wait at rank 0 (the peer's socket full, or past the channel's bound of
 * unacknowledged bytes); the test then resets their channel's connection
 * (mpi/chanbreak_test.go). Files in COSCHED_TEST_BREAK_DIR pace it: rank 0
 * writes "sent" after its sends, rank 1 "asleep" before it waits for
 * "go", which the test writes after the reset. Rank 1 then receives every
 * message, checking each byte (lost, repeated or out of order fails), and
 * both print "ok" after MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NMSG 24
#define LEN (1 << 20)

static void touch(const char *dir, const char *name)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f) {
		perror(p);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	fclose(f);
}

static int exists(const char *dir, const char *name)
{
	char p[4096];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char *dir = getenv("COSCHED_TEST_BREAK_DIR");
	if (size != 2 || !dir) {
		fprintf(stderr, "chanbreak: two ranks and COSCHED_TEST_BREAK_DIR, please\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	unsigned char *buf = malloc(LEN);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		static MPI_Request rq[NMSG];
		for (int i = 0; i < NMSG; i++) {
			unsigned char *m = malloc(LEN);
			if (!m)
				MPI_Abort(MPI_COMM_WORLD, 1);
			memset(m, i + 1, LEN);
			MPI_Isend(m, LEN, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &rq[i]);
		}
		MPI_Waitall(NMSG, rq, MPI_STATUSES_IGNORE);
		touch(dir, "sent");
		int done = 0;
		MPI_Recv(&done, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (done != NMSG) {
			printf("FAIL: rank 1 says %d\n", done);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	} else {
		touch(dir, "asleep");
		while (!exists(dir, "go"))
			usleep(10000);
		for (int i = 0; i < NMSG; i++) {
			MPI_Recv(buf, LEN, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (int k = 0; k < LEN; k++)
				if (buf[k] != (unsigned char)(i + 1)) {
					printf("FAIL: message %d byte %d is %d: lost, repeated or out of order\n", i + 1, k, buf[k]);
					fflush(stdout);
					MPI_Abort(MPI_COMM_WORLD, 2);
				}
		}
		int done = NMSG;
		MPI_Send(&done, 1, MPI_INT, 0, 8, MPI_COMM_WORLD);
	}
	MPI_Finalize();
	printf("ok\n");
	return 0;
}
