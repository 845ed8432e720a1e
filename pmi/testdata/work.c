/* A benchmark kernel: "compute" (long compute phases, one small Allreduce
   each) or "comm" (many small messages: a ring exchange and an Allreduce
   per short step). Rank 0 prints "elapsed SECONDS" measured between two
   barriers, and every rank checks its results. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile double sink;

static void compute(long n) {
    double x = 1.0;
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: work compute|comm STEPS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int comm = strcmp(argv[1], "comm") == 0;
    long steps = atol(argv[2]);
    long inner = comm ? 2000 : 4000000;  /* work per step */
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    long total = 0;
    for (long s = 0; s < steps; s++) {
        compute(inner);
        if (comm) {
            int next = (rank + 1) % size, prev = (rank + size - 1) % size, got;
            MPI_Sendrecv(&rank, 1, MPI_INT, next, 0, &got, 1, MPI_INT, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (got != prev) { fprintf(stderr, "ring: got %d want %d\n", got, prev); MPI_Abort(MPI_COMM_WORLD, 3); }
        }
        long one = 1, sum = 0;
        MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        total += sum;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t1 = MPI_Wtime();
    if (total != steps * size) { fprintf(stderr, "allreduce total %ld\n", total); MPI_Abort(MPI_COMM_WORLD, 4); }
    if (rank == 0) printf("elapsed %.6f\n", t1 - t0);
    MPI_Finalize();
    return 0;
}
