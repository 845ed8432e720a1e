/* One-sided communication in active target epochs: Put, Get,
 * Accumulate, Get_accumulate, Fetch_and_op and Compare_and_swap between
 * fences, a strided target datatype on a window of Win_allocate, post,
 * start, complete and wait between pairs of ranks, the window's
 * attributes, and an operation outside an epoch returned as
 * MPI_ERR_RMA_SYNC. */
#include "check.h"

int main(int argc, char **argv)
{
	int size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int right = (me + 1) % size;
	int *mem = calloc((size_t)(2 * size + 4), sizeof(int));
	MPI_Win win;
	OK(MPI_Win_create(mem, (MPI_Aint)(2 * size + 4) * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));

	void *base;
	MPI_Aint *wsize;
	int *unit, *flavor, flag;
	OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
	CHECK(flag && base == mem, "MPI_WIN_BASE");
	OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag));
	CHECK(flag && *wsize == (MPI_Aint)(2 * size + 4) * (MPI_Aint)sizeof(int), "MPI_WIN_SIZE");
	OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
	CHECK(flag && *unit == (int)sizeof(int), "MPI_WIN_DISP_UNIT");
	OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
	CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "MPI_WIN_CREATE_FLAVOR");

	/* outside an epoch: returned, as the window's handler says */
	OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	int rc = MPI_Put(&me, 1, MPI_INT, right, 0, 1, MPI_INT, win), cls;
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_RMA_SYNC, "a Put outside an epoch: class %d", cls);

	/* every rank puts its rank into slot me of every window */
	OK(MPI_Win_fence(0, win));
	for (int t = 0; t < size; t++)
		OK(MPI_Put(&me, 1, MPI_INT, t, me, 1, MPI_INT, win));
	OK(MPI_Win_fence(0, win));
	for (int i = 0; i < size; i++)
		CHECK(mem[i] == i, "after the fence, slot %d holds %d", i, mem[i]);

	/* the right neighbour's slots, read */
	int *got = calloc((size_t)size, sizeof(int));
	OK(MPI_Get(got, size, MPI_INT, right, 0, size, MPI_INT, win));
	OK(MPI_Win_fence(0, win));
	for (int i = 0; i < size; i++)
		CHECK(got[i] == i, "Get: slot %d of rank %d is %d", i, right, got[i]);

	/* accumulates on rank 0: a sum, then a counter each rank fetches */
	OK(MPI_Accumulate((int[]){me + 1}, 1, MPI_INT, 0, size, 1, MPI_INT, MPI_SUM, win));
	OK(MPI_Win_fence(0, win));
	if (me == 0)
		CHECK(mem[size] == size * (size + 1) / 2, "Accumulate SUM: %d", mem[size]);
	int one = 1, fetched = -5;
	OK(MPI_Fetch_and_op(&one, &fetched, MPI_INT, 0, size + 1, MPI_SUM, win));
	OK(MPI_Win_fence(0, win));
	int *all = calloc((size_t)size, sizeof(int));
	MPI_Allgather(&fetched, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	int seen = 0;
	for (int i = 0; i < size; i++)
		if (all[i] >= 0 && all[i] < size)
			seen |= 1 << all[i];
	CHECK(seen == (1 << size) - 1, "Fetch_and_op: the values fetched are not 0..%d once each", size - 1);
	if (me == 0)
		CHECK(mem[size + 1] == size, "the counter after %d fetches: %d", size, mem[size + 1]);
	/* compare and swap: only rank 0's compare matches */
	int swap = -1, cmp = me == 0 ? size : 12345, old = -7;
	OK(MPI_Compare_and_swap(&swap, &cmp, &old, MPI_INT, 0, size + 1, win));
	OK(MPI_Win_fence(0, win));
	if (me == 0)
		CHECK(old == size && mem[size + 1] == -1, "Compare_and_swap: old %d, now %d", old, mem[size + 1]);
	else
		CHECK(old == -1 || old == size, "Compare_and_swap's result: %d", old);
	/* Get_accumulate with MPI_NO_OP: an atomic read */
	int read = -9;
	OK(MPI_Get_accumulate(NULL, 0, MPI_INT, &read, 1, MPI_INT, 0, size, 1, MPI_INT, MPI_NO_OP, win));
	OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
	CHECK(read == size * (size + 1) / 2, "Get_accumulate NO_OP: %d", read);

	/* a strided target type on an allocated window */
	int *amem;
	MPI_Win aw;
	OK(MPI_Win_allocate(8 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &amem, &aw));
	for (int i = 0; i < 8; i++)
		amem[i] = -1;
	MPI_Datatype every2;
	MPI_Type_vector(4, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	int four[4] = {me * 10, me * 10 + 1, me * 10 + 2, me * 10 + 3};
	OK(MPI_Win_fence(0, aw));
	OK(MPI_Put(four, 4, MPI_INT, right, 0, 1, every2, aw));
	OK(MPI_Win_fence(0, aw));
	int left = (me + size - 1) % size;
	CHECK(amem[0] == left * 10 && amem[1] == -1 && amem[2] == left * 10 + 1 && amem[6] == left * 10 + 3,
	      "a strided Put: %d %d %d %d", amem[0], amem[1], amem[2], amem[6]);
	MPI_Type_free(&every2);
	OK(MPI_Win_free(&aw));
	CHECK(aw == MPI_WIN_NULL, "Win_free leaves MPI_WIN_NULL");

	/* post/start/complete/wait: odd ranks put into the even rank before */
	if (size >= 2) {
		MPI_Group world, peer;
		MPI_Comm_group(MPI_COMM_WORLD, &world);
		int even = me % 2 == 0, partner = even ? me + 1 : me - 1;
		if (partner < size) {
			MPI_Group_incl(world, 1, &partner, &peer);
			mem[0] = -3;
			if (even) {
				OK(MPI_Win_post(peer, 0, win));
				MPI_Group_free(&peer); /* the window keeps what it needs */
				OK(MPI_Win_wait(win));
				CHECK(mem[0] == 1000 + partner, "PSCW: the odd rank's Put: %d", mem[0]);
			} else {
				OK(MPI_Win_start(peer, 0, win));
				int v = 1000 + me, back = -1;
				OK(MPI_Put(&v, 1, MPI_INT, partner, 0, 1, MPI_INT, win));
				OK(MPI_Get(&back, 1, MPI_INT, partner, 1, 1, MPI_INT, win));
				OK(MPI_Win_complete(win));
				CHECK(back == 1, "PSCW: a Get of the even rank's slot 1: %d", back);
				MPI_Group_free(&peer);
			}
		}
		MPI_Group_free(&world);
	}
	OK(MPI_Win_free(&win));
	free(mem);
	free(got);
	free(all);
	DONE();
}
