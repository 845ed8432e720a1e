/* Non-blocking collectives: every one against its blocking twin's
 * answer on the same data (every root, uneven counts, in place), several
 * outstanding at once and completed in another order, progress by
 * MPI_Test while the rank computes, point-to-point traffic between the
 * call and its Wait (a program that deadlocks if the call blocks), and a
 * derived datatype. */
#include "check.h"

static int n;

static void fill(int *b, int cnt, int seed)
{
	for (int i = 0; i < cnt; i++)
		b[i] = seed * 1000 + i * 7 + me;
}

static void same(const char *what, const int *a, const int *b, int cnt)
{
	for (int i = 0; i < cnt; i++)
		if (a[i] != b[i]) {
			CHECK(0, "%s: element %d is %d, the blocking call gave %d", what, i, a[i], b[i]);
			return;
		}
}

static void wait1(MPI_Request *r) { OK(MPI_Wait(r, MPI_STATUS_IGNORE)); }

static void each(void)
{
	enum { C = 5 };
	int s[64], a[64], b[64];
	MPI_Request r;
	for (int root = 0; root < n; root++) {
		fill(a, C, root);
		memcpy(b, a, sizeof a);
		MPI_Bcast(b, C, MPI_INT, root, MPI_COMM_WORLD);
		OK(MPI_Ibcast(a, C, MPI_INT, root, MPI_COMM_WORLD, &r));
		wait1(&r);
		same("Ibcast", a, b, C);

		fill(s, C, 2);
		memset(a, 0, sizeof a);
		memset(b, 0, sizeof b);
		MPI_Reduce(s, b, C, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
		OK(MPI_Ireduce(s, a, C, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r));
		wait1(&r);
		if (me == root)
			same("Ireduce", a, b, C);

		MPI_Gather(s, C, MPI_INT, b, C, MPI_INT, root, MPI_COMM_WORLD);
		OK(MPI_Igather(s, C, MPI_INT, a, C, MPI_INT, root, MPI_COMM_WORLD, &r));
		wait1(&r);
		if (me == root)
			same("Igather", a, b, C * n);

		fill(s, C * n, 3);
		MPI_Scatter(s, C, MPI_INT, b, C, MPI_INT, root, MPI_COMM_WORLD);
		OK(MPI_Iscatter(s, C, MPI_INT, a, C, MPI_INT, root, MPI_COMM_WORLD, &r));
		wait1(&r);
		same("Iscatter", a, b, C);

		/* v: rank i has i+1 elements, one apart from rank i-1's */
		int counts[8], displs[8];
		for (int i = 0; i < n; i++) {
			counts[i] = i + 1;
			displs[i] = i * (i + 1) / 2 + i;
		}
		int span = displs[n - 1] + n;
		memset(a, 0, sizeof a);
		memset(b, 0, sizeof b);
		MPI_Gatherv(s, me + 1, MPI_INT, b, counts, displs, MPI_INT, root, MPI_COMM_WORLD);
		OK(MPI_Igatherv(s, me + 1, MPI_INT, a, counts, displs, MPI_INT, root, MPI_COMM_WORLD, &r));
		wait1(&r);
		if (me == root)
			same("Igatherv", a, b, span);
		MPI_Scatterv(s, counts, displs, MPI_INT, b, me + 1, MPI_INT, root, MPI_COMM_WORLD);
		OK(MPI_Iscatterv(s, counts, displs, MPI_INT, a, me + 1, MPI_INT, root, MPI_COMM_WORLD, &r));
		wait1(&r);
		same("Iscatterv", a, b, me + 1);
	}
	fill(s, C * n, 4);
	MPI_Allreduce(s, b, C, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	OK(MPI_Iallreduce(s, a, C, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r));
	wait1(&r);
	same("Iallreduce", a, b, C);
	memcpy(a, s, sizeof a);
	OK(MPI_Iallreduce(MPI_IN_PLACE, a, C, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r));
	wait1(&r);
	same("Iallreduce in place", a, b, C);

	MPI_Allgather(s, C, MPI_INT, b, C, MPI_INT, MPI_COMM_WORLD);
	OK(MPI_Iallgather(s, C, MPI_INT, a, C, MPI_INT, MPI_COMM_WORLD, &r));
	wait1(&r);
	same("Iallgather", a, b, C * n);

	MPI_Alltoall(s, 2, MPI_INT, b, 2, MPI_INT, MPI_COMM_WORLD);
	OK(MPI_Ialltoall(s, 2, MPI_INT, a, 2, MPI_INT, MPI_COMM_WORLD, &r));
	wait1(&r);
	same("Ialltoall", a, b, 2 * n);

	/* alltoallv: rank i sends j+1 elements to rank j (rank j receives j+1 from each) */
	int sc[8], sd[8], rc[8], rd[8];
	for (int i = 0, at = 0; i < n; i++) {
		sc[i] = i + 1;
		sd[i] = at;
		at += i + 1;
		rc[i] = me + 1;
		rd[i] = i * (me + 1);
	}
	memset(a, 0, sizeof a);
	memset(b, 0, sizeof b);
	MPI_Alltoallv(s, sc, sd, MPI_INT, b, rc, rd, MPI_INT, MPI_COMM_WORLD);
	OK(MPI_Ialltoallv(s, sc, sd, MPI_INT, a, rc, rd, MPI_INT, MPI_COMM_WORLD, &r));
	wait1(&r);
	same("Ialltoallv", a, b, n * (me + 1));

	/* the same exchange as Alltoallw (ints, byte displacements), blocking and not */
	{
		int sdb[8], rdb[8];
		MPI_Datatype ts[8];
		for (int i = 0; i < n; i++) {
			sdb[i] = sd[i] * (int)sizeof(int);
			rdb[i] = rd[i] * (int)sizeof(int);
			ts[i] = MPI_INT;
		}
		memset(a, 0, sizeof a);
		OK(MPI_Alltoallw(s, sc, sdb, ts, a, rc, rdb, ts, MPI_COMM_WORLD));
		same("Alltoallw", a, b, n * (me + 1));
		memset(a, 0, sizeof a);
		OK(MPI_Ialltoallw(s, sc, sdb, ts, a, rc, rdb, ts, MPI_COMM_WORLD, &r));
		wait1(&r);
		same("Ialltoallw", a, b, n * (me + 1));
	}

	int counts[8], at = 0;
	for (int i = 0; i < n; i++)
		counts[i] = i + 1, at += i + 1;
	MPI_Allgatherv(s, me + 1, MPI_INT, b, counts, (int[]){0, 1, 3, 6, 10, 15, 21, 28}, MPI_INT, MPI_COMM_WORLD);
	OK(MPI_Iallgatherv(s, me + 1, MPI_INT, a, counts, (int[]){0, 1, 3, 6, 10, 15, 21, 28}, MPI_INT, MPI_COMM_WORLD,
			   &r));
	wait1(&r);
	same("Iallgatherv", a, b, at);

	MPI_Reduce_scatter_block(s, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	OK(MPI_Ireduce_scatter_block(s, a, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
	wait1(&r);
	same("Ireduce_scatter_block", a, b, 2);

	/* rank i gets i+1 elements */
	MPI_Reduce_scatter(s, b, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	OK(MPI_Ireduce_scatter(s, a, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
	wait1(&r);
	same("Ireduce_scatter", a, b, me + 1);

	MPI_Scan(s, b, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	OK(MPI_Iscan(s, a, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
	wait1(&r);
	same("Iscan", a, b, C);
	MPI_Exscan(s, b, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	OK(MPI_Iexscan(s, a, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
	wait1(&r);
	if (me > 0)
		same("Iexscan", a, b, C);

	OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
	wait1(&r);
	CHECK(r == MPI_REQUEST_NULL, "a completed request is not MPI_REQUEST_NULL");
}

static void sum_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
	for (int i = 0; i < *len; i++)
		((int *)inout)[i] += ((int *)in)[i];
}

/* a user op freed before the reduction using it completes */
static void freed_op(void)
{
	MPI_Op op;
	MPI_Op_create(sum_fn, 1, &op);
	int x = me + 1, sum = -1;
	MPI_Request r;
	OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, op, MPI_COMM_WORLD, &r));
	OK(MPI_Op_free(&op));
	wait1(&r);
	CHECK(sum == n * (n + 1) / 2, "Iallreduce with a freed op: %d", sum);
}

/* three at once, completed in reverse; then by Waitany */
static void overlapped(void)
{
	int x = me + 1, sum = -1, all[8] = {0}, root0 = me == 0 ? 42 : -1;
	MPI_Request r[3];
	OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]));
	OK(MPI_Ibcast(&root0, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[1]));
	OK(MPI_Iallgather(&x, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &r[2]));
	wait1(&r[2]);
	wait1(&r[1]);
	wait1(&r[0]);
	CHECK(sum == n * (n + 1) / 2, "overlapped Iallreduce %d", sum);
	CHECK(root0 == 42, "overlapped Ibcast %d", root0);
	for (int i = 0; i < n; i++)
		CHECK(all[i] == i + 1, "overlapped Iallgather[%d] = %d", i, all[i]);
	OK(MPI_Iallreduce(&x, &sum, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r[0]));
	OK(MPI_Ibarrier(MPI_COMM_WORLD, &r[1]));
	int done = 0, idx;
	while (done < 2) {
		OK(MPI_Waitany(2, r, &idx, MPI_STATUS_IGNORE));
		done++;
	}
	CHECK(sum == n, "Iallreduce by Waitany: %d", sum);
}

/* progress by MPI_Test while computing */
static void polled(void)
{
	double v = me, total = -1;
	MPI_Request r;
	OK(MPI_Iallreduce(&v, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &r));
	int flag = 0;
	long spins = 0;
	volatile double work = 0;
	while (!flag) {
		for (int i = 0; i < 1000; i++)
			work += i;
		OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
		spins++;
	}
	CHECK(total == n * (n - 1) / 2.0, "polled Iallreduce %g", total);
	CHECK(r == MPI_REQUEST_NULL, "MPI_Test left the request");
}

/* point-to-point between the call and its Wait: rank 0 starts the
 * barrier then sends, rank 1 receives before it starts the barrier. A
 * barrier that blocked at the call would never return. */
static void between(void)
{
	if (n < 2)
		return;
	MPI_Request r;
	int v = 7;
	if (me == 0) {
		OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
		OK(MPI_Send(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD));
		wait1(&r);
	} else if (me == 1) {
		v = 0;
		OK(MPI_Recv(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		CHECK(v == 7, "received %d", v);
		OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
		wait1(&r);
	} else {
		OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
		wait1(&r);
	}
}

/* a derived type: every other int of 6 */
static void derived(void)
{
	MPI_Datatype every2;
	MPI_Type_vector(3, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	int buf[6] = {0};
	if (me == 0)
		for (int i = 0; i < 6; i++)
			buf[i] = 10 + i;
	MPI_Request r;
	OK(MPI_Ibcast(buf, 1, every2, 0, MPI_COMM_WORLD, &r));
	MPI_Type_free(&every2); /* freed while in use: the collective keeps it */
	wait1(&r);
	for (int i = 0; i < 6; i++)
		CHECK(buf[i] == (me == 0 || i % 2 == 0 ? 10 + i : 0), "derived Ibcast [%d] = %d", i, buf[i]);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (n > 8) {
		printf("FAIL: at most 8 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	each();
	overlapped();
	freed_op();
	polled();
	between();
	derived();
	DONE();
}
