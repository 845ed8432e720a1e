/* Point to point: blocking and non-blocking sends of every flavour, tags,
 * wildcards, MPI's non-overtaking order, PROC_NULL, Get_count, truncation
 * (MPI_ERR_TRUNCATE with MPI_ERRORS_RETURN), self sends, large messages
 * (cut into fragments by the library), Sendrecv(_replace), the Wait and
 * Test families and Request_free. */
#include "check.h"

static void fill(int *b, int n, int seed)
{
	for (int i = 0; i < n; i++)
		b[i] = seed * 1000003 + i;
}

static int same(const int *b, int n, int seed)
{
	for (int i = 0; i < n; i++)
		if (b[i] != seed * 1000003 + i)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	int size, buf[64], got[64];
	MPI_Status st;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int right = (me + 1) % size, left = (me + size - 1) % size;

	/* ring with every blocking send flavour */
	for (int mode = 0; mode < 4; mode++) {
		fill(buf, 64, me * 10 + mode);
		MPI_Request r;
		OK(MPI_Irecv(got, 64, MPI_INT, left, 100 + mode, MPI_COMM_WORLD, &r));
		switch (mode) {
		case 0: OK(MPI_Send(buf, 64, MPI_INT, right, 100 + mode, MPI_COMM_WORLD)); break;
		case 1: OK(MPI_Ssend(buf, 64, MPI_INT, right, 100 + mode, MPI_COMM_WORLD)); break;
		case 2: OK(MPI_Rsend(buf, 64, MPI_INT, right, 100 + mode, MPI_COMM_WORLD)); break;
		case 3: {
			int bsz = 64 * sizeof(int) + MPI_BSEND_OVERHEAD;
			void *bb = malloc(bsz);
			OK(MPI_Buffer_attach(bb, bsz));
			OK(MPI_Bsend(buf, 64, MPI_INT, right, 100 + mode, MPI_COMM_WORLD));
			void *back;
			int bs;
			OK(MPI_Buffer_detach(&back, &bs));
			CHECK(back == bb && bs == bsz, "Buffer_detach gave %p/%d", back, bs);
			free(bb);
			break;
		}
		}
		OK(MPI_Wait(&r, &st));
		CHECK(same(got, 64, left * 10 + mode), "mode %d: wrong data from %d", mode, left);
		CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 100 + mode, "mode %d: status %d/%d", mode, st.MPI_SOURCE, st.MPI_TAG);
		int cnt;
		OK(MPI_Get_count(&st, MPI_INT, &cnt));
		CHECK(cnt == 64, "Get_count %d", cnt);
		OK(MPI_Get_count(&st, MPI_DOUBLE, &cnt));
		CHECK(cnt == 32, "Get_count as double %d", cnt);
		OK(MPI_Get_count(&st, MPI_LONG_DOUBLE, &cnt));
		CHECK(cnt == 16, "Get_count as long double %d", cnt);
	}

	/* non-overtaking: 50 messages same tag, then wildcard receives see them in order */
	if (me == 0) {
		for (int src = 1; src < size; src++) {
			int last = -1;
			for (int i = 0; i < 50; i++) {
				int v;
				OK(MPI_Recv(&v, 1, MPI_INT, src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
				CHECK(v == last + 1, "from %d: got %d after %d", src, v, last);
				CHECK(st.MPI_TAG == (i % 3), "from %d: tag %d, want %d", src, st.MPI_TAG, i % 3);
				last = v;
			}
		}
	} else {
		for (int i = 0; i < 50; i++)
			OK(MPI_Send(&i, 1, MPI_INT, 0, i % 3, MPI_COMM_WORLD));
	}

	/* ANY_SOURCE: rank 0 gets one message from everyone else */
	if (me == 0) {
		int seen = 0;
		for (int i = 1; i < size; i++) {
			int v;
			OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st));
			CHECK(v == st.MPI_SOURCE * 3, "ANY_SOURCE: %d from %d", v, st.MPI_SOURCE);
			seen |= 1 << st.MPI_SOURCE;
		}
		CHECK(seen == ((1 << size) - 2), "ANY_SOURCE saw %#x", seen);
	} else {
		int v = me * 3;
		OK(MPI_Send(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD));
	}

	/* tags select: receive tag 2 before tag 1 though sent after */
	if (me == 0 && size > 1) {
		int a = 1, b = 2;
		OK(MPI_Send(&a, 1, MPI_INT, 1, 1, MPI_COMM_WORLD));
		OK(MPI_Send(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD));
	} else if (me == 1) {
		int a = 0, b = 0;
		OK(MPI_Recv(&b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &st));
		OK(MPI_Recv(&a, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &st));
		CHECK(a == 1 && b == 2, "tag selection: a=%d b=%d", a, b);
	}

	/* PROC_NULL */
	OK(MPI_Send(buf, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
	OK(MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
	CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "PROC_NULL status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
	{
		int cnt;
		MPI_Get_count(&st, MPI_INT, &cnt);
		CHECK(cnt == 0, "PROC_NULL count %d", cnt);
	}

	/* self send */
	{
		int v = 42, w = 0;
		MPI_Request r;
		OK(MPI_Isend(&v, 1, MPI_INT, me, 9, MPI_COMM_WORLD, &r));
		OK(MPI_Recv(&w, 1, MPI_INT, me, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		CHECK(w == 42 && r == MPI_REQUEST_NULL, "self send: %d", w);
	}

	/* truncation with ERRORS_RETURN */
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	{
		int big[8] = {1, 2, 3, 4, 5, 6, 7, 8}, small[4] = {0};
		OK(MPI_Sendrecv(big, 8, MPI_INT, right, 11, got, 8, MPI_INT, left, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		MPI_Request r;
		OK(MPI_Isend(big, 8, MPI_INT, right, 12, MPI_COMM_WORLD, &r));
		int rc = MPI_Recv(small, 4, MPI_INT, left, 12, MPI_COMM_WORLD, &st);
		int cls;
		MPI_Error_class(rc, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive gave %d", rc);
		CHECK(small[0] == 1 && small[3] == 4, "truncated receive kept %d..%d", small[0], small[3]);
		char text[MPI_MAX_ERROR_STRING];
		int tl;
		OK(MPI_Error_string(rc, text, &tl));
		CHECK(tl > 0 && strstr(text, "trunc"), "Error_string: %s", text);
		OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		/* Waitall: MPI_ERR_IN_STATUS, the status says which */
		MPI_Request rr[2];
		MPI_Status sts[2];
		OK(MPI_Isend(big, 8, MPI_INT, right, 13, MPI_COMM_WORLD, &r));
		OK(MPI_Irecv(small, 4, MPI_INT, left, 13, MPI_COMM_WORLD, &rr[0]));
		OK(MPI_Irecv(got, 1, MPI_INT, MPI_PROC_NULL, 13, MPI_COMM_WORLD, &rr[1]));
		rc = MPI_Waitall(2, rr, sts);
		CHECK(rc == MPI_ERR_IN_STATUS && sts[0].MPI_ERROR == MPI_ERR_TRUNCATE && sts[1].MPI_ERROR == MPI_SUCCESS,
		      "Waitall on a truncation: %d, %d/%d", rc, sts[0].MPI_ERROR, sts[1].MPI_ERROR);
		OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
	}
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));

	/* large: over 4 MiB, so cut in two fragments, around the ring, synchronous too */
	{
		int n = (1 << 20) + 4099; /* ints: 4 MiB and 16 KiB */
		int *a = malloc(n * sizeof(int)), *b = malloc(n * sizeof(int));
		fill(a, n, me);
		MPI_Request r[2];
		OK(MPI_Irecv(b, n, MPI_INT, left, 20, MPI_COMM_WORLD, &r[0]));
		OK(MPI_Issend(a, n, MPI_INT, right, 20, MPI_COMM_WORLD, &r[1]));
		OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
		CHECK(same(b, n, left), "large message from %d damaged", left);
		/* probe sees the whole size */
		OK(MPI_Send(a, n, MPI_INT, right, 21, MPI_COMM_WORLD));
		OK(MPI_Probe(left, 21, MPI_COMM_WORLD, &st));
		int cnt;
		MPI_Get_count(&st, MPI_INT, &cnt);
		CHECK(cnt == n, "Probe of a large message: %d ints", cnt);
		memset(b, 0, n * sizeof(int));
		OK(MPI_Recv(b, n, MPI_INT, left, 21, MPI_COMM_WORLD, &st));
		CHECK(same(b, n, left), "probed large message from %d damaged", left);
		free(a);
		free(b);
	}

	/* Sendrecv_replace around the ring */
	fill(buf, 64, me);
	OK(MPI_Sendrecv_replace(buf, 64, MPI_INT, right, 30, left, 30, MPI_COMM_WORLD, &st));
	CHECK(same(buf, 64, left) && st.MPI_SOURCE == left, "Sendrecv_replace");

	/* Waitany / Waitsome / Testany / Testall / Test */
	{
		enum { K = 4 };
		MPI_Request rs[K];
		int vals[K];
		for (int i = 0; i < K; i++)
			OK(MPI_Irecv(&vals[i], 1, MPI_INT, left, 40 + i, MPI_COMM_WORLD, &rs[i]));
		for (int i = K - 1; i >= 0; i--) {
			int v = me * 100 + i;
			OK(MPI_Send(&v, 1, MPI_INT, right, 40 + i, MPI_COMM_WORLD));
		}
		int done = 0, idx, flag;
		OK(MPI_Waitany(K, rs, &idx, &st));
		CHECK(idx >= 0 && idx < K && rs[idx] == MPI_REQUEST_NULL && vals[idx] == left * 100 + idx, "Waitany idx %d", idx);
		done++;
		while (done < K) {
			int out, ids[K];
			OK(MPI_Waitsome(K, rs, &out, ids, MPI_STATUSES_IGNORE));
			CHECK(out >= 1, "Waitsome gave %d", out);
			for (int j = 0; j < out; j++)
				CHECK(vals[ids[j]] == left * 100 + ids[j], "Waitsome value");
			done += out;
		}
		OK(MPI_Waitany(K, rs, &idx, &st));
		CHECK(idx == MPI_UNDEFINED, "Waitany on nothing gave %d", idx);
		OK(MPI_Testall(K, rs, &flag, MPI_STATUSES_IGNORE));
		CHECK(flag, "Testall on nothing");

		MPI_Request r;
		int v = -1;
		OK(MPI_Irecv(&v, 1, MPI_INT, left, 50, MPI_COMM_WORLD, &r));
		OK(MPI_Test(&r, &flag, &st));
		CHECK(!flag, "Test completed a receive nobody sent");
		OK(MPI_Barrier(MPI_COMM_WORLD));
		int w = me;
		OK(MPI_Send(&w, 1, MPI_INT, right, 50, MPI_COMM_WORLD));
		do
			OK(MPI_Testany(1, &r, &idx, &flag, &st));
		while (!flag);
		CHECK(idx == 0 && v == left, "Testany: %d %d", idx, v);
	}

	/* Request_free on a send and on a receive that completes later */
	{
		MPI_Request r;
		int v = me;
		OK(MPI_Isend(&v, 1, MPI_INT, right, 60, MPI_COMM_WORLD, &r));
		OK(MPI_Request_free(&r));
		CHECK(r == MPI_REQUEST_NULL, "Request_free left %#x", r);
		int w = -1;
		OK(MPI_Recv(&w, 1, MPI_INT, left, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		CHECK(w == left, "after Request_free: %d", w);
	}

	/* persistent requests: a ring exchange started three times (Startall, Waitall),
	 * a synchronous one with Start/Wait, Testany on inactive ones, Request_free */
	{
		int out = 0, in = -1, sout = 0, sin = -1;
		MPI_Request pr[2], ps[2];
		OK(MPI_Recv_init(&in, 1, MPI_INT, left, 80, MPI_COMM_WORLD, &pr[0]));
		OK(MPI_Send_init(&out, 1, MPI_INT, right, 80, MPI_COMM_WORLD, &pr[1]));
		OK(MPI_Recv_init(&sin, 1, MPI_INT, left, 81, MPI_COMM_WORLD, &ps[0]));
		OK(MPI_Ssend_init(&sout, 1, MPI_INT, right, 81, MPI_COMM_WORLD, &ps[1]));
		for (int it = 0; it < 3; it++) {
			out = me * 10 + it;
			OK(MPI_Startall(2, pr));
			OK(MPI_Waitall(2, pr, MPI_STATUSES_IGNORE));
			CHECK(in == left * 10 + it && pr[0] != MPI_REQUEST_NULL, "persistent iteration %d: got %d", it, in);
			sout = me + 100 * it;
			OK(MPI_Start(&ps[0]));
			OK(MPI_Start(&ps[1]));
			OK(MPI_Wait(&ps[1], MPI_STATUS_IGNORE));
			OK(MPI_Wait(&ps[0], &st));
			CHECK(sin == left + 100 * it && st.MPI_SOURCE == left && st.MPI_TAG == 81, "persistent Ssend %d: %d", it, sin);
		}
		int idx, flag;
		OK(MPI_Testany(2, pr, &idx, &flag, MPI_STATUS_IGNORE));
		CHECK(flag && idx == MPI_UNDEFINED, "Testany on inactive persistent requests: %d %d", flag, idx);
		OK(MPI_Wait(&pr[0], MPI_STATUS_IGNORE)); /* inactive: returns at once */
		for (int i = 0; i < 2; i++) {
			OK(MPI_Request_free(&pr[i]));
			OK(MPI_Request_free(&ps[i]));
		}
		CHECK(pr[0] == MPI_REQUEST_NULL && ps[1] == MPI_REQUEST_NULL, "Request_free of persistent requests");
	}

	/* Iprobe polling, then receive what was probed */
	{
		int v = me + 1000, flag = 0;
		OK(MPI_Send(&v, 1, MPI_INT, right, 70, MPI_COMM_WORLD));
		while (!flag)
			OK(MPI_Iprobe(MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &flag, &st));
		CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 70, "Iprobe status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
		int w;
		OK(MPI_Recv(&w, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		CHECK(w == left + 1000, "probed message %d", w);
		OK(MPI_Iprobe(MPI_ANY_SOURCE, 70, MPI_COMM_WORLD, &flag, &st));
		CHECK(!flag, "Iprobe found a message already received");
	}
	DONE();
}
