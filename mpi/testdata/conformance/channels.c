/* Same-node channels (comm/relay/channels.go, mpi/src/chan.c) beside the
 * relay: placed over two nodes, some pairs of ranks talk over a channel
 * and others through the relays, and rank 0's wildcard receives and probes
 * must see both, in MPI's per-source order, with large messages (larger
 * than a socket's buffer and than a fragment) among small ones, plus
 * large non-blocking sends head to head, Ssend, Iprobe, Sendrecv and
 * messages to itself. */
#include "check.h"

#define BIG (9 << 20) /* bytes: three fragments, more than a socket buffer */
#define ROUNDS 12

static unsigned char *big;

static void fill(unsigned char *b, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 31 + i * 7 + (i >> 12));
}

static int same(const unsigned char *b, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != (unsigned char)(seed * 31 + i * 7 + (i >> 12)))
			return 0;
	return 1;
}

/* msg_size: round k of a sender: mostly small, some large */
static size_t msg_size(int k) { return k % 5 == 3 ? BIG : k % 3 == 1 ? 70000 : 16; }

int main(int argc, char **argv)
{
	int size;
	MPI_Status st;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	big = malloc(BIG);
	unsigned char *in = malloc(BIG);
	CHECK(big && in, "out of memory");

	/* 1. every other rank sends ROUNDS messages to rank 0 (sizes mixed,
	 * two tags); rank 0 takes them with wildcard receives, probes and
	 * specific receives, interleaved: per source, in order */
	if (me == 0) {
		int *next = calloc(size, sizeof(int));
		int left = (size - 1) * ROUNDS;
		for (int i = 0; left > 0; i++) {
			int src, tag, cnt;
			switch (i % 3) {
			case 0: /* wildcard receive */
				OK(MPI_Recv(in, BIG, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
				src = st.MPI_SOURCE;
				tag = st.MPI_TAG;
				break;
			case 1: /* wildcard probe, then the exact receive */
				OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
				src = st.MPI_SOURCE;
				tag = st.MPI_TAG;
				OK(MPI_Get_count(&st, MPI_BYTE, &cnt));
				CHECK((size_t)cnt == msg_size(next[src]), "probe of %d's message %d: %d bytes", src, next[src], cnt);
				OK(MPI_Recv(in, BIG, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st));
				break;
			default: { /* a specific source that still owes something */
				src = 1 + i % (size - 1);
				while (next[src] == ROUNDS)
					src = 1 + src % (size - 1);
				MPI_Request r;
				OK(MPI_Irecv(in, BIG, MPI_BYTE, src, MPI_ANY_TAG, MPI_COMM_WORLD, &r));
				OK(MPI_Wait(&r, &st));
				tag = st.MPI_TAG;
				CHECK(st.MPI_SOURCE == src, "receive from %d got %d's", src, st.MPI_SOURCE);
			}
			}
			OK(MPI_Get_count(&st, MPI_BYTE, &cnt));
			int k = next[src]++;
			CHECK(tag == 10 + k % 2, "message %d from %d has tag %d", k, src, tag);
			CHECK((size_t)cnt == msg_size(k), "message %d from %d: %d bytes, not %zu", k, src, cnt, msg_size(k));
			CHECK(same(in, cnt, src * 100 + k), "message %d from %d: wrong bytes", k, src);
			left--;
		}
		for (int s = 1; s < size; s++)
			CHECK(next[s] == ROUNDS, "%d messages from %d", next[s], s);
		free(next);
	} else {
		for (int k = 0; k < ROUNDS; k++) {
			fill(big, msg_size(k), me * 100 + k);
			OK(MPI_Send(big, (int)msg_size(k), MPI_BYTE, 0, 10 + k % 2, MPI_COMM_WORLD));
		}
	}
	OK(MPI_Barrier(MPI_COMM_WORLD));

	/* 2. large non-blocking sends head to head around a ring, and back */
	{
		int right = (me + 1) % size, left = (me + size - 1) % size;
		MPI_Request r[2];
		fill(big, BIG, me);
		OK(MPI_Isend(big, BIG, MPI_BYTE, right, 20, MPI_COMM_WORLD, &r[0]));
		OK(MPI_Isend(big, BIG / 2, MPI_BYTE, left, 21, MPI_COMM_WORLD, &r[1]));
		OK(MPI_Recv(in, BIG, MPI_BYTE, left, 20, MPI_COMM_WORLD, &st));
		CHECK(same(in, BIG, left), "ring message from %d", left);
		OK(MPI_Recv(in, BIG, MPI_BYTE, right, 21, MPI_COMM_WORLD, &st));
		CHECK(same(in, BIG / 2, right), "back message from %d", right);
		OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
	}

	/* 3. Ssend completes when matched, the receive posted late; Iprobe
	 * of a specific source finds it */
	if (size >= 3 && me < 3) {
		int v = 42 + me;
		if (me > 0)
			OK(MPI_Ssend(&v, 1, MPI_INT, 0, 29 + me, MPI_COMM_WORLD));
		else {
			for (int s = 1; s <= 2; s++) {
				int flag = 0;
				while (!flag)
					OK(MPI_Iprobe(s, 29 + s, MPI_COMM_WORLD, &flag, &st));
				OK(MPI_Recv(&v, 1, MPI_INT, s, 29 + s, MPI_COMM_WORLD, &st));
				CHECK(v == 42 + s, "Ssend from %d: %d", s, v);
			}
		}
	}

	/* 4. Sendrecv with every other rank, wildcard source on the receive */
	for (int d = 1; d < size; d++) {
		int to = (me + d) % size, from = (me + size - d) % size, out = me * 1000 + d, got = -1;
		OK(MPI_Sendrecv(&out, 1, MPI_INT, to, 40 + d, &got, 1, MPI_INT, MPI_ANY_SOURCE, 40 + d, MPI_COMM_WORLD, &st));
		CHECK(got == from * 1000 + d && st.MPI_SOURCE == from, "sendrecv %d: %d from %d", d, got, st.MPI_SOURCE);
	}
	/* 5. to itself, a wildcard receive and a synchronous send (with
	 * channels, handed over in memory) */
	{
		int v = 7 * me, got = -1;
		MPI_Request r;
		OK(MPI_Issend(&v, 1, MPI_INT, me, 50, MPI_COMM_WORLD, &r));
		OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 50, MPI_COMM_WORLD, &st));
		OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		CHECK(got == 7 * me && st.MPI_SOURCE == me, "to itself: %d from %d", got, st.MPI_SOURCE);
		fill(big, BIG, me + 5);
		OK(MPI_Isend(big, BIG, MPI_BYTE, me, 51, MPI_COMM_WORLD, &r));
		OK(MPI_Recv(in, BIG, MPI_BYTE, me, 51, MPI_COMM_WORLD, &st));
		OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
		CHECK(same(in, BIG, me + 5), "large message to itself");
	}
	free(big);
	free(in);
	DONE();
}
