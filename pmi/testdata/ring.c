/* Point-to-point, non-blocking, collectives and a communicator split, each
   checking its own results. Exit 0 only if every check passed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1 && strcmp(argv[1], "abort") == 0) {
        MPI_Barrier(MPI_COMM_WORLD); /* everyone is past MPI_Init */
        if (rank == size - 1) {
            fprintf(stderr, "rank %d giving up\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (;;) MPI_Barrier(MPI_COMM_WORLD);
    }
    if (argc > 1 && strcmp(argv[1], "publish") == 0) {
        /* The name service is not served: the calls fail, the job runs on. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        char port[MPI_MAX_PORT_NAME] = "tcp://nowhere:1";
        int pub = MPI_Publish_name("cosched-test", MPI_INFO_NULL, port);
        int look = MPI_Lookup_name("cosched-test", MPI_INFO_NULL, port);
        CHECK(pub != MPI_SUCCESS && look != MPI_SUCCESS, "rank %d: publish %d lookup %d, want failures", rank, pub, look);
        MPI_Barrier(MPI_COMM_WORLD);
        printf("rank %d of %d name service refused\n", rank, size);
        MPI_Finalize();
        return 0;
    }
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    for (int round = 0; round < rounds; round++) {
        /* point-to-point ring */
        int next = (rank + 1) % size, prev = (rank + size - 1) % size, got = -1;
        MPI_Sendrecv(&rank, 1, MPI_INT, next, 1, &got, 1, MPI_INT, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(got == prev, "rank %d: ring got %d, want %d", rank, got, prev);
        /* non-blocking exchange with every peer */
        int *in = calloc(size, sizeof(int)), *outv = calloc(size, sizeof(int));
        MPI_Request *reqs = calloc(2 * size, sizeof(MPI_Request));
        for (int p = 0; p < size; p++) {
            outv[p] = rank * 1000 + p;
            MPI_Irecv(&in[p], 1, MPI_INT, p, 2, MPI_COMM_WORLD, &reqs[2 * p]);
            MPI_Isend(&outv[p], 1, MPI_INT, p, 2, MPI_COMM_WORLD, &reqs[2 * p + 1]);
        }
        MPI_Status *st = calloc(2 * size, sizeof(MPI_Status));
        MPI_Waitall(2 * size, reqs, st);
        free(st);
        for (int p = 0; p < size; p++)
            CHECK(in[p] == p * 1000 + rank, "rank %d: isend from %d got %d", rank, p, in[p]);
        /* Allreduce */
        long sum = 0, mine = rank + 1;
        MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        CHECK(sum == (long)size * (size + 1) / 2, "rank %d: allreduce %ld", rank, sum);
        /* Alltoall */
        MPI_Alltoall(outv, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++)
            CHECK(in[p] == p * 1000 + rank, "rank %d: alltoall from %d got %d", rank, p, in[p]);
        /* Bcast */
        int root = round % size, v = rank == root ? 4242 + round : -1;
        MPI_Bcast(&v, 1, MPI_INT, root, MPI_COMM_WORLD);
        CHECK(v == 4242 + round, "rank %d: bcast got %d", rank, v);
        /* communicator split: evens and odds */
        MPI_Comm half;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        int hrank, hsize, hsum = 0;
        MPI_Comm_rank(half, &hrank);
        MPI_Comm_size(half, &hsize);
        MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
        int want = 0;
        for (int r = rank % 2; r < size; r += 2) want += r;
        CHECK(hrank == rank / 2 && hsum == want, "rank %d: split rank %d sum %d want %d", rank, hrank, hsum, want);
        MPI_Comm_free(&half);
        free(in); free(outv); free(reqs);
    }
    const char *lr = getenv("MPI_LOCALRANKID");
    printf("rank %d of %d ok local %s\n", rank, size, lr ? lr : "?");
    MPI_Finalize();
    return 0;
}
