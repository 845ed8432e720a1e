/* Matched probes: a message Mprobe matched is received by its Mrecv
 * only (a later receive gets the next one), Improbe and Imrecv of a
 * message large enough to be cut into fragments, the classic "probe the
 * size, allocate, receive" from every other rank, MPI_PROC_NULL's
 * MPI_MESSAGE_NO_PROC, and a message handle that is none. */
#include "check.h"

int main(int argc, char **argv)
{
	int size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Status st;
	MPI_Message m;
	int n;

	/* MPI_PROC_NULL */
	OK(MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &m, &st));
	CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "Mprobe of MPI_PROC_NULL");
	OK(MPI_Mrecv(&n, 1, MPI_INT, &m, &st));
	CHECK(m == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL, "Mrecv of MPI_MESSAGE_NO_PROC");

	/* a handle no probe gave */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Message bogus = (MPI_Message)0x12345;
	int rc = MPI_Mrecv(&n, 1, MPI_INT, &bogus, MPI_STATUS_IGNORE), cls;
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_REQUEST, "Mrecv of a bogus message: class %d", cls);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

	if (size >= 2) {
		size_t big = 5u << 20; /* above 4 MiB: sent in fragments */
		unsigned char *b = malloc(big);
		if (me == 0) {
			int one = 1, two = 2;
			OK(MPI_Send(&one, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
			OK(MPI_Send(&two, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
			for (size_t i = 0; i < big; i++)
				b[i] = (unsigned char)(i * 7 + 3);
			OK(MPI_Send(b, (int)big, MPI_BYTE, 1, 6, MPI_COMM_WORLD));
		} else if (me == 1) {
			OK(MPI_Mprobe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &m, &st));
			MPI_Get_count(&st, MPI_INT, &n);
			CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 5 && n == 1, "Mprobe's status: %d %d %d", st.MPI_SOURCE,
			      st.MPI_TAG, n);
			int v = 0;
			OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			CHECK(v == 2, "a receive after Mprobe got %d, not the next message (2)", v);
			OK(MPI_Mrecv(&v, 1, MPI_INT, &m, &st));
			CHECK(v == 1 && m == MPI_MESSAGE_NULL, "Mrecv got %d, not the matched message (1)", v);
			int flag = 0;
			while (!flag)
				OK(MPI_Improbe(0, 6, MPI_COMM_WORLD, &flag, &m, &st));
			MPI_Get_count(&st, MPI_BYTE, &n);
			CHECK(n == (int)big, "Improbe's count of a fragmented message: %d", n);
			memset(b, 0, big);
			MPI_Request r;
			OK(MPI_Imrecv(b, n, MPI_BYTE, &m, &r));
			OK(MPI_Wait(&r, &st));
			MPI_Get_count(&st, MPI_BYTE, &n);
			int same = n == (int)big;
			for (size_t i = 0; same && i < big; i++)
				same = b[i] == (unsigned char)(i * 7 + 3);
			CHECK(same, "Imrecv of a fragmented message: %d bytes, not what was sent", n);
		}
		free(b);
	}

	/* every other rank sends rank 0 a message of its own size; rank 0
	 * probes each, allocates, receives */
	if (me != 0) {
		int *v = malloc(sizeof(int) * (size_t)(me * 100));
		for (int i = 0; i < me * 100; i++)
			v[i] = me;
		OK(MPI_Send(v, me * 100, MPI_INT, 0, 7, MPI_COMM_WORLD));
		free(v);
	} else {
		int seen = 0;
		for (int k = 1; k < size; k++) {
			OK(MPI_Mprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &m, &st));
			MPI_Get_count(&st, MPI_INT, &n);
			int *v = malloc(sizeof(int) * (size_t)(n ? n : 1));
			OK(MPI_Mrecv(v, n, MPI_INT, &m, &st));
			CHECK(n == st.MPI_SOURCE * 100 && (n == 0 || (v[0] == st.MPI_SOURCE && v[n - 1] == st.MPI_SOURCE)),
			      "from rank %d: %d ints", st.MPI_SOURCE, n);
			seen |= 1 << st.MPI_SOURCE;
			free(v);
		}
		CHECK(seen == ((1 << size) - 2), "ranks heard from: %#x", seen);
	}
	DONE();
}
