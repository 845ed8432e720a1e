/* Non-blocking collectives (MPI_Ibarrier, MPI_Iallreduce, …). Each is
 * one step of the direct algorithms (coll.c's bcs family): at the call,
 * every rank posts the receives it needs and sends every part another
 * rank needs, then returns a request. The receives are that request's
 * children: as the last one completes (inside any later MPI call that
 * makes progress), the request's finisher unpacks and reduces, in rank
 * order as the blocking ones do, and the request is complete. So a
 * program may compute, send and receive between the call and its Wait,
 * and a rank waiting for one is blocked on its children in the relay's
 * eyes (slot reuse under bcs). Collectives on one communicator are told
 * apart by the number each takes at its start, blocking or not, so they
 * may be outstanding together. */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

#define CCTX(c) (3 + 2 * (c)->k)

enum nkind {
	N_BARRIER,
	N_BCAST,
	N_GATHER,
	N_SCATTER,
	N_ALLGATHER,
	N_ALLTOALL,
	N_REDUCE,
	N_ALLREDUCE,
	N_REDUCE_SCATTER_BLOCK,
	N_SCAN,
	N_EXSCAN,
	N_ALLTOALLW
};

/* struct nbc is a request's collective: what arrives from rank i lands
 * at in + off[i] (len[i] bytes; got[i]: rank i sends); the finisher
 * writes the results to the caller's buffer. */
struct nbc {
	enum nkind kind;
	struct comm *c;
	int pending, err;
	uint8_t *in;
	size_t *len, *off;
	char *got;
	/* the caller's receive side */
	void *rbuf;
	const int *rcounts_in, *rdispls_in; /* copied below: the caller's arrays may go */
	int *rcounts, *rdispls, rcount;
	struct dtype *rd;
	struct dtype **rds; /* alltoallw: a type per rank, displacements in bytes */
	int root, count;
	MPI_Op op;
};

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		cmpi_die(1, "out of memory");
	return p;
}

static int *ints(const int *src, int n)
{
	if (!src)
		return NULL;
	int *p = xmalloc((size_t)n * sizeof(int));
	memcpy(p, src, (size_t)n * sizeof(int));
	return p;
}

static int rcnt(struct nbc *s, int i) { return s->rcounts ? s->rcounts[i] : s->rcount; }

static MPI_Aint rdisp(struct nbc *s, int i) { return s->rdispls ? s->rdispls[i] : (MPI_Aint)i * s->rcount; }

static void finish(struct req *r)
{
	struct nbc *s = r->nbcst;
	struct comm *c = s->c;
	MPI_Aint rext = s->rd ? s->rd->ub - s->rd->lb : 0;
	size_t n = s->rd ? (size_t)s->count * s->rd->size : 0;
	int me = c->rank;
	if (!s->err)
		switch (s->kind) {
		case N_BARRIER:
			break;
		case N_BCAST:
			if (me != s->root)
				dt_unpack(s->in + s->off[s->root], s->count, s->rd, s->rbuf);
			break;
		case N_GATHER:
			if (me == s->root)
				for (int i = 0; i < c->size; i++)
					if (s->got[i])
						dt_unpack(s->in + s->off[i], rcnt(s, i), s->rd,
							  (uint8_t *)s->rbuf + rdisp(s, i) * rext);
			break;
		case N_SCATTER:
			if (s->got[me])
				dt_unpack(s->in + s->off[me], s->rcount, s->rd, s->rbuf);
			break;
		case N_ALLGATHER:
		case N_ALLTOALL:
			for (int i = 0; i < c->size; i++)
				if (s->got[i])
					dt_unpack(s->in + s->off[i], rcnt(s, i), s->rd, (uint8_t *)s->rbuf + rdisp(s, i) * rext);
			break;
		case N_REDUCE:
		case N_ALLREDUCE:
		case N_REDUCE_SCATTER_BLOCK:
		case N_SCAN:
		case N_EXSCAN: {
			if (s->kind == N_REDUCE && me != s->root)
				break;
			/* contributions 0..k-1, in rank order */
			int k = s->kind == N_SCAN ? me + 1 : s->kind == N_EXSCAN ? me : c->size;
			if (k == 0)
				break; /* Exscan on rank 0: its buffer is undefined */
			uint8_t *out = xmalloc(n);
			coll_reduce_local(s->in, k, n, out, s->count, s->rd, s->op);
			dt_unpack(out, s->count, s->rd, s->rbuf);
			free(out);
			break;
		}
		case N_ALLTOALLW:
			for (int i = 0; i < c->size; i++)
				if (s->got[i])
					dt_unpack(s->in + s->off[i], s->rcounts[i], s->rds[i],
						  (uint8_t *)s->rbuf + s->rdispls[i]);
			break;
		}
	r->st.MPI_ERROR = s->err;
	r->st.MPI_SOURCE = MPI_ANY_SOURCE;
	r->st.MPI_TAG = MPI_ANY_TAG;
	r->complete = 1;
	req_done(r);
}

/* nbc_kid_done: one of r's receives completed (req_done). */
void nbc_kid_done(struct req *kid)
{
	struct req *r = kid->nbc;
	struct nbc *s = r->nbcst;
	kid->nbc = NULL;
	if (kid->st.MPI_ERROR && !s->err)
		s->err = kid->st.MPI_ERROR;
	if (--s->pending == 0)
		finish(r);
}

static void nbc_free_unstarted(struct nbc *s)
{
	free(s->in);
	free(s->len);
	free(s->off);
	free(s->got);
	free(s->rcounts);
	free(s->rdispls);
	if (s->rd)
		dt_unref(s->rd);
	for (int i = 0; s->rds && i < s->c->size; i++)
		dt_unref(s->rds[i]);
	free(s->rds);
	if (s->op)
		op_release(s->op);
	free(s);
}

void nbc_free(struct req *r)
{
	nbc_free_unstarted(r->nbcst);
	r->nbcst = NULL;
}

/* start: the request of s, with the receives of got[] posted and the
 * parts sendp[i] (sendn[i] bytes, sendto[i]: send at all) sent; own is
 * this rank's own part, copied to in + off[me] when got[me]. */
static struct req *start(struct nbc *s, const char *kind, int root, int64_t bytes, uint8_t **sendp,
			 const size_t *sendn, const char *sendto, const uint8_t *own)
{
	struct comm *c = s->c;
	int tag = coll_begin(c, kind, root, bytes);
	struct req *r = req_new(RQ_NBC);
	r->comm = c;
	r->nbcst = s;
	size_t tot = 0;
	for (int i = 0; i < c->size; i++) {
		s->off[i] = tot;
		tot += s->len[i];
	}
	s->in = xmalloc(tot);
	if (s->got[c->rank] && own)
		memcpy(s->in + s->off[c->rank], own, s->len[c->rank]);
	s->pending = 1; /* held until every receive is posted */
	for (int i = 0; i < c->size; i++) {
		if (i == c->rank || !s->got[i])
			continue;
		struct req *k = p2p_irecv(c, i, tag, CCTX(c), s->in + s->off[i], (int)s->len[i], dt_get(MPI_BYTE));
		if (k->complete) {
			if (k->st.MPI_ERROR && !s->err)
				s->err = k->st.MPI_ERROR;
			req_free(k);
			continue;
		}
		k->nbc = r;
		k->released = 1; /* freed as it completes */
		s->pending++;
	}
	for (int d = 1; d < c->size; d++) {
		int i = (c->rank + d) % c->size;
		if (sendto[i])
			p2p_send_bytes(c, i, tag, CCTX(c), sendp[i], sendn[i]);
	}
	if (--s->pending == 0)
		finish(r);
	return r;
}

static struct nbc *nbc_new(struct comm *c, enum nkind kind)
{
	struct nbc *s = xmalloc(sizeof *s);
	s->kind = kind;
	s->c = c;
	s->len = xmalloc(c->size * sizeof(size_t));
	s->off = xmalloc(c->size * sizeof(size_t));
	s->got = xmalloc(c->size);
	return s;
}

/* nbc_receiving is nbc_new for a collective that receives into recvbuf
 * by recvcount, or by recvcounts and displs (copied) when given. */
static struct nbc *nbc_receiving(struct comm *c, enum nkind kind, int root, void *recvbuf, int recvcount, const int *recvcounts,
				 const int *displs, struct dtype *rd)
{
	struct nbc *s = nbc_new(c, kind);
	s->root = root;
	s->rbuf = recvbuf;
	s->rcount = recvcount;
	s->rcounts = ints(recvcounts, c->size);
	s->rdispls = ints(displs, c->size);
	s->rd = rd;
	if (rd)
		dt_ref(rd);
	return s;
}

struct sends {
	uint8_t **p;
	size_t *n;
	char *to;
	uint8_t *owned; /* packed parts, freed at the end */
};

static struct sends sends_new(int size)
{
	struct sends x = {xmalloc(size * sizeof(uint8_t *)), xmalloc(size * sizeof(size_t)), xmalloc(size), NULL};
	return x;
}

static void sends_free(struct sends *x)
{
	free(x->p);
	free(x->n);
	free(x->to);
	free(x->owned);
}

static uint8_t *pack(const void *buf, int count, struct dtype *d)
{
	uint8_t *p = xmalloc((size_t)count * d->size);
	dt_pack(buf, count, d, p);
	return p;
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
	COMMARG("MPI_Ibarrier", comm, c);
	struct nbc *s = nbc_new(c, N_BARRIER);
	struct sends x = sends_new(c->size);
	for (int i = 0; i < c->size; i++)
		s->got[i] = x.to[i] = i != c->rank;
	*request = start(s, "barrier", -1, 0, x.p, x.n, x.to, NULL)->handle;
	sends_free(&x);
	return MPI_SUCCESS;
}

int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request)
{
	const char *fn = "MPI_Ibcast";
	COMMARG(fn, comm, c);
	TYPEARG(fn, c, datatype, d, count);
	ROOTARG(fn, c, root);
	struct nbc *s = nbc_new(c, N_BCAST);
	struct sends x = sends_new(c->size);
	s->root = root;
	s->count = count;
	s->rbuf = buffer;
	s->rd = d;
	dt_ref(d);
	size_t n = (size_t)count * d->size;
	s->len[root] = n;
	s->got[root] = c->rank != root;
	if (c->rank == root) {
		x.owned = pack(buffer, count, d);
		for (int i = 0; i < c->size; i++) {
			x.to[i] = i != root;
			x.p[i] = x.owned;
			x.n[i] = n;
		}
	}
	*request = start(s, "bcast", root, c->rank == root ? (int64_t)n : 0, x.p, x.n, x.to, NULL)->handle;
	sends_free(&x);
	return MPI_SUCCESS;
}

/* gathers: rank i's part goes to the root (gather) or to every rank */
static int igather(const char *fn, const char *kind, int all, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
		   void *recvbuf, const int *recvcounts, const int *displs, int recvcount, MPI_Datatype recvtype, int root,
		   MPI_Comm comm, MPI_Request *request)
{
	COMMARG(fn, comm, c);
	if (!all)
		ROOTARG(fn, c, root);
	int receiver = all || c->rank == root;
	int inplace = sendbuf == MPI_IN_PLACE;
	struct dtype *rd = NULL;
	if (receiver) {
		TYPEARG(fn, c, recvtype, t, recvcounts ? 0 : recvcount);
		rd = t;
		for (int i = 0; recvcounts && i < c->size; i++)
			if (recvcounts[i] < 0)
				return cmpi_err(c, MPI_ERR_COUNT, fn, "recvcounts[%d] = %d", i, recvcounts[i]);
	}
	struct dtype *sd = NULL;
	if (!inplace) {
		TYPEARG(fn, c, sendtype, t, sendcount);
		sd = t;
	} else if (!receiver)
		return cmpi_err(c, MPI_ERR_BUFFER, fn, "MPI_IN_PLACE on a rank that is not the root");
	struct nbc *s = nbc_receiving(c, all ? N_ALLGATHER : N_GATHER, root, recvbuf, recvcount, recvcounts, displs, rd);
	struct sends x = sends_new(c->size);
	/* what this rank sends: its buffer, or in place its block of recvbuf */
	size_t myn;
	if (inplace) {
		myn = (size_t)rcnt(s, c->rank) * rd->size;
		x.owned = pack((uint8_t *)recvbuf + rdisp(s, c->rank) * (rd->ub - rd->lb), rcnt(s, c->rank), rd);
	} else {
		myn = (size_t)sendcount * sd->size;
		x.owned = pack(sendbuf, sendcount, sd);
	}
	for (int i = 0; i < c->size; i++) {
		x.p[i] = x.owned;
		x.n[i] = myn;
		x.to[i] = i != c->rank && (all || i == root);
		if (receiver) {
			s->got[i] = 1;
			s->len[i] = (size_t)rcnt(s, i) * rd->size;
		}
	}
	if (receiver && myn > s->len[c->rank]) {
		size_t room = s->len[c->rank];
		nbc_free_unstarted(s);
		sends_free(&x);
		return cmpi_err(c, MPI_ERR_TRUNCATE, fn, "own part of %zu bytes into %zu", myn, room);
	}
	*request = start(s, kind, all ? -1 : root, (int64_t)myn, x.p, x.n, x.to, x.owned)->handle;
	sends_free(&x);
	return MPI_SUCCESS;
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
	return igather("MPI_Igather", "gather", 0, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount,
		       recvtype, root, comm, request);
}

int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		 const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
	/* recvcounts and displs are significant at the root only */
	int root_side = 0;
	struct comm *c = comm_get(comm);
	if (c && c->rank == root)
		root_side = 1;
	return igather("MPI_Igatherv", "gatherv", 0, sendbuf, sendcount, sendtype, recvbuf,
		       root_side ? recvcounts : NULL, root_side ? displs : NULL, 0, recvtype, root, comm, request);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		   MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	return igather("MPI_Iallgather", "allgather", 1, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount,
		       recvtype, 0, comm, request);
}

int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
		    const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	return igather("MPI_Iallgatherv", "allgatherv", 1, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0,
		       recvtype, 0, comm, request);
}

/* scatters and all-to-alls: block i of the sender goes to rank i */
static int iscatter(const char *fn, const char *kind, int all, const void *sendbuf, const int *sendcounts,
		    const int *sdispls, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
		    const int *rdispls, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
		    MPI_Request *request)
{
	COMMARG(fn, comm, c);
	if (!all)
		ROOTARG(fn, c, root);
	int sender = all || c->rank == root;
	int inplace = recvbuf == MPI_IN_PLACE || sendbuf == MPI_IN_PLACE;
	/* in place: scatter's root keeps its block where it is; alltoall sends from recvbuf */
	struct dtype *rd = NULL, *sd = NULL;
	if (!(inplace && !all)) {
		TYPEARG(fn, c, recvtype, t, recvcounts ? 0 : recvcount);
		rd = t;
		for (int i = 0; recvcounts && i < c->size; i++)
			if (recvcounts[i] < 0)
				return cmpi_err(c, MPI_ERR_COUNT, fn, "recvcounts[%d] = %d", i, recvcounts[i]);
	}
	if (sender && !(inplace && all)) {
		TYPEARG(fn, c, sendtype, t, sendcounts ? 0 : sendcount);
		sd = t;
		for (int i = 0; sendcounts && i < c->size; i++)
			if (sendcounts[i] < 0)
				return cmpi_err(c, MPI_ERR_COUNT, fn, "sendcounts[%d] = %d", i, sendcounts[i]);
	}
	if (inplace && all) {
		sd = rd;
		sendcounts = recvcounts;
		sdispls = rdispls;
		sendcount = recvcount;
		sendbuf = recvbuf;
	}
	struct nbc *s = nbc_receiving(c, all ? N_ALLTOALL : N_SCATTER, root, recvbuf, recvcount, recvcounts, rdispls, rd);
	struct sends x = sends_new(c->size);
	int64_t bytes = 0;
	if (sender) {
		MPI_Aint sext = sd->ub - sd->lb;
		size_t tot = 0;
		for (int i = 0; i < c->size; i++)
			tot += (size_t)(sendcounts ? sendcounts[i] : sendcount) * sd->size;
		x.owned = xmalloc(tot);
		size_t at = 0;
		for (int i = 0; i < c->size; i++) {
			int cnt = sendcounts ? sendcounts[i] : sendcount;
			x.p[i] = x.owned + at;
			x.n[i] = (size_t)cnt * sd->size;
			dt_pack((const uint8_t *)sendbuf + (sdispls ? sdispls[i] : (MPI_Aint)i * sendcount) * sext, cnt, sd,
				x.p[i]);
			at += x.n[i];
			x.to[i] = i != c->rank;
			bytes += i != c->rank ? (int64_t)x.n[i] : 0;
		}
	}
	int me = c->rank;
	if (all)
		for (int i = 0; i < c->size; i++) {
			s->got[i] = 1;
			s->len[i] = (size_t)rcnt(s, i) * rd->size;
		}
	else if (!(inplace && me == root)) {
		s->got[root] = 1;
		s->len[root] = (size_t)recvcount * rd->size;
	}
	const uint8_t *own = NULL;
	if (s->got[me]) {
		if (sender && x.n[me] > s->len[me]) {
			size_t have = x.n[me], room = s->len[me];
			nbc_free_unstarted(s);
			sends_free(&x);
			return cmpi_err(c, MPI_ERR_TRUNCATE, fn, "own part of %zu bytes into %zu", have, room);
		}
		own = x.p[me];
		/* scatter: a non-root's block is at off[root]; the finisher reads off[me] */
		if (!all && me != root)
			own = NULL;
	}
	if (!all && me != root) {
		/* the finisher unpacks from in + off[me]: receive into the root's slot, read it there */
		s->kind = N_BCAST; /* one block from the root into rbuf, rcount of rd */
		s->count = recvcount;
	}
	*request = start(s, kind, all ? -1 : root, bytes, x.p, x.n, x.to, own)->handle;
	sends_free(&x);
	return MPI_SUCCESS;
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		 MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
	return iscatter("MPI_Iscatter", "scatter", 0, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, NULL, NULL,
			recvcount, recvtype, root, comm, request);
}

int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype, void *recvbuf,
		  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
	struct comm *c = comm_get(comm);
	int root_side = c && c->rank == root;
	return iscatter("MPI_Iscatterv", "scatterv", 0, sendbuf, root_side ? sendcounts : NULL,
			root_side ? displs : NULL, 0, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, root, comm,
			request);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
		  MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
	return iscatter("MPI_Ialltoall", "alltoall", 1, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, NULL, NULL,
			recvcount, recvtype, 0, comm, request);
}

int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
		   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
		   MPI_Request *request)
{
	return iscatter("MPI_Ialltoallv", "alltoallv", 1, sendbuf, sendcounts, sdispls, 0, sendtype, recvbuf,
			recvcounts, rdispls, 0, recvtype, 0, comm, request);
}

/* reductions: contributions travel whole (count of d) to every rank that
 * combines them: the root, every rank, rank j's block only
 * (reduce_scatter_block) or the ranks above (scans) */
static int ireduce(const char *fn, const char *kind, enum nkind nk, const void *sendbuf, void *recvbuf, int count,
		   const int *counts, MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
	COMMARG(fn, comm, c);
	TYPEARG(fn, c, datatype, d, count);
	for (int i = 0; counts && i < c->size; i++)
		if (counts[i] < 0)
			return cmpi_err(c, MPI_ERR_COUNT, fn, "recvcounts[%d] = %d", i, counts[i]);
	if (nk == N_REDUCE)
		ROOTARG(fn, c, root);
	if (op_check(op, d))
		return cmpi_err(c, MPI_ERR_OP, fn, "op %#x on datatype %#x", (unsigned)op, (unsigned)d->handle);
	int me = c->rank, p = c->size;
	struct nbc *s = nbc_new(c, nk);
	s->root = root;
	s->rbuf = recvbuf;
	s->rd = d;
	dt_ref(d);
	s->count = count;
	s->op = op;
	op_hold(op);
	size_t n = (size_t)count * d->size; /* one contribution, or one block of reduce_scatter_block */
	struct sends x = sends_new(p);
	int inplace = sendbuf == MPI_IN_PLACE;
	if (nk == N_REDUCE_SCATTER_BLOCK) {
		/* block i (counts[i] elements, or count) of every rank goes to
		 * rank i, which reduces its p of them */
		const void *src = inplace ? recvbuf : sendbuf;
		int total = 0;
		for (int i = 0; i < p; i++)
			total += counts ? counts[i] : count;
		x.owned = pack(src, total, d);
		s->count = counts ? counts[me] : count;
		size_t at = 0, mine = (size_t)s->count * d->size;
		int64_t bytes = 0;
		for (int i = 0; i < p; i++) {
			x.p[i] = x.owned + at;
			x.n[i] = (size_t)(counts ? counts[i] : count) * d->size;
			at += x.n[i];
			x.to[i] = i != me;
			bytes += i != me ? (int64_t)x.n[i] : 0;
			s->got[i] = 1;
			s->len[i] = mine;
		}
		*request = start(s, kind, -1, bytes, x.p, x.n, x.to, x.p[me])->handle;
		sends_free(&x);
		return MPI_SUCCESS;
	}
	x.owned = pack(inplace ? recvbuf : sendbuf, count, d);
	for (int i = 0; i < p; i++) {
		x.p[i] = x.owned;
		x.n[i] = n;
		switch (nk) {
		case N_REDUCE:
			x.to[i] = i == root && i != me;
			s->got[i] = me == root;
			break;
		case N_ALLREDUCE:
			x.to[i] = i != me;
			s->got[i] = 1;
			break;
		default: /* scans: to the ranks above, from the ranks below (and itself for Scan) */
			x.to[i] = i > me;
			s->got[i] = i < me || (i == me && nk == N_SCAN);
		}
		s->len[i] = s->got[i] ? n : 0;
	}
	int64_t bytes = 0;
	for (int i = 0; i < p; i++)
		bytes += x.to[i] ? (int64_t)n : 0;
	*request = start(s, kind, nk == N_REDUCE ? root : -1, bytes, x.p, x.n, x.to, x.owned)->handle;
	sends_free(&x);
	return MPI_SUCCESS;
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
		MPI_Comm comm, MPI_Request *request)
{
	return ireduce("MPI_Ireduce", "reduce", N_REDUCE, sendbuf, recvbuf, count, NULL, datatype, op, root, comm, request);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
		   MPI_Request *request)
{
	return ireduce("MPI_Iallreduce", "allreduce", N_ALLREDUCE, sendbuf, recvbuf, count, NULL, datatype, op, 0,
		       comm, request);
}

int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
			      MPI_Comm comm, MPI_Request *request)
{
	return ireduce("MPI_Ireduce_scatter_block", "reduce_scatter", N_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf,
		       recvcount, NULL, datatype, op, 0, comm, request);
}

int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype, MPI_Op op,
			MPI_Comm comm, MPI_Request *request)
{
	return ireduce("MPI_Ireduce_scatter", "reduce_scatter", N_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, 0,
		       recvcounts, datatype, op, 0, comm, request);
}

int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
	      MPI_Request *request)
{
	return ireduce("MPI_Iscan", "scan", N_SCAN, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm, request);
}

int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
		MPI_Request *request)
{
	return ireduce("MPI_Iexscan", "exscan", N_EXSCAN, sendbuf, recvbuf, count, NULL, datatype, op, 0, comm, request);
}

/* MPI_Ialltoallw: a type per peer on both sides, displacements in bytes */
int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
		   void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
		   MPI_Comm comm, MPI_Request *request)
{
	const char *fn = "MPI_Ialltoallw";
	COMMARG(fn, comm, c);
	int p = c->size, me = c->rank, inplace = sendbuf == MPI_IN_PLACE;
	if (inplace) {
		sendbuf = recvbuf;
		sendcounts = recvcounts;
		sdispls = rdispls;
		sendtypes = recvtypes;
	}
	for (int i = 0; i < p; i++) {
		if (!dt_get(sendtypes[i]) || !dt_get(recvtypes[i]))
			return cmpi_err(c, MPI_ERR_TYPE, fn, "the datatype for rank %d", i);
		if (sendcounts[i] < 0 || recvcounts[i] < 0)
			return cmpi_err(c, MPI_ERR_COUNT, fn, "a negative count for rank %d", i);
	}
	struct nbc *s = nbc_new(c, N_ALLTOALLW);
	s->rbuf = recvbuf;
	s->rcounts = ints(recvcounts, p);
	s->rdispls = ints(rdispls, p);
	s->rds = xmalloc(p * sizeof *s->rds);
	struct sends x = sends_new(p);
	size_t tot = 0;
	for (int i = 0; i < p; i++) {
		s->rds[i] = dt_get(recvtypes[i]);
		dt_ref(s->rds[i]);
		s->got[i] = 1;
		s->len[i] = (size_t)recvcounts[i] * s->rds[i]->size;
		tot += (size_t)sendcounts[i] * dt_get(sendtypes[i])->size;
	}
	x.owned = xmalloc(tot);
	size_t at = 0;
	int64_t bytes = 0;
	for (int i = 0; i < p; i++) {
		struct dtype *sd = dt_get(sendtypes[i]);
		x.p[i] = x.owned + at;
		x.n[i] = (size_t)sendcounts[i] * sd->size;
		dt_pack((const uint8_t *)sendbuf + sdispls[i], sendcounts[i], sd, x.p[i]);
		at += x.n[i];
		x.to[i] = i != me;
		bytes += i != me ? (int64_t)x.n[i] : 0;
	}
	if (x.n[me] > s->len[me]) {
		size_t have = x.n[me], room = s->len[me];
		nbc_free_unstarted(s);
		sends_free(&x);
		return cmpi_err(c, MPI_ERR_TRUNCATE, fn, "own part of %zu bytes into %zu", have, room);
	}
	*request = start(s, "alltoallv", -1, bytes, x.p, x.n, x.to, x.p[me])->handle;
	sends_free(&x);
	return MPI_SUCCESS;
}

/* MPI_Alltoallw: the non-blocking one, waited for */
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
		  void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
		  MPI_Comm comm)
{
	MPI_Request r;
	int rc = MPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm,
				&r);
	if (rc != MPI_SUCCESS)
		return rc;
	return MPI_Wait(&r, MPI_STATUS_IGNORE);
}
