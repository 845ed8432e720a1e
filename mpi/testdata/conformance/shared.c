/* Shared-memory windows (MPI 4.0, 12.2.3): the ranks of a host's
 * communicator (Comm_split_type(MPI_COMM_TYPE_SHARED)) allocate one
 * window, one rank with no memory; each part follows the one before;
 * every rank stores into its own part and loads the others' directly,
 * ordered by Win_sync and a barrier inside a Win_lock_all epoch (MPI's
 * own idiom), and the one-sided calls work on it too (a Put, then a
 * load); Win_shared_query on another window is MPI_ERR_RMA_FLAVOR. */
#include "check.h"

/* next_mem is the rank after r that has memory (every rank but 1) */
static int next_mem(int r, int n)
{
	do
		r = (r + 1) % n;
	while (r == 1 && n > 1);
	return r;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm node;
	OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
	int nme, n;
	MPI_Comm_rank(node, &nme);
	MPI_Comm_size(node, &n);
	/* rank 1 has no memory; the others 4 ints per rank number + 1 */
	int count = nme == 1 ? 0 : 4 * (nme + 1);
	int *mine = NULL;
	MPI_Win win;
	OK(MPI_Win_allocate_shared((MPI_Aint)count * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine, &win));
	int *flavor, flag;
	OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
	CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED, "flavor %d", flag ? *flavor : -1);

	OK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < count; i++)
		mine[i] = 1000 * nme + i;
	OK(MPI_Win_sync(win));
	MPI_Barrier(node);
	OK(MPI_Win_sync(win));
	char *prev_end = NULL;
	for (int r = 0; r < n; r++) {
		MPI_Aint size;
		int unit;
		int *p;
		OK(MPI_Win_shared_query(win, r, &size, &unit, &p));
		int want = r == 1 ? 0 : 4 * (r + 1);
		CHECK(size == (MPI_Aint)(want * sizeof(int)) && unit == (int)sizeof(int), "rank %d's part: %ld bytes, unit %d", r,
		      (long)size, unit);
		if (prev_end)
			CHECK((char *)p == prev_end, "rank %d's part does not follow rank %d's", r, r - 1);
		prev_end = (char *)p + size;
		for (int i = 0; i < want; i++)
			CHECK(p[i] == 1000 * r + i, "rank %d's element %d seen by rank %d: %d", r, i, nme, p[i]);
	}
	/* MPI_PROC_NULL: the lowest rank with memory */
	MPI_Aint size;
	int unit, *p0, *p;
	OK(MPI_Win_shared_query(win, 0, &size, &unit, &p0));
	OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &unit, &p));
	CHECK(p == p0, "MPI_PROC_NULL's part is not rank 0's");
	MPI_Barrier(node);
	OK(MPI_Win_unlock_all(win));

	/* a Put from each rank with memory into the next one with memory,
	 * loaded there after a barrier */
	if (nme != 1 && next_mem(nme, n) != nme) {
		int to = next_mem(nme, n), v = -nme - 1;
		OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, to, 0, win));
		OK(MPI_Put(&v, 1, MPI_INT, to, 0, 1, MPI_INT, win));
		OK(MPI_Win_unlock(to, win));
	}
	MPI_Barrier(node);
	OK(MPI_Win_sync(win));
	for (int r = 0; r < n; r++)
		if (r != 1 && r != nme && nme != 1 && next_mem(r, n) == nme)
			CHECK(mine[0] == -r - 1, "the Put from rank %d: %d", r, mine[0]);
	OK(MPI_Win_free(&win));

	/* a window of another flavour */
	int plain[2];
	OK(MPI_Win_create(plain, sizeof plain, sizeof(int), MPI_INFO_NULL, node, &win));
	OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	int rc = MPI_Win_shared_query(win, 0, &size, &unit, &p), cls = -1;
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_RMA_FLAVOR, "Win_shared_query of a Win_create window: class %d", cls);
	OK(MPI_Win_free(&win));
	MPI_Comm_free(&node);
	DONE();
}
