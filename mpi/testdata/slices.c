/* K collectives of one kind, for counting the bcs slices each takes
 * (TestCollectiveSlices): ./slices KIND K. The ranks first line up with
 * point-to-point messages (not announced as a collective), so the relay's
 * count of slices from the first collective announcement to the last
 * (collective_slices) spans K-1 whole collectives and no start-up skew.
 * Each result is checked, so a fast wrong answer does not pass.
 *
 * Bcast and Scan do not synchronize (a root or rank 0 never waits), so
 * back-to-back calls would overlap; each call here needs the last one's
 * result where it arrives last: the next Bcast's root is the previous
 * root's rank minus one (a binomial tree's deepest leaf), and rank 0's
 * next Scan input comes from rank n-1's result, sent point to point
 * (one more slice per call, counted). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int me, n;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc != 3) {
		fprintf(stderr, "usage: slices KIND K\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	const char *kind = argv[1];
	int k = atoi(argv[2]), bad = 0, z = 0;
	if (me == 0) {
		for (int i = 1; i < n; i++)
			MPI_Recv(&z, 1, MPI_INT, i, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (int i = 1; i < n; i++)
			MPI_Send(&z, 1, MPI_INT, i, 0, MPI_COMM_WORLD);
	} else {
		MPI_Send(&z, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
		MPI_Recv(&z, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	int *all = malloc(n * sizeof(int)), root = 0, carry = 0;
	for (int i = 0; i < k; i++) {
		int v = me + i, out = -1;
		if (!strcmp(kind, "allreduce")) {
			MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
			bad |= out != n * (n - 1) / 2 + n * i;
		} else if (!strcmp(kind, "bcast")) {
			out = me == root ? 100 + carry : -1;
			MPI_Bcast(&out, 1, MPI_INT, root, MPI_COMM_WORLD);
			bad |= out != 100 + i;
			carry = out + 1 - 100;
			root = (root + n - 1) % n;
		} else if (!strcmp(kind, "barrier")) {
			MPI_Barrier(MPI_COMM_WORLD);
		} else if (!strcmp(kind, "allgather")) {
			MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
			for (int j = 0; j < n; j++)
				bad |= all[j] != j + i;
		} else if (!strcmp(kind, "scan")) {
			/* rank 0 contributes carry (= i, from rank n-1's last result), the others their rank */
			v = me == 0 ? carry : me;
			MPI_Scan(&v, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
			bad |= out != i + me * (me + 1) / 2;
			if (n > 1 && me == n - 1)
				MPI_Send(&out, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
			if (n > 1 && me == 0) {
				MPI_Recv(&out, 1, MPI_INT, n - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				carry = out - n * (n - 1) / 2 + 1;
			} else if (n == 1)
				carry = out + 1;
		} else if (!strcmp(kind, "reduce_scatter")) {
			for (int j = 0; j < n; j++)
				all[j] = v + j;
			MPI_Reduce_scatter_block(all, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
			bad |= out != n * (n - 1) / 2 + n * (i + me);
		} else {
			fprintf(stderr, "slices: unknown kind %s\n", kind);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
	if (bad)
		printf("FAIL rank %d: wrong %s result\n", me, kind);
	else if (me == 0)
		printf("PASS\n");
	free(all);
	MPI_Finalize();
	return bad;
}
