/* A rank that waits: rank 0 sleeps argv[1] ms, then sends to rank 1,
 * which sits in MPI_Recv meanwhile; then rank 0 sleeps again before a
 * barrier rank 1 already entered, and before a message rank 1 waits for
 * in MPI_Probe. The test watches rank 1's CPU time and state (asleep in
 * the kernel, not spinning), stops and continues it mid-wait, and reads
 * the relay's view (rank 1 blocked). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int me, v = 0, ms = argc > 1 ? atoi(argv[1]) : 500;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (me == 0) {
		usleep(ms * 1000);
		v = 4242;
		MPI_Send(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
		usleep(ms * 500);
		MPI_Barrier(MPI_COMM_WORLD);
		usleep(ms * 500);
		MPI_Send(&v, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
	} else if (me == 1) {
		MPI_Status st;
		MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &st);
		if (v != 4242)
			printf("FAIL rank 1: received %d\n", v);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Probe(0, 6, MPI_COMM_WORLD, &st);
		MPI_Recv(&v, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &st);
	}
	MPI_Finalize();
	if (me == 0)
		printf("PASS\n");
	return 0;
}
