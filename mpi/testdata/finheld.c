/* MPI_Finalize must return once everything is acknowledged, even when the
 * last acknowledgement came before the rank looked (TestFinalizeTakesAnEarlyAck).
 * Rank 1 keeps its channels' sockets open after MPI_Finalize (duplicates),
 * so rank 0 never sees them end: it must leave on the acknowledgements
 * alone. Rank 1 ends once rank 0 has left MPI_Finalize (the file argv[1]
 * exists), or fails after 30 s. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: finheld FILE [BYTES]\n");
		return 2;
	}
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int n = argc == 3 ? atoi(argv[2]) : 0;
	if (n > 0) { /* rank 0 enters MPI_Finalize with most of it still to write */
		char *b = calloc(n, 1);
		if (!b)
			return 1;
		if (rank == 0)
			MPI_Send(b, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
		else
			MPI_Recv(b, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		free(b);
	}
	if (rank != 0) {
		int top = 0;
		for (int fd = 3; fd < 1024; fd++)
			if (fcntl(fd, F_GETFD) >= 0)
				top = fd;
		for (int fd = 3; fd <= top; fd++)
			if (fcntl(fd, F_GETFD) >= 0 && dup(fd) < 0)
				perror("dup");
	}
	MPI_Finalize();
	if (rank == 0) {
		int fd = creat(argv[1], 0644);
		if (fd < 0) {
			perror(argv[1]);
			return 1;
		}
		close(fd);
		printf("PASS\n");
		return 0;
	}
	for (int i = 0; i < 600; i++) {
		if (access(argv[1], F_OK) == 0)
			return 0;
		usleep(50000);
	}
	printf("FAIL: rank 0 did not leave MPI_Finalize in 30 s\n");
	return 1;
}
