/* Collectives. Each call on a communicator is announced to the relay
 * (Coll, protocol 2: its number, kind, root and this rank's bytes), then
 * its data travel as ordinary messages in the communicator's collective
 * context, tagged with the call's number, so they never match a user
 * receive and two calls never mix.
 *
 * Two families of algorithms, chosen once at MPI_Init (coll_init) and
 * identically on every rank, since the mode is the cluster's:
 *
 *  - tree (immediate delivery: space, gang, local): linear gathers to the
 *    root and a binomial broadcast; Allreduce is a reduce then a
 *    broadcast, Scan a chain. Few messages; the extra dependent steps cost
 *    a relay hop each, microseconds.
 *  - direct (bcs): under buffered coscheduling a message sent in slice k
 *    is delivered at slice k's end, so every dependent step costs a whole
 *    slice. As in the BCS paper, every rank sends its contribution to
 *    every rank that needs it in the same slice, and each completes
 *    locally after the strobe: one slice per collective. More messages
 *    (n(n-1) for Allreduce), which the slice's exchange carries together.
 *
 * Either way reductions combine the contributions in rank order 0..n-1
 * (a0 op (a1 op (... op a(n-1)))), so non-commutative ops are right and
 * every rank of an Allreduce gets bit-identical results, floats too.
 * Barriers of a communicator spanning the whole job use the relay's own
 * barrier (Arrive/Release), which under bcs completes in one slice's
 * exchange as well. */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

#define CCTX(c) (3 + 2 * (c)->k)

static struct dtype *bytetype(void) { return dt_get(MPI_BYTE); }

int coll_begin(struct comm *c, const char *kind, int root, int64_t bytes)
{
	c->coll_seq++;
	send_coll(c, kind, root, bytes);
	return (int)(c->coll_seq & 0x7fffffff);
}

static void xmalloc_fail(void) { cmpi_die(1, "out of memory"); }

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		xmalloc_fail();
	return p;
}

/* Allreduce goes direct while what a rank sends, its contribution times
 * n-1, stays under this; above it the n-fold traffic costs more slices at
 * h_max than the two steps of reduce + direct broadcast do. */
#define DIRECT_ALLREDUCE_MAX (1 << 20)

/* coll_init picks the algorithms. Every rank must pick alike: the job's
 * mode comes from the controller in COSCHED_MODE (one value for the whole
 * job); the relay's Welcome ("bcs" or "immediate") is the fallback for
 * ranks started without it (older agents, tests with relays only). */
void coll_init(void)
{
	const char *e = getenv("COSCHED_MPI_COLL"), *mode = getenv("COSCHED_MODE");
	if (!mode || !*mode)
		mode = G.mode;
	if (!e || !*e)
		G.coll_direct = strcmp(mode, "bcs") == 0;
	else if (!strcmp(e, "direct"))
		G.coll_direct = 1;
	else if (!strcmp(e, "tree"))
		G.coll_direct = 0;
	else
		cmpi_die(1, "COSCHED_MPI_COLL=%.40s: want direct or tree (unset: direct under bcs, else tree)", e);
}

/* finish_reqs waits for rs and frees them; a message longer than its
 * receive (counts that differ between ranks) is MPI_ERR_TRUNCATE. */
static int finish_reqs(struct comm *c, const char *fn, struct req **rs, int n)
{
	wait_reqs(rs, n, 0);
	int err = 0;
	for (int i = 0; i < n; i++) {
		if (!rs[i])
			continue;
		if (rs[i]->st.MPI_ERROR)
			err = rs[i]->st.MPI_ERROR;
		req_free(rs[i]);
	}
	if (err)
		return cmpi_err(c, err, fn, "a rank contributed more data than this one expects");
	return MPI_SUCCESS;
}

static int recv1(struct comm *c, const char *fn, int src, int tag, void *p, size_t n)
{
	struct req *r = p2p_irecv(c, src, tag, CCTX(c), p, (int)n, bytetype());
	return finish_reqs(c, fn, &r, 1);
}

static void bcast_packed(struct comm *c, int tag, uint8_t *p, size_t n, int root, const char *fn)
{
	int size = c->size, vr = (c->rank - root + size) % size, mask = 1;
	while (mask < size) {
		if (vr & mask) {
			recv1(c, fn, (vr - mask + root) % size, tag, p, n);
			break;
		}
		mask <<= 1;
	}
	mask >>= 1;
	while (mask > 0) {
		if (vr + mask < size)
			p2p_send_bytes(c, (vr + mask + root) % size, tag, CCTX(c), p, n);
		mask >>= 1;
	}
}

/* bcast_direct: the root sends to every rank itself (one step). */
static void bcast_direct(struct comm *c, int tag, uint8_t *p, size_t n, int root, const char *fn)
{
	if (c->rank != root) {
		recv1(c, fn, root, tag, p, n);
		return;
	}
	for (int i = 0; i < c->size; i++)
		if (i != root)
			p2p_send_bytes(c, i, tag, CCTX(c), p, n);
}

static void bcast_any(struct comm *c, int tag, uint8_t *p, size_t n, int root, const char *fn)
{
	if (G.coll_direct)
		bcast_direct(c, tag, p, n, root, fn);
	else
		bcast_packed(c, tag, p, n, root, fn);
}

/* reduce_local: out = a0 op (a1 op (... op a(k-1))) of the k contributions
 * at all, n bytes apart: the rank order every algorithm here uses. */
void coll_reduce_local(const uint8_t *all, int k, size_t n, uint8_t *out, int count, struct dtype *d, MPI_Op op)
{
	if (k <= 0)
		return;
	memcpy(out, all + (size_t)(k - 1) * n, n);
	for (int i = k - 2; i >= 0; i--)
		op_apply(op, d, count, all + (size_t)i * n, out);
}

/* exchange: every rank sends mine (myn bytes) to every rank in [to0, to1)
 * but itself and receives from every rank in [from0, from1) but itself
 * sizes[i] bytes at all + offs[i]; its own part is copied to all +
 * offs[me] when me is in [from0, from1). One step: the direct algorithms'
 * core. */
static int exchange(struct comm *c, int tag, const uint8_t *mine, size_t myn, int to0, int to1, uint8_t *all,
		    const size_t *sizes, const size_t *offs, int from0, int from1, const char *fn)
{
	struct req **rs = xmalloc(c->size * sizeof *rs);
	for (int i = 0; i < c->size; i++)
		rs[i] = i == c->rank || i < from0 || i >= from1
			    ? NULL
			    : p2p_irecv(c, i, tag, CCTX(c), all + offs[i], (int)sizes[i], bytetype());
	/* start after this rank, so not every rank sends to rank 0 first */
	for (int k = 1; k < c->size; k++) {
		int i = (c->rank + k) % c->size;
		if (i >= to0 && i < to1)
			p2p_send_bytes(c, i, tag, CCTX(c), mine, myn);
	}
	if (c->rank >= from0 && c->rank < from1 && myn)
		memcpy(all + offs[c->rank], mine, myn < sizes[c->rank] ? myn : sizes[c->rank]);
	int rc = finish_reqs(c, fn, rs, c->size);
	free(rs);
	return rc;
}

/* reduce_packed: root gets in op-order a0 op a1 op … op a(n-1) into out. */
static int reduce_packed(struct comm *c, int tag, const uint8_t *in, uint8_t *out, int count, struct dtype *d,
			 MPI_Op op, int root, const char *fn)
{
	size_t n = (size_t)count * d->size;
	if (c->rank != root) {
		p2p_send_bytes(c, root, tag, CCTX(c), in, n);
		return MPI_SUCCESS;
	}
	uint8_t *all = xmalloc(n * c->size);
	struct req **rs = xmalloc(c->size * sizeof *rs);
	for (int i = 0; i < c->size; i++)
		rs[i] = i == root ? NULL : p2p_irecv(c, i, tag, CCTX(c), all + i * n, (int)n, bytetype());
	memcpy(all + root * n, in, n);
	int rc = finish_reqs(c, fn, rs, c->size);
	free(rs);
	if (rc) {
		free(all);
		return rc;
	}
	coll_reduce_local(all, c->size, n, out, count, d, op);
	free(all);
	return MPI_SUCCESS;
}

/* allreduce_direct: every rank sends its contribution to every other and
 * reduces all of them locally, in rank order: one step. */
static int allreduce_direct(struct comm *c, int tag, const uint8_t *in, uint8_t *out, int count, struct dtype *d,
			    MPI_Op op, const char *fn)
{
	size_t n = (size_t)count * d->size;
	uint8_t *all = xmalloc(n * c->size);
	size_t *sizes = xmalloc(c->size * sizeof *sizes), *offs = xmalloc(c->size * sizeof *offs);
	for (int i = 0; i < c->size; i++) {
		sizes[i] = n;
		offs[i] = (size_t)i * n;
	}
	int rc = exchange(c, tag, in, n, 0, c->size, all, sizes, offs, 0, c->size, fn);
	if (!rc)
		coll_reduce_local(all, c->size, n, out, count, d, op);
	free(sizes);
	free(offs);
	free(all);
	return rc;
}

#define OPARG(fn, c, op, d)                                                                        \
	if (op_check(op, d))                                                                       \
		return cmpi_err(c, MPI_ERR_OP, fn, "op %#x on datatype %#x", (unsigned)(op), (unsigned)(d)->handle);

int coll_barrier(struct comm *c)
{
	int tag = coll_begin(c, "barrier", -1, 0);
	if (c->size == G.size) {
		/* the relay's barrier: it knows the rank waits, and under bcs
		 * completes it in the slice's exchange */
		struct buf b = {0};
		mp_map(&b, 1);
		mp_str(&b, "s");
		mp_uint(&b, ++G.barrier_seq);
		conn_write(FR_ARRIVE, &b);
		free(b.p);
		while (G.released < G.barrier_seq)
			pump(1);
		return MPI_SUCCESS;
	}
	uint8_t z = 0;
	if (G.coll_direct) {
		/* every rank tells every other it is here: one step */
		size_t *zs = xmalloc(c->size * sizeof *zs);
		memset(zs, 0, c->size * sizeof *zs);
		int rc = exchange(c, tag, &z, 0, 0, c->size, &z, zs, zs, 0, c->size, "MPI_Barrier");
		free(zs);
		return rc;
	}
	if (c->rank == 0) {
		struct req **rs = xmalloc(c->size * sizeof *rs);
		for (int i = 0; i < c->size; i++)
			rs[i] = i == 0 ? NULL : p2p_irecv(c, i, tag, CCTX(c), &z, 0, bytetype());
		int rc = finish_reqs(c, "MPI_Barrier", rs, c->size);
		free(rs);
		if (rc)
			return rc;
	} else
		p2p_send_bytes(c, 0, tag, CCTX(c), &z, 0);
	bcast_packed(c, tag, &z, 0, 0, "MPI_Barrier");
	return MPI_SUCCESS;
}

int MPI_Barrier(MPI_Comm comm)
{
	COMMARG("MPI_Barrier", comm, c);
	return coll_barrier(c);
}

int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
	COMMARG("MPI_Bcast", comm, c);
	TYPEARG("MPI_Bcast", c, datatype, d, count);
	ROOTARG("MPI_Bcast", c, root);
	size_t n = (size_t)count * d->size;
	int tag = coll_begin(c, "bcast", root, c->rank == root ? (int64_t)n : 0);
	if (d->contig) {
		bcast_any(c, tag, buffer, n, root, "MPI_Bcast");
		return MPI_SUCCESS;
	}
	uint8_t *p = xmalloc(n);
	if (c->rank == root)
		dt_pack(buffer, count, d, p);
	bcast_any(c, tag, p, n, root, "MPI_Bcast");
	if (c->rank != root)
		dt_unpack(p, count, d, buffer);
	free(p);
	return MPI_SUCCESS;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
	       MPI_Comm comm)
{
	COMMARG("MPI_Reduce", comm, c);
	TYPEARG("MPI_Reduce", c, datatype, d, count);
	ROOTARG("MPI_Reduce", c, root);
	OPARG("MPI_Reduce", c, op, d);
	size_t n = (size_t)count * d->size;
	int tag = coll_begin(c, "reduce", root, (int64_t)n);
	uint8_t *in = xmalloc(n), *out = xmalloc(n);
	dt_pack(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, d, in);
	int rc = reduce_packed(c, tag, in, out, count, d, op, root, "MPI_Reduce");
	if (!rc && c->rank == root)
		dt_unpack(out, count, d, recvbuf);
	free(in);
	free(out);
	return rc;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	COMMARG("MPI_Allreduce", comm, c);
	TYPEARG("MPI_Allreduce", c, datatype, d, count);
	OPARG("MPI_Allreduce", c, op, d);
	size_t n = (size_t)count * d->size;
	int tag = coll_begin(c, "allreduce", -1, (int64_t)n);
	uint8_t *in = xmalloc(n), *out = xmalloc(n);
	dt_pack(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, d, in);
	int rc;
	if (G.coll_direct && n * (size_t)(c->size - 1) <= DIRECT_ALLREDUCE_MAX) {
		rc = allreduce_direct(c, tag, in, out, count, d, op, "MPI_Allreduce");
		if (!rc)
			dt_unpack(out, count, d, recvbuf);
	} else {
		rc = reduce_packed(c, tag, in, out, count, d, op, 0, "MPI_Allreduce");
		if (!rc) {
			bcast_any(c, tag, out, n, 0, "MPI_Allreduce");
			dt_unpack(out, count, d, recvbuf);
		}
	}
	free(in);
	free(out);
	return rc;
}

/* gatherv_packed: root receives each rank's packed bytes (sizes[i]) at
 * offs[i] of all. */
static int gatherv_packed(struct comm *c, int tag, const uint8_t *mine, size_t myn, uint8_t *all, const size_t *sizes,
			  const size_t *offs, int root, const char *fn)
{
	if (c->rank != root) {
		p2p_send_bytes(c, root, tag, CCTX(c), mine, myn);
		return MPI_SUCCESS;
	}
	struct req **rs = xmalloc(c->size * sizeof *rs);
	for (int i = 0; i < c->size; i++)
		rs[i] = i == root ? NULL : p2p_irecv(c, i, tag, CCTX(c), all + offs[i], (int)sizes[i], bytetype());
	if (mine)
		memcpy(all + offs[root], mine, myn < sizes[root] ? myn : sizes[root]);
	int rc = finish_reqs(c, fn, rs, c->size);
	free(rs);
	return rc;
}

static int gatherv(const char *fn, const char *kind, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		   void *recvbuf, const int *recvcounts, const int *displs, int rcount, MPI_Datatype recvtype, int root,
		   MPI_Comm comm, int all)
{
	COMMARG(fn, comm, c);
	if (!all)
		ROOTARG(fn, c, root);
	int isroot = all || c->rank == root;
	int inplace = sendbuf == MPI_IN_PLACE;
	struct dtype *sd = NULL, *rd = NULL;
	if (!inplace || !isroot) {
		TYPEARG(fn, c, sendtype, s, sendcount);
		sd = s;
	}
	if (isroot) {
		TYPEARG(fn, c, recvtype, r, recvcounts ? 0 : rcount);
		rd = r;
		if (recvcounts)
			for (int i = 0; i < c->size; i++)
				if (recvcounts[i] < 0)
					return cmpi_err(c, MPI_ERR_COUNT, fn, "count %d for rank %d", recvcounts[i], i);
	}
	/* every rank needs every count for allgatherv's broadcast; they are
	 * arguments everywhere then */
	size_t *sizes = xmalloc(c->size * sizeof *sizes), *offs = xmalloc(c->size * sizeof *offs), tot = 0;
	MPI_Aint rext = rd ? rd->ub - rd->lb : 0;
	for (int i = 0; i < c->size; i++) {
		int cnt = recvcounts ? recvcounts[i] : rcount;
		sizes[i] = rd ? (size_t)cnt * rd->size : 0;
		offs[i] = tot;
		tot += sizes[i];
	}
	size_t myn = inplace && isroot ? sizes[c->rank] : (size_t)sendcount * sd->size;
	int tag = coll_begin(c, kind, all ? -1 : root, (int64_t)myn);
	uint8_t *mine = xmalloc(myn);
	if (inplace && isroot) {
		int cnt = recvcounts ? recvcounts[c->rank] : rcount;
		MPI_Aint disp = displs ? displs[c->rank] : (MPI_Aint)c->rank * rcount;
		dt_pack((uint8_t *)recvbuf + disp * rext, cnt, rd, mine);
	} else
		dt_pack(sendbuf, sendcount, sd, mine);
	uint8_t *packed = isroot ? xmalloc(tot) : NULL;
	int rc;
	if (all && G.coll_direct)
		rc = exchange(c, tag, mine, myn, 0, c->size, packed, sizes, offs, 0, c->size, fn);
	else {
		rc = gatherv_packed(c, tag, mine, myn, packed, sizes, offs, all ? 0 : root, fn);
		if (!rc && all)
			bcast_packed(c, tag, packed, tot, 0, fn);
	}
	if (!rc && isroot)
		for (int i = 0; i < c->size; i++) {
			int cnt = recvcounts ? recvcounts[i] : rcount;
			MPI_Aint disp = displs ? displs[i] : (MPI_Aint)i * rcount;
			dt_unpack(packed + offs[i], cnt, rd, (uint8_t *)recvbuf + disp * rext);
		}
	free(mine);
	free(packed);
	free(sizes);
	free(offs);
	return rc;
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
	       MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	return gatherv("MPI_Gather", "gather", sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype,
		       root, comm, 0);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	struct comm *c = comm_get(comm);
	static const int zero = 0;
	/* recvcounts matter at the root only */
	if (c && c->rank != root && root >= 0 && root < c->size)
		return gatherv("MPI_Gatherv", "gatherv", sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, zero,
			       recvtype, root, comm, 0);
	return gatherv("MPI_Gatherv", "gatherv", sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
		       recvtype, root, comm, 0);
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		  MPI_Datatype recvtype, MPI_Comm comm)
{
	return gatherv("MPI_Allgather", "allgather", sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount,
		       recvtype, 0, comm, 1);
}

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		   const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
	return gatherv("MPI_Allgatherv", "allgatherv", sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
		       recvtype, 0, comm, 1);
}

int coll_allgather_ints(struct comm *c, const int *mine, int n, int *all)
{
	int tag = coll_begin(c, "allgather", -1, (int64_t)n * 4);
	size_t *sizes = xmalloc(c->size * sizeof *sizes), *offs = xmalloc(c->size * sizeof *offs);
	for (int i = 0; i < c->size; i++) {
		sizes[i] = (size_t)n * sizeof(int);
		offs[i] = (size_t)i * n * sizeof(int);
	}
	int rc;
	if (G.coll_direct)
		rc = exchange(c, tag, (const uint8_t *)mine, n * sizeof(int), 0, c->size, (uint8_t *)all, sizes, offs,
			      0, c->size, "MPI_Comm_create");
	else {
		rc = gatherv_packed(c, tag, (const uint8_t *)mine, n * sizeof(int), (uint8_t *)all, sizes, offs, 0,
				    "MPI_Comm_create");
		if (!rc)
			bcast_packed(c, tag, (uint8_t *)all, (size_t)n * sizeof(int) * c->size, 0, "MPI_Comm_create");
	}
	free(sizes);
	free(offs);
	return rc;
}

static int scatterv(const char *fn, const char *kind, const void *sendbuf, const int *sendcounts, const int *displs,
		    int scount, MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
		    MPI_Comm comm)
{
	COMMARG(fn, comm, c);
	ROOTARG(fn, c, root);
	int isroot = c->rank == root, inplace = isroot && recvbuf == MPI_IN_PLACE;
	struct dtype *sd = NULL, *rd = NULL;
	if (isroot) {
		TYPEARG(fn, c, sendtype, s, sendcounts ? 0 : scount);
		sd = s;
		if (sendcounts)
			for (int i = 0; i < c->size; i++)
				if (sendcounts[i] < 0)
					return cmpi_err(c, MPI_ERR_COUNT, fn, "count %d for rank %d", sendcounts[i], i);
	}
	if (!inplace) {
		TYPEARG(fn, c, recvtype, r, recvcount);
		rd = r;
	}
	size_t myn = inplace ? 0 : (size_t)recvcount * rd->size;
	int tag = coll_begin(c, kind, root, isroot ? 0 : 0);
	if (!isroot) {
		uint8_t *p = xmalloc(myn);
		int rc = recv1(c, fn, root, tag, p, myn);
		if (!rc)
			dt_unpack(p, recvcount, rd, recvbuf);
		free(p);
		return rc;
	}
	MPI_Aint sext = sd->ub - sd->lb;
	for (int i = 0; i < c->size; i++) {
		int cnt = sendcounts ? sendcounts[i] : scount;
		MPI_Aint disp = displs ? displs[i] : (MPI_Aint)i * scount;
		size_t n = (size_t)cnt * sd->size;
		uint8_t *p = xmalloc(n);
		dt_pack((const uint8_t *)sendbuf + disp * sext, cnt, sd, p);
		if (i != root)
			p2p_send_bytes(c, i, tag, CCTX(c), p, n);
		else if (!inplace) {
			if (n > myn) {
				free(p);
				return cmpi_err(c, MPI_ERR_TRUNCATE, fn, "root's own part of %zu bytes into %zu", n, myn);
			}
			dt_unpack(p, rd->size ? (int)(n / rd->size) : 0, rd, recvbuf);
		}
		free(p);
	}
	return MPI_SUCCESS;
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	return scatterv("MPI_Scatter", "scatter", sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcount,
			recvtype, root, comm);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
		 void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
	return scatterv("MPI_Scatterv", "scatterv", sendbuf, sendcounts, displs, 0, sendtype, recvbuf, recvcount,
			recvtype, root, comm);
}

static int alltoallv(const char *fn, const char *kind, const void *sendbuf, const int *scounts, const int *sdispls,
		     int scount, MPI_Datatype sendtype, void *recvbuf, const int *rcounts, const int *rdispls,
		     int rcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	COMMARG(fn, comm, c);
	int inplace = sendbuf == MPI_IN_PLACE;
	TYPEARG(fn, c, recvtype, rd, rcounts ? 0 : rcount);
	struct dtype *sd = rd;
	if (!inplace) {
		TYPEARG(fn, c, sendtype, s, scounts ? 0 : scount);
		sd = s;
	}
	int p = c->size;
	for (int i = 0; i < p; i++)
		if ((scounts && !inplace && scounts[i] < 0) || (rcounts && rcounts[i] < 0))
			return cmpi_err(c, MPI_ERR_COUNT, fn, "a negative count for rank %d", i);
	MPI_Aint sext = sd->ub - sd->lb, rext = rd->ub - rd->lb;
	size_t *rs = xmalloc(p * sizeof *rs), *ro = xmalloc(p * sizeof *ro), rtot = 0, stot = 0;
	for (int i = 0; i < p; i++) {
		rs[i] = (size_t)(rcounts ? rcounts[i] : rcount) * rd->size;
		ro[i] = rtot;
		rtot += rs[i];
		if (!inplace)
			stot += (size_t)(scounts ? scounts[i] : scount) * sd->size;
	}
	int tag = coll_begin(c, kind, -1, (int64_t)(inplace ? rtot : stot));
	uint8_t *in = xmalloc(rtot);
	/* in place: what is sent is the receive buffer's own content, packed before anything arrives */
	uint8_t *out = NULL;
	if (inplace) {
		out = xmalloc(rtot);
		for (int i = 0; i < p; i++)
			dt_pack((uint8_t *)recvbuf + (rdispls ? rdispls[i] : (MPI_Aint)i * rcount) * rext,
				rcounts ? rcounts[i] : rcount, rd, out + ro[i]);
	}
	struct req **reqs = xmalloc(p * sizeof *reqs);
	for (int k = 0; k < p; k++) {
		int i = (c->rank + k) % p;
		reqs[i] = i == c->rank ? NULL : p2p_irecv(c, i, tag, CCTX(c), in + ro[i], (int)rs[i], bytetype());
	}
	for (int k = 0; k < p; k++) {
		int i = (c->rank + k) % p;
		const uint8_t *src;
		size_t n;
		uint8_t *tmp = NULL;
		if (inplace) {
			src = out + ro[i];
			n = rs[i];
		} else {
			int cnt = scounts ? scounts[i] : scount;
			n = (size_t)cnt * sd->size;
			tmp = xmalloc(n);
			dt_pack((const uint8_t *)sendbuf + (sdispls ? sdispls[i] : (MPI_Aint)i * scount) * sext, cnt, sd, tmp);
			src = tmp;
		}
		if (i == c->rank) {
			if (n > rs[i]) {
				free(tmp);
				return cmpi_err(c, MPI_ERR_TRUNCATE, fn, "own part of %zu bytes into %zu", n, rs[i]);
			}
			memcpy(in + ro[i], src, n);
		} else
			p2p_send_bytes(c, i, tag, CCTX(c), src, n);
		free(tmp);
	}
	int rc = finish_reqs(c, fn, reqs, p);
	if (!rc)
		for (int i = 0; i < p; i++)
			dt_unpack(in + ro[i], rcounts ? rcounts[i] : rcount, rd,
				  (uint8_t *)recvbuf + (rdispls ? rdispls[i] : (MPI_Aint)i * rcount) * rext);
	free(reqs);
	free(in);
	free(out);
	free(rs);
	free(ro);
	return rc;
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		 MPI_Datatype recvtype, MPI_Comm comm)
{
	return alltoallv("MPI_Alltoall", "alltoall", sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, NULL, NULL,
			 recvcount, recvtype, comm);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
		  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
	return alltoallv("MPI_Alltoallv", "alltoallv", sendbuf, sendcounts, sdispls, 0, sendtype, recvbuf, recvcounts,
			 rdispls, 0, recvtype, comm);
}

/* reduce_scatter_direct: rank i gets block i of every rank's packed
 * contribution in (each rank sends block i to rank i) and reduces them in
 * rank order: one step. */
static int reduce_scatter_direct(struct comm *c, int tag, const uint8_t *in, const int *counts, int bcount,
				 struct dtype *d, MPI_Op op, void *recvbuf, const char *fn)
{
	int p = c->size, mine = counts ? counts[c->rank] : bcount;
	size_t n = (size_t)mine * d->size;
	uint8_t *all = xmalloc(n * p), *out = xmalloc(n);
	struct req **rs = xmalloc(p * sizeof *rs);
	for (int i = 0; i < p; i++)
		rs[i] = i == c->rank ? NULL : p2p_irecv(c, i, tag, CCTX(c), all + (size_t)i * n, (int)n, bytetype());
	size_t *off = xmalloc(p * sizeof *off), o = 0, myoff = 0;
	for (int i = 0; i < p; i++) {
		off[i] = o;
		if (i == c->rank)
			myoff = o;
		o += (size_t)(counts ? counts[i] : bcount) * d->size;
	}
	for (int k = 1; k < p; k++) {
		int i = (c->rank + k) % p;
		p2p_send_bytes(c, i, tag, CCTX(c), in + off[i], (size_t)(counts ? counts[i] : bcount) * d->size);
	}
	memcpy(all + (size_t)c->rank * n, in + myoff, n);
	int rc = finish_reqs(c, fn, rs, p);
	if (!rc) {
		coll_reduce_local(all, p, n, out, mine, d, op);
		dt_unpack(out, mine, d, recvbuf);
	}
	free(off);
	free(rs);
	free(all);
	free(out);
	return rc;
}

static int reduce_scatter(const char *fn, const char *kind, const void *sendbuf, void *recvbuf, const int *counts,
			  int bcount, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	COMMARG(fn, comm, c);
	TYPEARG(fn, c, datatype, d, counts ? 0 : bcount);
	OPARG(fn, c, op, d);
	int p = c->size, total = 0;
	for (int i = 0; i < p; i++) {
		int cnt = counts ? counts[i] : bcount;
		if (cnt < 0)
			return cmpi_err(c, MPI_ERR_COUNT, fn, "count %d for rank %d", cnt, i);
		total += cnt;
	}
	size_t n = (size_t)total * d->size;
	int tag = coll_begin(c, kind, -1, (int64_t)n);
	uint8_t *in = xmalloc(n), *out = xmalloc(n);
	dt_pack(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, total, d, in);
	int mine = counts ? counts[c->rank] : bcount;
	if (G.coll_direct) {
		int rc = reduce_scatter_direct(c, tag, in, counts, bcount, d, op, recvbuf, fn);
		free(in);
		free(out);
		return rc;
	}
	int rc = reduce_packed(c, tag, in, out, total, d, op, 0, fn);
	if (rc) {
		free(in);
		free(out);
		return rc;
	}
	if (c->rank == 0) {
		size_t off = 0;
		for (int i = 0; i < p; i++) {
			size_t len = (size_t)(counts ? counts[i] : bcount) * d->size;
			if (i == 0)
				dt_unpack(out, mine, d, recvbuf);
			else
				p2p_send_bytes(c, i, tag, CCTX(c), out + off, len);
			off += len;
		}
	} else {
		rc = recv1(c, fn, 0, tag, in, (size_t)mine * d->size);
		if (!rc)
			dt_unpack(in, mine, d, recvbuf);
	}
	free(in);
	free(out);
	return rc;
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
		       MPI_Comm comm)
{
	return reduce_scatter("MPI_Reduce_scatter", "reduce_scatter", sendbuf, recvbuf, recvcounts, 0, datatype, op,
			      comm);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
			     MPI_Comm comm)
{
	return reduce_scatter("MPI_Reduce_scatter_block", "reduce_scatter", sendbuf, recvbuf, NULL, recvcount, datatype,
			      op, comm);
}

static int scan(const char *fn, const char *kind, const void *sendbuf, void *recvbuf, int count,
		MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, int ex)
{
	COMMARG(fn, comm, c);
	TYPEARG(fn, c, datatype, d, count);
	OPARG(fn, c, op, d);
	size_t n = (size_t)count * d->size;
	int tag = coll_begin(c, kind, -1, (int64_t)n);
	uint8_t *mine = xmalloc(n), *prev = xmalloc(n), *acc = xmalloc(n);
	dt_pack(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, d, mine);
	int rc = MPI_SUCCESS;
	if (G.coll_direct) {
		/* every rank sends its part to every higher rank; rank r reduces
		 * a0..ar (a0..a(r-1) for Exscan) in rank order: one step */
		uint8_t *all = xmalloc(n * (c->rank + 1));
		size_t *sizes = xmalloc(c->size * sizeof *sizes), *offs = xmalloc(c->size * sizeof *offs);
		for (int i = 0; i < c->size; i++) {
			sizes[i] = n;
			offs[i] = i <= c->rank ? (size_t)i * n : 0;
		}
		rc = exchange(c, tag, mine, n, c->rank + 1, c->size, all, sizes, offs, 0, c->rank + 1, fn);
		int k = ex ? c->rank : c->rank + 1;
		if (!rc && k > 0) {
			coll_reduce_local(all, k, n, acc, count, d, op);
			dt_unpack(acc, count, d, recvbuf);
		}
		free(all);
		free(sizes);
		free(offs);
		goto out;
	}
	/* the chain: rank r receives a0 op … op a(r-1), sends a0 op … op ar */
	memcpy(acc, mine, n);
	if (c->rank > 0) {
		rc = recv1(c, fn, c->rank - 1, tag, prev, n);
		if (rc)
			goto out;
		memcpy(acc, mine, n);
		op_apply(op, d, count, prev, acc); /* acc = prev op mine */
	}
	if (c->rank + 1 < c->size)
		p2p_send_bytes(c, c->rank + 1, tag, CCTX(c), acc, n);
	if (!ex)
		dt_unpack(acc, count, d, recvbuf);
	else if (c->rank > 0)
		dt_unpack(prev, count, d, recvbuf);
out:
	free(mine);
	free(prev);
	free(acc);
	return rc;
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	return scan("MPI_Scan", "scan", sendbuf, recvbuf, count, datatype, op, comm, 0);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	return scan("MPI_Exscan", "exscan", sendbuf, recvbuf, count, datatype, op, comm, 1);
}

/* Neighbourhood collectives (MPI 4.0, 7.6) on a communicator with a
 * topology: each rank sends to its out-neighbours and receives from its
 * in-neighbours (topo_neighbors: their order, and the order to post the
 * receives in so that a rank that is a neighbour twice is matched right).
 * allgather: the same block to every out-neighbour; otherwise block j
 * to out-neighbour j. Block i of the receive buffer is in-neighbour i's;
 * an MPI_PROC_NULL neighbour's is left alone. */
static int neighbor(const char *fn, const char *kind, int allgather, const void *sendbuf, const int *scounts,
		    const int *sdispls, int scount, MPI_Datatype sendtype, void *recvbuf, const int *rcounts,
		    const int *rdispls, int rcount, MPI_Datatype recvtype, MPI_Comm comm)
{
	COMMARG(fn, comm, c);
	if (sendbuf == MPI_IN_PLACE)
		return cmpi_err(c, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE is not allowed");
	TYPEARG(fn, c, sendtype, sd, scounts ? 0 : scount);
	TYPEARG(fn, c, recvtype, rd, rcounts ? 0 : rcount);
	int nin, nout, *in, *out, *order;
	if (topo_neighbors(c, &nin, &in, &nout, &out, &order))
		return cmpi_err(c, MPI_ERR_TOPOLOGY, fn, "the communicator has no topology");
	int rc = MPI_SUCCESS;
	for (int i = 0; i < nin && !rc; i++)
		if (rcounts && rcounts[i] < 0)
			rc = cmpi_err(c, MPI_ERR_COUNT, fn, "recvcounts[%d] = %d", i, rcounts[i]);
	for (int j = 0; j < nout && !rc; j++)
		if (scounts && scounts[j] < 0)
			rc = cmpi_err(c, MPI_ERR_COUNT, fn, "sendcounts[%d] = %d", j, scounts[j]);
	if (rc) {
		free(in);
		free(out);
		free(order);
		return rc;
	}
	MPI_Aint sext = sd->ub - sd->lb, rext = rd->ub - rd->lb;
	size_t *rs = xmalloc((nin + 1) * sizeof *rs), *ro = xmalloc((nin + 1) * sizeof *ro), rtot = 0, stot = 0;
	for (int i = 0; i < nin; i++) {
		rs[i] = (size_t)(rcounts ? rcounts[i] : rcount) * rd->size;
		ro[i] = rtot;
		rtot += rs[i];
	}
	for (int j = 0; j < nout; j++)
		if (out[j] != MPI_PROC_NULL)
			stot += (size_t)(scounts ? scounts[j] : scount) * sd->size;
	int tag = coll_begin(c, kind, -1, (int64_t)stot);
	uint8_t *inb = xmalloc(rtot);
	struct req **reqs = xmalloc((nin + 1) * sizeof *reqs);
	for (int k = 0; k < nin; k++) {
		int i = order[k];
		reqs[i] = in[i] == MPI_PROC_NULL ? NULL
						 : p2p_irecv(c, in[i], tag, CCTX(c), inb + ro[i], (int)rs[i], bytetype());
	}
	uint8_t *tmp = NULL;
	size_t tmpn = 0;
	for (int j = 0; j < nout; j++) {
		if (out[j] == MPI_PROC_NULL)
			continue;
		int cnt = scounts ? scounts[j] : scount;
		size_t n = (size_t)cnt * sd->size;
		if (n > tmpn || !tmp) {
			free(tmp);
			tmp = xmalloc(n);
			tmpn = n;
		}
		MPI_Aint at = allgather ? 0 : (sdispls ? sdispls[j] : (MPI_Aint)j * scount);
		dt_pack((const uint8_t *)sendbuf + at * sext, cnt, sd, tmp);
		p2p_send_bytes(c, out[j], tag, CCTX(c), tmp, n);
	}
	free(tmp);
	rc = finish_reqs(c, fn, reqs, nin);
	if (!rc)
		for (int i = 0; i < nin; i++)
			if (in[i] != MPI_PROC_NULL)
				dt_unpack(inb + ro[i], rcounts ? rcounts[i] : rcount, rd,
					  (uint8_t *)recvbuf + (rdispls ? rdispls[i] : (MPI_Aint)i * rcount) * rext);
	free(reqs);
	free(inb);
	free(rs);
	free(ro);
	free(in);
	free(out);
	free(order);
	return rc;
}

int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
			   MPI_Datatype recvtype, MPI_Comm comm)
{
	return neighbor("MPI_Neighbor_allgather", "neighbor_allgather", 1, sendbuf, NULL, NULL, sendcount, sendtype,
			recvbuf, NULL, NULL, recvcount, recvtype, comm);
}

int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
			    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
	return neighbor("MPI_Neighbor_allgatherv", "neighbor_allgatherv", 1, sendbuf, NULL, NULL, sendcount,
			sendtype, recvbuf, recvcounts, displs, 0, recvtype, comm);
}

int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
			  MPI_Datatype recvtype, MPI_Comm comm)
{
	return neighbor("MPI_Neighbor_alltoall", "neighbor_alltoall", 0, sendbuf, NULL, NULL, sendcount, sendtype,
			recvbuf, NULL, NULL, recvcount, recvtype, comm);
}

int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
			   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
			   MPI_Comm comm)
{
	return neighbor("MPI_Neighbor_alltoallv", "neighbor_alltoallv", 0, sendbuf, sendcounts, sdispls, 0, sendtype,
			recvbuf, recvcounts, rdispls, 0, recvtype, comm);
}
