/* One-sided communication in passive target epochs: an exclusive lock
 * that really excludes (a read, a flush and a write back by every rank
 * in turn lose no update), Fetch_and_op under Win_lock_all (every value
 * fetched once), shared locks read at once, a lock on the rank itself
 * around its own stores, operations above the inline size (a separate
 * message), a strided target datatype, the request-based calls, a target
 * that serves its origins while it waits in another call (MPI_Barrier),
 * and the epoch errors returned as MPI_ERR_RMA_SYNC. */
#include "check.h"

#define ITER 20
#define BIG (40 * 1024) /* ints: 160 KB, above the 64 KB a command carries inline */

static int cls(int rc)
{
	int c;
	MPI_Error_class(rc, &c);
	return c;
}

int main(int argc, char **argv)
{
	int size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int right = (me + 1) % size;
	int *mem;
	MPI_Win win;
	OK(MPI_Win_allocate((MPI_Aint)(BIG + 64) * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win));
	OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

	/* epochs misused: returned */
	CHECK(cls(MPI_Win_unlock(right, win)) == MPI_ERR_RMA_SYNC, "Win_unlock without a lock");
	CHECK(cls(MPI_Put(&me, 1, MPI_INT, right, 0, 1, MPI_INT, win)) == MPI_ERR_RMA_SYNC, "a Put without an epoch");
	OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
	CHECK(cls(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win)) == MPI_ERR_RMA_SYNC, "a second lock of one rank");
	CHECK(cls(MPI_Win_lock(99, right, 0, win)) == MPI_ERR_LOCKTYPE, "lock type 99");
	CHECK(cls(MPI_Win_unlock_all(win)) == MPI_ERR_RMA_SYNC, "Win_unlock_all after Win_lock");
	OK(MPI_Win_unlock(right, win));
	MPI_Request rq;
	CHECK(cls(MPI_Rput(&me, 1, MPI_INT, right, 0, 1, MPI_INT, win, &rq)) == MPI_ERR_RMA_SYNC, "Rput outside a lock");

	/* the rank's own lock around its own stores */
	OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win));
	for (int i = 0; i < BIG + 64; i++)
		mem[i] = 0;
	OK(MPI_Win_unlock(me, win));
	MPI_Barrier(MPI_COMM_WORLD);

	/* mutual exclusion: slot 0 of rank 0, read, flushed, written back */
	for (int i = 0; i < ITER; i++) {
		int v = -1;
		OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
		OK(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
		OK(MPI_Win_flush(0, win));
		v++;
		OK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
		OK(MPI_Win_unlock(0, win));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (me == 0) {
		OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
		CHECK(mem[0] == size * ITER, "read-flush-write under an exclusive lock: %d, want %d", mem[0], size * ITER);
		OK(MPI_Win_unlock(0, win));
	}

	/* Fetch_and_op under Win_lock_all: each value fetched once */
	int fetched[ITER];
	OK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < ITER; i++) {
		int one = 1;
		OK(MPI_Fetch_and_op(&one, &fetched[i], MPI_INT, size - 1, 1, MPI_SUM, win));
		OK(MPI_Win_flush(size - 1, win));
	}
	OK(MPI_Win_unlock_all(win));
	int *all = calloc((size_t)(size * ITER), sizeof(int));
	int *seen = calloc((size_t)(size * ITER), sizeof(int));
	MPI_Allgather(fetched, ITER, MPI_INT, all, ITER, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < size * ITER; i++) {
		CHECK(all[i] >= 0 && all[i] < size * ITER && !seen[all[i]], "Fetch_and_op fetched %d twice or out of range",
		      all[i]);
		if (all[i] >= 0 && all[i] < size * ITER)
			seen[all[i]] = 1;
	}
	for (int i = 1; i < ITER; i++)
		CHECK(fetched[i] > fetched[i - 1], "one origin's fetches not increasing: %d then %d", fetched[i - 1], fetched[i]);

	/* shared locks, every rank reading every rank's slot 1 at once */
	MPI_Barrier(MPI_COMM_WORLD);
	for (int t = 0; t < size; t++) {
		int v = -1;
		OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
		OK(MPI_Get(&v, 1, MPI_INT, t, 1, 1, MPI_INT, win));
		OK(MPI_Win_unlock(t, win));
		CHECK(v == (t == size - 1 ? size * ITER : 0), "shared Get of rank %d's slot 1: %d", t, v);
	}
	MPI_Barrier(MPI_COMM_WORLD);

	/* a large Put (a separate message) and a strided one, read back by Rget */
	int *big = malloc(BIG * sizeof(int)), *back = malloc(BIG * sizeof(int));
	for (int i = 0; i < BIG; i++)
		big[i] = me * 1000000 + i;
	MPI_Datatype every2;
	MPI_Type_vector(8, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	int eight[8], strided[16];
	for (int i = 0; i < 8; i++)
		eight[i] = 100 * me + i;
	OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
	OK(MPI_Put(big, BIG, MPI_INT, right, 64, BIG, MPI_INT, win));
	OK(MPI_Put(eight, 8, MPI_INT, right, 16, 1, every2, win));
	OK(MPI_Win_flush(right, win));
	OK(MPI_Rget(back, BIG, MPI_INT, right, 64, BIG, MPI_INT, win, &rq));
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	OK(MPI_Get(strided, 16, MPI_INT, right, 16, 16, MPI_INT, win));
	OK(MPI_Win_unlock(right, win));
	int bad = 0;
	for (int i = 0; i < BIG; i++)
		bad += back[i] != big[i];
	CHECK(bad == 0, "a %d-byte Put read back: %d ints differ", (int)(BIG * sizeof(int)), bad);
	for (int i = 0; i < 8; i++)
		CHECK(strided[2 * i] == 100 * me + i && strided[2 * i + 1] == 0, "strided Put: element %d is %d, gap %d", i,
		      strided[2 * i], strided[2 * i + 1]);

	/* the request-based calls */
	OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
	OK(MPI_Rput(&me, 1, MPI_INT, right, 2, 1, MPI_INT, win, &rq));
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	OK(MPI_Raccumulate((int[]){5}, 1, MPI_INT, right, 2, 1, MPI_INT, MPI_SUM, win, &rq));
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	int old = -1;
	OK(MPI_Rget_accumulate((int[]){1}, 1, MPI_INT, &old, 1, MPI_INT, right, 2, 1, MPI_INT, MPI_SUM, win, &rq));
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	CHECK(old == me + 5, "Rget_accumulate fetched %d, want %d", old, me + 5);
	OK(MPI_Win_unlock(right, win));
	MPI_Barrier(MPI_COMM_WORLD);
	int left = (me + size - 1) % size;
	CHECK(mem[2] == left + 6, "slot 2 after Rput, Raccumulate, Rget_accumulate: %d, want %d", mem[2], left + 6);

	/* a target waiting in a barrier serves its origins: rank 0 goes
	 * straight to it, the others update its slot 3 first */
	if (me != 0) {
		OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
		OK(MPI_Accumulate(&me, 1, MPI_INT, 0, 3, 1, MPI_INT, MPI_SUM, win));
		OK(MPI_Win_unlock(0, win));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (me == 0)
		CHECK(mem[3] == size * (size - 1) / 2, "slot 3 after the origins' epochs: %d", mem[3]);

	/* freeing a window with an epoch open is refused */
	OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
	CHECK(cls(MPI_Win_free(&win)) == MPI_ERR_RMA_SYNC, "Win_free with a lock held");
	OK(MPI_Win_unlock(right, win));
	MPI_Type_free(&every2);
	OK(MPI_Win_free(&win));
	free(big);
	free(back);
	free(all);
	free(seen);
	DONE();
}
