/* MPI_Cancel: a receive nothing matched is taken back (Wait returns,
 * Test_cancelled says so, the count is 0) and a message that comes later
 * goes to the next receive instead, whether the receive named a source
 * (over a channel or the relays) or was a wildcard; a receive already
 * matched is not, and has its message; a send completes as sent; a
 * persistent receive's Start is cancelled and the request starts again;
 * a non-blocking collective cannot be cancelled (MPI_ERR_REQUEST). */
#include "check.h"

static int cancelled(MPI_Status *st)
{
	int flag = -1;
	MPI_Test_cancelled(st, &flag);
	return flag;
}

int main(int argc, char **argv)
{
	int size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int right = (me + 1) % size, left = (me + size - 1) % size;
	MPI_Request rq;
	MPI_Status st;
	int v = -1, count = -1;

	/* nothing comes: a wildcard and a named source, taken back */
	int srcs[2] = {MPI_ANY_SOURCE, left};
	for (int i = 0; i < 2; i++) {
		OK(MPI_Irecv(&v, 1, MPI_INT, srcs[i], 77, MPI_COMM_WORLD, &rq));
		OK(MPI_Cancel(&rq));
		CHECK(rq != MPI_REQUEST_NULL, "MPI_Cancel freed the request");
		OK(MPI_Wait(&rq, &st));
		MPI_Get_count(&st, MPI_INT, &count);
		CHECK(cancelled(&st) == 1 && count == 0 && v == -1, "receive %d: cancelled %d, count %d, value %d", i,
		      cancelled(&st), count, v);
	}
	/* … and the messages that come now go to the receives posted now */
	MPI_Barrier(MPI_COMM_WORLD);
	OK(MPI_Send(&me, 1, MPI_INT, right, 77, MPI_COMM_WORLD));
	OK(MPI_Send((int[]){me + 1000}, 1, MPI_INT, right, 77, MPI_COMM_WORLD));
	OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &st));
	CHECK(v == left && !cancelled(&st), "the first message after the cancels: %d, want %d", v, left);
	OK(MPI_Recv(&v, 1, MPI_INT, left, 77, MPI_COMM_WORLD, &st));
	CHECK(v == left + 1000, "the second: %d, want %d", v, left + 1000);

	/* matched before the cancel: the receive keeps its message. The
	 * second message, from the same source after the first, cannot be
	 * received before the first was matched (MPI's order). */
	OK(MPI_Irecv(&v, 1, MPI_INT, left, 5, MPI_COMM_WORLD, &rq));
	OK(MPI_Send((int[]){me + 500}, 1, MPI_INT, right, 5, MPI_COMM_WORLD));
	OK(MPI_Send(&me, 1, MPI_INT, right, 6, MPI_COMM_WORLD));
	int after = -1;
	OK(MPI_Recv(&after, 1, MPI_INT, left, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	OK(MPI_Cancel(&rq));
	OK(MPI_Wait(&rq, &st));
	CHECK(!cancelled(&st) && v == left + 500, "a matched receive: cancelled %d, value %d", cancelled(&st), v);

	/* a send completes as sent */
	OK(MPI_Isend(&me, 1, MPI_INT, right, 8, MPI_COMM_WORLD, &rq));
	OK(MPI_Cancel(&rq));
	OK(MPI_Wait(&rq, &st));
	CHECK(!cancelled(&st), "a send said cancelled");
	OK(MPI_Recv(&v, 1, MPI_INT, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	CHECK(v == left, "the cancelled send's message: %d", v);

	/* a persistent receive: its Start cancelled, then started again */
	OK(MPI_Recv_init(&v, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &rq));
	OK(MPI_Start(&rq));
	OK(MPI_Cancel(&rq));
	OK(MPI_Wait(&rq, &st));
	CHECK(cancelled(&st) == 1 && rq != MPI_REQUEST_NULL, "persistent: cancelled %d", cancelled(&st));
	MPI_Barrier(MPI_COMM_WORLD);
	OK(MPI_Send((int[]){me + 900}, 1, MPI_INT, right, 9, MPI_COMM_WORLD));
	OK(MPI_Start(&rq));
	OK(MPI_Wait(&rq, &st));
	CHECK(!cancelled(&st) && v == left + 900, "persistent, started again: cancelled %d, value %d", cancelled(&st), v);
	OK(MPI_Request_free(&rq));

	/* many taken back, then the traffic goes on in order */
	MPI_Request many[16];
	int sink[16];
	for (int i = 0; i < 16; i++)
		OK(MPI_Irecv(&sink[i], 1, MPI_INT, i % 2 ? MPI_ANY_SOURCE : left, 10, MPI_COMM_WORLD, &many[i]));
	for (int i = 15; i >= 0; i--)
		OK(MPI_Cancel(&many[i]));
	OK(MPI_Waitall(16, many, MPI_STATUSES_IGNORE));
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < 4; i++)
		OK(MPI_Send(&i, 1, MPI_INT, right, 10, MPI_COMM_WORLD));
	for (int i = 0; i < 4; i++) {
		OK(MPI_Recv(&v, 1, MPI_INT, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		CHECK(v == i, "message %d after 16 cancels: %d", i, v);
	}

	/* a non-blocking collective cannot be cancelled */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	OK(MPI_Ibarrier(MPI_COMM_WORLD, &rq));
	int rc = MPI_Cancel(&rq), cls = -1;
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_REQUEST, "MPI_Cancel of an Ibarrier: class %d", cls);
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	DONE();
}
