/* Prints "start" after MPI_Init, then 1…n, one a tenth of a second, each
   after an MPI_Sendrecv round on a ring whose payload it checks, then
   "finalized" once MPI_Finalize has returned: its output shows one
   uninterrupted run, and that MPI_Finalize worked. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    int rank, size;
    setvbuf(stdout, NULL, _IOLBF, 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("start\n");
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 1; i <= n; i++) {
        int out[2] = {rank, i}, in[2] = {-1, -1};
        MPI_Sendrecv(out, 2, MPI_INT, next, 7, in, 2, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (in[0] != prev || in[1] != i) {
            fprintf(stderr, "rank %d: round %d got (%d, %d), want (%d, %d)\n", rank, i, in[0], in[1], prev, i);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        printf("%d\n", i);
        usleep(100000);
    }
    MPI_Finalize();
    printf("finalized\n");
    return 0;
}
