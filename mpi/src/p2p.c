/* Point to point. A send is one Send frame (or, above one frame, a first
 * frame and fragments on CTX_FRAG): it completes at once, the relay holds
 * the message. A receive is a Post; the relay matches it (MPI's order:
 * per source, oldest first) and answers Deliver. Ssend's message carries
 * PH_SYNC and completes when the receiver's library acks the match.
 * Probe asks the relay (Probe, protocol 2), then takes the message into a
 * local stash, which every later receive looks at first: the stashed
 * message was the oldest match, so taking it first keeps MPI's order. */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

#define TAG_UB 0x7fffffff

struct stash {
	struct stash *next;
	int ctx, wsrc, tag;
	size_t n;
	uint8_t x[];
};

static void relay_sendv(int wdst, int tag, int ctx, const uint8_t *hdr, size_t hl, const void *data, size_t dl);

/* raw_send writes one Send frame: x = hdr followed by data. */
static void raw_send(int wdst, int tag, int ctx, const uint8_t *hdr, size_t hl, const void *data, size_t dl)
{
	if (chan_sends(wdst)) { /* a peer the relay granted a channel to (not taken back), or itself */
		chan_send(wdst, tag, ctx, hdr, hl, data, dl);
		return;
	}
	relay_sendv(wdst, tag, ctx, hdr, hl, data, dl);
}

/* relay_send sends x through the relay whatever the channels: a broken
 * channel's messages its peer did not read (chan.c, resend). */
void relay_send(int wdst, int tag, int ctx, const uint8_t *x, size_t n) { relay_sendv(wdst, tag, ctx, x, n, NULL, 0); }

static void relay_sendv(int wdst, int tag, int ctx, const uint8_t *hdr, size_t hl, const void *data, size_t dl)
{
	struct buf *b = &G.out;
	/* numbered (protocol 3): kept until the destination's relay acks it */
	uint64_t seq = G.numbered ? sent_keep(wdst, tag, ctx, hdr, hl, data, dl) : 0;
	b->len = 0;
	mp_map(b, seq ? 5 : 4);
	mp_str(b, "d");
	mp_int(b, wdst);
	mp_str(b, "t");
	mp_int(b, tag);
	mp_str(b, "c");
	mp_int(b, ctx);
	if (seq) {
		mp_str(b, "q");
		mp_uint(b, seq);
	}
	mp_str(b, "x");
	mp_bin_header(b, hl + dl);
	buf_reserve(b, hl);
	memcpy(b->p + b->len, hdr, hl);
	b->len += hl;
	conn_writev2(FR_SEND, b->p, b->len, data, dl);
}

static void send_packed(int wdst, int tag, int ctx, const uint8_t *p, size_t n, int sync, uint32_t msgid)
{
	uint8_t hdr[PH_MAX];
	struct phdr h = {sync ? PH_SYNC : 0, msgid, n};
	if (n + 1 + (sync ? 4 : 0) <= CMPI_MAX_MESSAGE) {
		size_t hl = cmpi_phdr_put(hdr, &h);
		raw_send(wdst, tag, ctx, hdr, hl, p, n);
		return;
	}
	h.flags |= PH_FRAG;
	size_t hl = cmpi_phdr_put(hdr, &h);
	size_t first = CMPI_MAX_MESSAGE - hl;
	raw_send(wdst, tag, ctx, hdr, hl, p, first);
	for (size_t off = first; off < n; off += CMPI_MAX_MESSAGE) {
		size_t l = n - off < CMPI_MAX_MESSAGE ? n - off : CMPI_MAX_MESSAGE;
		raw_send(wdst, (int)(msgid & TAG_UB), CTX_FRAG, NULL, 0, p + off, l);
	}
}

int p2p_send(struct comm *c, int dst, int tag, int ctx, const void *buf, int count, struct dtype *dt, int sync,
	     struct req **out)
{
	struct req *r = NULL;
	if (out) {
		r = req_new(sync ? RQ_SSEND : RQ_SEND);
		r->comm = c;
		*out = r;
	}
	if (dst == MPI_PROC_NULL) {
		if (r) {
			r->complete = 1;
			r->st.MPI_SOURCE = MPI_PROC_NULL;
			r->st.MPI_TAG = MPI_ANY_TAG;
		}
		return MPI_SUCCESS;
	}
	int wdst = c->w[dst];
	size_t n = (size_t)count * dt->size;
	uint8_t *tmp = NULL;
	const uint8_t *p = buf;
	if (!dt->contig && n > 0) {
		tmp = malloc(n);
		if (!tmp)
			cmpi_die(1, "out of memory (%zu bytes)", n);
		dt_pack(buf, count, dt, tmp);
		p = tmp;
	}
	uint32_t msgid = 0;
	if (sync || n + 1 > CMPI_MAX_MESSAGE)
		msgid = ++G.msgid;
	if (sync)
		post(P_ACK, r, wdst, (int)(msgid & TAG_UB), CTX_ACK, 0);
	send_packed(wdst, tag, ctx, p, n, sync, msgid);
	free(tmp);
	if (r && !sync)
		r->complete = 1;
	return MPI_SUCCESS;
}

int p2p_send_bytes(struct comm *c, int dst, int tag, int ctx, const void *p, size_t n)
{
	uint32_t msgid = 0;
	if (n + 1 > CMPI_MAX_MESSAGE)
		msgid = ++G.msgid;
	send_packed(c->w[dst], tag, ctx, p, n, 0, msgid);
	return MPI_SUCCESS;
}

static void finish(struct req *r)
{
	uint64_t got = r->total < (uint64_t)r->cap ? r->total : (uint64_t)r->cap;
	if (r->stage) {
		MPI_Aint whole = r->dt->size ? (MPI_Aint)got / r->dt->size : 0;
		dt_unpack(r->stage, (int)whole, r->dt, r->buf);
	}
	r->st.count_lo = (int)(got & 0xffffffffu);
	r->st.count_hi_and_cancelled = (int)((got >> 32) << 1);
	r->st.MPI_ERROR = r->trunc ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
	r->complete = 1;
	req_done(r);
}

/* req_done hands a completed request's status to its persistent parent,
 * and frees it if nobody holds it any more. */
void req_done(struct req *r)
{
	if (r->nbc)
		nbc_kid_done(r);
	if (r->parent) {
		r->parent->st = r->st;
		r->parent->complete = 1;
		r->parent->inner = NULL;
		r->parent = NULL;
		r->released = 1;
	}
	if (r->released)
		req_free(r);
}

static void sink(struct req *r, uint64_t off, const uint8_t *x, size_t n)
{
	if (off >= (uint64_t)r->cap || n == 0)
		return;
	size_t l = (uint64_t)r->cap - off < n ? (size_t)((uint64_t)r->cap - off) : n;
	if (r->dt->contig) {
		memcpy((uint8_t *)r->buf + off, x, l);
		return;
	}
	if (!r->stage) {
		r->stage = malloc(r->cap);
		if (!r->stage)
			cmpi_die(1, "out of memory (%ld bytes)", (long)r->cap);
	}
	memcpy(r->stage + off, x, l);
}

void deliver_first(struct req *r, int wsrc, int tag, const uint8_t *x, size_t n)
{
	struct phdr h;
	int hl = cmpi_phdr_parse(x, n, &h);
	if (hl < 0)
		cmpi_die(1, "rank %d sent a malformed message (tag %d, %zu bytes)", wsrc, tag, n);
	if (h.flags & PH_SYNC) {
		uint8_t ack = 0;
		raw_send(wsrc, (int)(h.msgid & TAG_UB), CTX_ACK, &ack, 1, NULL, 0);
	}
	if (!r) /* a freed receive's message: acked, dropped */
		return;
	r->st.MPI_SOURCE = r->comm ? r->comm->w2c[wsrc] : wsrc;
	r->st.MPI_TAG = tag;
	r->total = h.total;
	r->trunc = h.total > (uint64_t)r->cap;
	size_t dl = n - hl;
	sink(r, 0, x + hl, dl);
	r->got = dl;
	if (h.flags & PH_FRAG) {
		for (uint64_t off = dl; off < h.total; off += CMPI_MAX_MESSAGE)
			post(P_FRAG, r, wsrc, (int)(h.msgid & TAG_UB), CTX_FRAG, (MPI_Aint)off);
	}
	if (r->outstanding == 0)
		finish(r);
}

void deliver_frag(struct req *r, MPI_Aint off, const uint8_t *x, size_t n)
{
	if (!r)
		return;
	sink(r, off, x, n);
	r->got += n;
	if (r->outstanding == 0)
		finish(r);
}

void stash_add(int ctx, int wsrc, int tag, const uint8_t *x, size_t n)
{
	struct stash *s = malloc(sizeof *s + n);
	if (!s)
		cmpi_die(1, "out of memory");
	s->next = NULL;
	s->ctx = ctx;
	s->wsrc = wsrc;
	s->tag = tag;
	s->n = n;
	memcpy(s->x, x, n);
	if (G.stash_tail)
		G.stash_tail->next = s;
	else
		G.stash_head = s;
	G.stash_tail = s;
}

static struct stash *stash_find(int ctx, int wsrc, int tag, struct stash **prev)
{
	struct stash *p = NULL;
	for (struct stash *s = G.stash_head; s; p = s, s = s->next)
		if (s->ctx == ctx && (wsrc < 0 || s->wsrc == wsrc) && (tag < 0 || s->tag == tag)) {
			if (prev)
				*prev = p;
			return s;
		}
	return NULL;
}

/* stash_unlink takes s, after prev, out of the stash (not freed). */
static void stash_unlink(struct stash *s, struct stash *prev)
{
	if (prev)
		prev->next = s->next;
	else
		G.stash_head = s->next;
	if (G.stash_tail == s)
		G.stash_tail = prev;
}

static void stash_remove(struct stash *s, struct stash *prev)
{
	stash_unlink(s, prev);
	free(s);
}

/* stash_deliver hands the oldest stashed message matching to slot id's
 * receive (a channel's receive posted after its message came: chan.c). */
int stash_deliver(uint64_t id, int wsrc, int tag, int ctx)
{
	struct stash *prev, *s = G.stash_head ? stash_find(ctx, wsrc, tag, &prev) : NULL;
	if (!s)
		return 0;
	stash_unlink(s, prev); /* first: delivering may stash or post */
	deliver_slot(id, s->wsrc, s->tag, s->x, s->n, 0);
	free(s);
	return 1;
}

/* stash_swap keeps MPI's order when a wildcard receive posted to the
 * relay was matched by a channel (chan.c): the relay then matched that
 * post with a message of its own, which went to the stash, and may
 * deliver the next message of the same source to a receive posted
 * before the stashed one arrived. Then r gets the stashed (older)
 * message and the new one goes to the stash, behind it. */
int stash_swap(struct req *r, int wsrc, int tag, const uint8_t *x, size_t n)
{
	struct stash *prev, *s = G.stash_head ? stash_find(r->ctx, wsrc, r->tag, &prev) : NULL;
	if (!s)
		return 0;
	stash_unlink(s, prev);
	stash_add(r->ctx, wsrc, tag, x, n);
	deliver_first(r, s->wsrc, s->tag, s->x, s->n);
	free(s);
	return 1;
}

int stash_has(int ctx, int wsrc, int tag) { return stash_find(ctx, wsrc, tag, NULL) != NULL; }

/* recv_req is a receive's request, into count of dt at buf on context
 * ctx of c, not yet matched. */
static struct req *recv_req(struct comm *c, int ctx, void *buf, int count, struct dtype *dt)
{
	struct req *r = req_new(RQ_RECV);
	r->comm = c;
	r->buf = buf;
	r->count = count;
	r->dt = dt;
	dt_ref(dt);
	r->cap = (MPI_Aint)count * dt->size;
	r->ctx = ctx;
	return r;
}

struct req *p2p_irecv(struct comm *c, int src, int tag, int ctx, void *buf, int count, struct dtype *dt)
{
	struct req *r = recv_req(c, ctx, buf, count, dt);
	if (src == MPI_PROC_NULL) {
		r->st.MPI_SOURCE = MPI_PROC_NULL;
		r->st.MPI_TAG = MPI_ANY_TAG;
		r->complete = 1;
		return r;
	}
	int wsrc = src == MPI_ANY_SOURCE ? -1 : c->w[src];
	int t = tag == MPI_ANY_TAG ? -1 : tag;
	r->src = wsrc;
	r->tag = t;
	struct stash *prev, *s = G.stash_head ? stash_find(ctx, wsrc, t, &prev) : NULL;
	if (s) {
		deliver_first(r, s->wsrc, s->tag, s->x, s->n);
		stash_remove(s, prev);
		return r;
	}
	post(P_RECV, r, wsrc, t, ctx, 0);
	return r;
}

static int ndone(struct req **rs, int n)
{
	int d = 0;
	for (int i = 0; i < n; i++)
		if (!rs[i] || rs[i]->complete)
			d++;
	return d;
}

/* wait_reqs returns when every request (any: one) in rs is complete;
 * NULL entries count as complete. It sleeps in recv(2), having told the
 * relay which receives it waits for. */
void wait_reqs(struct req **rs, int n, int any)
{
	int need = any ? 1 : n;
	if (any) {
		int active = 0;
		for (int i = 0; i < n; i++)
			active += rs[i] != NULL;
		if (!active)
			return;
		need = 1;
		for (int i = 0; i < n; i++)
			if (rs[i] && rs[i]->complete)
				return;
	} else if (ndone(rs, n) == n)
		return;
	if (G.pend.len == 0) /* else the relay has not even seen what was just posted */
		pump(0);
	for (;;) {
		int d = 0;
		if (any) {
			for (int i = 0; i < n; i++)
				d += rs[i] && rs[i]->complete;
		} else
			d = ndone(rs, n);
		if (d >= need)
			break;
		if (!G.blocking) {
			send_frame_wait(rs, n);
			G.blocking = 1;
		}
		pump(1);
	}
	if (G.blocking) {
		send_frame_unwait(rs, n); /* what is still posted (Waitany) */
		G.blocking = 0;
	}
}

void req_fill_status(struct req *r, MPI_Status *st)
{
	if (ST_IGNORED(st))
		return;
	int e = st->MPI_ERROR;
	*st = r->st;
	st->MPI_ERROR = e;
}

static void empty_status(MPI_Status *st)
{
	if (ST_IGNORED(st))
		return;
	st->MPI_SOURCE = MPI_ANY_SOURCE;
	st->MPI_TAG = MPI_ANY_TAG;
	st->count_lo = 0;
	st->count_hi_and_cancelled = 0;
}

/* ---- argument checks ---- */

static int check(const char *fn, MPI_Comm comm, struct comm **c, int count, MPI_Datatype type, struct dtype **dt,
		 int rank, int tag, int recv)
{
	NEED_INIT(fn);
	*c = comm_get(comm);
	if (!*c)
		return cmpi_err(NULL, MPI_ERR_COMM, fn, "communicator %#x", (unsigned)comm);
	if (count < 0)
		return cmpi_err(*c, MPI_ERR_COUNT, fn, "count %d", count);
	*dt = dt_get(type);
	if (!*dt)
		return cmpi_err(*c, MPI_ERR_TYPE, fn, "datatype %#x%s", (unsigned)type,
				dt_any(type) ? " is not committed" : "");
	if (!(rank == MPI_PROC_NULL || (rank >= 0 && rank < (*c)->size) || (recv && rank == MPI_ANY_SOURCE)))
		return cmpi_err(*c, MPI_ERR_RANK, fn, "rank %d of a communicator of %d", rank, (*c)->size);
	if (!((tag >= 0 && tag <= TAG_UB) || (recv && tag == MPI_ANY_TAG)))
		return cmpi_err(*c, MPI_ERR_TAG, fn, "tag %d (0 to %d%s)", tag, TAG_UB, recv ? " or MPI_ANY_TAG" : "");
	return MPI_SUCCESS;
}

#define PCTX(c) (2 + 2 * (c)->k)

static int do_send(const char *fn, const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
		   MPI_Comm comm, int sync, MPI_Request *request)
{
	struct comm *c;
	struct dtype *dt;
	int rc = check(fn, comm, &c, count, datatype, &dt, dest, tag, 0);
	if (rc)
		return rc;
	struct req *r = NULL;
	p2p_send(c, dest, tag, PCTX(c), buf, count, dt, sync, request || sync ? &r : NULL);
	if (request) {
		*request = r->handle;
		return MPI_SUCCESS;
	}
	if (r) {
		wait_reqs(&r, 1, 0);
		req_free(r);
	}
	return MPI_SUCCESS;
}

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
	return do_send("MPI_Send", buf, count, datatype, dest, tag, comm, 0, NULL);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
	return do_send("MPI_Rsend", buf, count, datatype, dest, tag, comm, 0, NULL);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
	return do_send("MPI_Bsend", buf, count, datatype, dest, tag, comm, 0, NULL);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
	return do_send("MPI_Ssend", buf, count, datatype, dest, tag, comm, 1, NULL);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
	      MPI_Request *request)
{
	return do_send("MPI_Isend", buf, count, datatype, dest, tag, comm, 0, request);
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
	       MPI_Request *request)
{
	return do_send("MPI_Irsend", buf, count, datatype, dest, tag, comm, 0, request);
}

int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
	       MPI_Request *request)
{
	return do_send("MPI_Ibsend", buf, count, datatype, dest, tag, comm, 0, request);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
	       MPI_Request *request)
{
	return do_send("MPI_Issend", buf, count, datatype, dest, tag, comm, 1, request);
}

/* complete ends a finished request: its status, its error, its handle. */
static int complete(const char *fn, struct req *r, MPI_Status *st)
{
	req_fill_status(r, st);
	int err = r->st.MPI_ERROR;
	struct comm *c = r->comm;
	unsigned long long total = r->total;
	long cap = (long)r->cap;
	if (r->persistent)
		r->active = 0; /* inactive again, its handle kept */
	else
		req_free(r);
	if (err)
		return cmpi_err(c, err, fn, "message of %llu bytes into a buffer of %ld", total, cap);
	return MPI_SUCCESS;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Request *request)
{
	struct comm *c;
	struct dtype *dt;
	int rc = check("MPI_Irecv", comm, &c, count, datatype, &dt, source, tag, 1);
	if (rc)
		return rc;
	*request = p2p_irecv(c, source, tag, PCTX(c), buf, count, dt)->handle;
	return MPI_SUCCESS;
}

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	struct comm *c;
	struct dtype *dt;
	int rc = check("MPI_Recv", comm, &c, count, datatype, &dt, source, tag, 1);
	if (rc)
		return rc;
	G.cork++; /* the Post goes with the Wait, in one write */
	struct req *r = p2p_irecv(c, source, tag, PCTX(c), buf, count, dt);
	wait_reqs(&r, 1, 0);
	G.cork--;
	conn_flush();
	return complete("MPI_Recv", r, status);
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
		 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
	struct comm *c;
	struct dtype *sdt, *rdt;
	int rc = check("MPI_Sendrecv", comm, &c, sendcount, sendtype, &sdt, dest, sendtag, 0);
	if (rc)
		return rc;
	rc = check("MPI_Sendrecv", comm, &c, recvcount, recvtype, &rdt, source, recvtag, 1);
	if (rc)
		return rc;
	G.cork++; /* Post, Send and Wait in one write */
	struct req *r = p2p_irecv(c, source, recvtag, PCTX(c), recvbuf, recvcount, rdt);
	p2p_send(c, dest, sendtag, PCTX(c), sendbuf, sendcount, sdt, 0, NULL);
	wait_reqs(&r, 1, 0);
	G.cork--;
	conn_flush();
	return complete("MPI_Sendrecv", r, status);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source, int recvtag,
			 MPI_Comm comm, MPI_Status *status)
{
	struct comm *c;
	struct dtype *dt;
	int rc = check("MPI_Sendrecv_replace", comm, &c, count, datatype, &dt, dest, sendtag, 0);
	if (rc)
		return rc;
	rc = check("MPI_Sendrecv_replace", comm, &c, count, datatype, &dt, source, recvtag, 1);
	if (rc)
		return rc;
	size_t n = (size_t)count * dt->size;
	uint8_t *tmp = malloc(n ? n : 1);
	if (!tmp)
		cmpi_die(1, "out of memory");
	struct dtype *byte = dt_get(MPI_BYTE);
	G.cork++; /* Post, Send and Wait in one write */
	struct req *r = p2p_irecv(c, source, recvtag, PCTX(c), tmp, (int)n, byte);
	p2p_send(c, dest, sendtag, PCTX(c), buf, count, dt, 0, NULL);
	wait_reqs(&r, 1, 0);
	G.cork--;
	conn_flush();
	uint64_t got = r->total < n ? r->total : n;
	dt_unpack(tmp, dt->size ? (int)(got / dt->size) : 0, dt, buf);
	free(tmp);
	return complete("MPI_Sendrecv_replace", r, status);
}

static struct req *req_arg(MPI_Request h, int *bad)
{
	*bad = 0;
	if (h == MPI_REQUEST_NULL)
		return NULL;
	struct req *r = req_get(h);
	if (!r)
		*bad = 1;
	else if (r->persistent && !r->active)
		return NULL; /* an inactive persistent request is a null one */
	return r;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
	NEED_INIT("MPI_Wait");
	int bad;
	struct req *r = req_arg(*request, &bad);
	if (bad)
		return cmpi_err(NULL, MPI_ERR_REQUEST, "MPI_Wait", "request %#x", (unsigned)*request);
	if (!r) {
		empty_status(status);
		return MPI_SUCCESS;
	}
	wait_reqs(&r, 1, 0);
	if (!r->persistent)
		*request = MPI_REQUEST_NULL;
	return complete("MPI_Wait", r, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
	NEED_INIT("MPI_Test");
	int bad;
	struct req *r = req_arg(*request, &bad);
	if (bad)
		return cmpi_err(NULL, MPI_ERR_REQUEST, "MPI_Test", "request %#x", (unsigned)*request);
	if (!r) {
		*flag = 1;
		empty_status(status);
		return MPI_SUCCESS;
	}
	if (!r->complete)
		pump(0);
	*flag = r->complete;
	if (!r->complete)
		return MPI_SUCCESS;
	if (!r->persistent)
		*request = MPI_REQUEST_NULL;
	return complete("MPI_Test", r, status);
}

static struct req **gather_reqs(const char *fn, int n, MPI_Request *reqs, int *rc)
{
	struct req **rs = malloc((n > 0 ? n : 1) * sizeof *rs);
	if (!rs)
		cmpi_die(1, "out of memory");
	*rc = MPI_SUCCESS;
	for (int i = 0; i < n; i++) {
		int bad;
		rs[i] = req_arg(reqs[i], &bad);
		if (bad) {
			*rc = cmpi_err(NULL, MPI_ERR_REQUEST, fn, "request %#x at %d", (unsigned)reqs[i], i);
			free(rs);
			return NULL;
		}
	}
	return rs;
}

static int complete_many(const char *fn, int n, MPI_Request *reqs, struct req **rs, MPI_Status *sts, int *idx)
{
	int err = 0;
	struct comm *ec = NULL;
	for (int k = 0; k < n; k++) {
		int i = idx ? idx[k] : k;
		MPI_Status *st = sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[idx ? k : i];
		if (!rs[i]) {
			empty_status(st);
			continue;
		}
		req_fill_status(rs[i], st);
		if (!ST_IGNORED(st))
			st->MPI_ERROR = rs[i]->st.MPI_ERROR;
		if (rs[i]->st.MPI_ERROR) {
			err = 1;
			ec = rs[i]->comm;
		}
		if (rs[i]->persistent)
			rs[i]->active = 0;
		else {
			req_free(rs[i]);
			reqs[i] = MPI_REQUEST_NULL;
		}
	}
	if (err)
		return cmpi_err(ec, MPI_ERR_IN_STATUS, fn, "a request failed (truncated)");
	return MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status sts[])
{
	NEED_INIT("MPI_Waitall");
	int rc;
	struct req **rs = gather_reqs("MPI_Waitall", count, reqs, &rc);
	if (!rs)
		return rc;
	wait_reqs(rs, count, 0);
	rc = complete_many("MPI_Waitall", count, reqs, rs, sts, NULL);
	free(rs);
	return rc;
}

int MPI_Testall(int count, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
	NEED_INIT("MPI_Testall");
	int rc;
	struct req **rs = gather_reqs("MPI_Testall", count, reqs, &rc);
	if (!rs)
		return rc;
	pump(0);
	*flag = ndone(rs, count) == count;
	if (*flag)
		rc = complete_many("MPI_Testall", count, reqs, rs, sts, NULL);
	free(rs);
	return rc;
}

static int any_one(const char *fn, int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status,
		   int block)
{
	NEED_INIT(fn);
	int rc;
	struct req **rs = gather_reqs(fn, count, reqs, &rc);
	if (!rs)
		return rc;
	int active = 0;
	for (int i = 0; i < count; i++)
		active += rs[i] != NULL;
	*index = MPI_UNDEFINED;
	if (!active) {
		*flag = 1;
		empty_status(status);
		free(rs);
		return MPI_SUCCESS;
	}
	if (block)
		wait_reqs(rs, count, 1);
	else
		pump(0);
	*flag = 0;
	for (int i = 0; i < count; i++)
		if (rs[i] && rs[i]->complete) {
			*flag = 1;
			*index = i;
			if (!rs[i]->persistent)
				reqs[i] = MPI_REQUEST_NULL;
			rc = complete(fn, rs[i], status);
			break;
		}
	free(rs);
	return rc;
}

int MPI_Waitany(int count, MPI_Request reqs[], int *index, MPI_Status *status)
{
	int flag;
	return any_one("MPI_Waitany", count, reqs, index, &flag, status, 1);
}

int MPI_Testany(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
	return any_one("MPI_Testany", count, reqs, index, flag, status, 0);
}

static int some(const char *fn, int incount, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[],
		int block)
{
	NEED_INIT(fn);
	int rc;
	struct req **rs = gather_reqs(fn, incount, reqs, &rc);
	if (!rs)
		return rc;
	int active = 0;
	for (int i = 0; i < incount; i++)
		active += rs[i] != NULL;
	if (!active) {
		*outcount = MPI_UNDEFINED;
		free(rs);
		return MPI_SUCCESS;
	}
	if (block)
		wait_reqs(rs, incount, 1);
	else
		pump(0);
	int n = 0;
	for (int i = 0; i < incount; i++)
		if (rs[i] && rs[i]->complete)
			idx[n++] = i;
	*outcount = n;
	rc = complete_many(fn, n, reqs, rs, sts, idx);
	free(rs);
	return rc;
}

int MPI_Waitsome(int incount, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[])
{
	return some("MPI_Waitsome", incount, reqs, outcount, idx, sts, 1);
}

int MPI_Testsome(int incount, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[])
{
	return some("MPI_Testsome", incount, reqs, outcount, idx, sts, 0);
}

int MPI_Request_free(MPI_Request *request)
{
	NEED_INIT("MPI_Request_free");
	struct req *r = req_get(*request);
	if (!r)
		return cmpi_err(NULL, MPI_ERR_REQUEST, "MPI_Request_free", "request %#x", (unsigned)*request);
	if (r->persistent) {
		if (r->inner) /* the current Start's request goes on alone, freed when it completes */
			r->inner->parent = NULL, r->inner->released = 1;
		if (r->pdt)
			dt_unref(r->pdt);
		r->pdt = NULL;
		req_free(r);
	} else if (r->complete)
		req_free(r);
	else
		r->released = 1; /* freed when it completes */
	*request = MPI_REQUEST_NULL;
	return MPI_SUCCESS;
}

/* MPI_Cancel takes back a receive no message has matched yet (it then
 * completes, its status saying cancelled); a send cannot be taken back
 * once handed to the relay, so it completes as sent (MPI allows a cancel
 * to fail; MPI 4.1 deprecates cancelling sends). */
int MPI_Cancel(MPI_Request *request)
{
	NEED_INIT("MPI_Cancel");
	struct req *r = req_get(*request);
	if (!r)
		return cmpi_err(NULL, MPI_ERR_REQUEST, "MPI_Cancel", "request %#x", (unsigned)*request);
	if (r->kind == RQ_NBC)
		return cmpi_err(r->comm, MPI_ERR_REQUEST, "MPI_Cancel", "a non-blocking collective cannot be cancelled");
	if (r->persistent)
		r = r->inner; /* the active Start's, if any */
	if (!r || r->complete || r->kind != RQ_RECV || r->got > 0)
		return MPI_SUCCESS;
	if (post_take_back(r)) {
		r->st.count_lo = 0;
		r->st.count_hi_and_cancelled = 1;
		r->st.MPI_ERROR = MPI_SUCCESS;
		r->complete = 1;
		req_done(r);
	}
	return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag)
{
	*flag = status->count_hi_and_cancelled & 1;
	return MPI_SUCCESS;
}

static MPI_Count status_bytes(const MPI_Status *st)
{
	return (MPI_Count)(unsigned)st->count_lo | ((MPI_Count)(st->count_hi_and_cancelled >> 1) << 32);
}

int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
	struct dtype *dt = dt_any(datatype);
	if (!dt)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Get_count", "datatype %#x", (unsigned)datatype);
	MPI_Count b = status_bytes(status);
	if (dt->size == 0)
		*count = b == 0 ? 0 : MPI_UNDEFINED;
	else if (b % dt->size || b / dt->size > INT32_MAX)
		*count = MPI_UNDEFINED;
	else
		*count = (int)(b / dt->size);
	return MPI_SUCCESS;
}

int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
	struct dtype *dt = dt_any(datatype);
	if (!dt)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Get_elements", "datatype %#x", (unsigned)datatype);
	struct dtype *basic = dt->basic ? dt_any(dt->basic) : NULL;
	if (basic && basic != dt)
		return MPI_Get_count(status, dt->basic, count);
	return MPI_Get_count(status, datatype, count);
}

int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count)
{
	int c;
	int rc = MPI_Get_elements(status, datatype, &c);
	*count = c;
	return rc;
}

int MPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
	struct dtype *dt = dt_any(datatype);
	if (!dt)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Status_set_elements", "datatype %#x", (unsigned)datatype);
	MPI_Count b = (MPI_Count)count * dt->size;
	status->count_lo = (int)(b & 0xffffffff);
	status->count_hi_and_cancelled = (status->count_hi_and_cancelled & 1) | (int)((b >> 32) << 1);
	return MPI_SUCCESS;
}

/* ---- probe ---- */

static void stash_status(struct stash *s, struct comm *c, MPI_Status *st)
{
	if (ST_IGNORED(st))
		return;
	struct phdr h;
	if (cmpi_phdr_parse(s->x, s->n, &h) < 0)
		cmpi_die(1, "rank %d sent a malformed message", s->wsrc);
	st->MPI_SOURCE = c->w2c[s->wsrc];
	st->MPI_TAG = s->tag;
	st->count_lo = (int)(h.total & 0xffffffffu);
	st->count_hi_and_cancelled = (int)((h.total >> 32) << 1);
}

/* do_probe is Probe (block) and Iprobe; found, if not NULL, gets the
 * stashed message it found (Mprobe takes it out of the stash). */
static int do_probe(const char *fn, int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status, int block,
		    struct stash **found)
{
	struct comm *c;
	struct dtype *dt;
	int rc = check(fn, comm, &c, 0, MPI_BYTE, &dt, source, tag, 1);
	if (rc)
		return rc;
	if (source == MPI_PROC_NULL) {
		*flag = 1;
		if (!ST_IGNORED(status)) {
			empty_status(status);
			status->MPI_SOURCE = MPI_PROC_NULL;
		}
		return MPI_SUCCESS;
	}
	int wsrc = source == MPI_ANY_SOURCE ? -1 : c->w[source];
	int t = tag == MPI_ANY_TAG ? -1 : tag;
	int ctx = PCTX(c);
	pump(0);
	struct stash *s = stash_find(ctx, wsrc, t, NULL);
#define CHAN_ONLY (chan_local(wsrc) || (wsrc < 0 && chan_all()))
	if (!s && CHAN_ONLY) {
		/* a granted peer's messages come to the stash, never to the
		 * relay: until its channel ends (taken back), then the relay's */
		while (block && !(s = stash_find(ctx, wsrc, t, NULL)) && CHAN_ONLY)
			pump(1);
		if (!s && CHAN_ONLY) {
			*flag = 0;
			return MPI_SUCCESS;
		}
	}
#undef CHAN_ONLY
	if (!s) {
		int ws, wt;
		if (chan_active() && wsrc < 0 && block) {
			/* the relay's and the channels' messages both */
			if (!probe_relay_chan(wsrc, t, ctx, &ws, &wt)) {
				s = stash_find(ctx, wsrc, t, NULL);
				goto found;
			}
			post(P_STASH, NULL, ws, wt, ctx, 0);
			while (!(s = stash_find(ctx, wsrc, t, NULL)))
				pump(1);
			goto found;
		}
		if (G.relay_v >= 2) {
			if (!probe_relay(wsrc, t, ctx, block, &ws, &wt)) {
				*flag = 0;
				return MPI_SUCCESS;
			}
		} else if (!block) {
			cmpi_die(1, "%s needs a relay that speaks protocol 2 (Probe): this one speaks %d", fn, G.relay_v);
		} else {
			ws = wsrc;
			wt = t;
		}
		/* take the message: the exact receive gets the oldest from ws with wt, the one found */
		post(P_STASH, NULL, ws, wt, ctx, 0);
		while (!(s = stash_find(ctx, wsrc, t, NULL)))
			pump(1);
	}
found:
	*flag = 1;
	stash_status(s, c, status);
	if (found)
		*found = s;
	return MPI_SUCCESS;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	int flag;
	return do_probe("MPI_Probe", source, tag, comm, &flag, status, 1, NULL);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
	return do_probe("MPI_Iprobe", source, tag, comm, flag, status, 0, NULL);
}

/* ---- matched probes ---- */

/* A matched message (MPI_Message): a stashed message Mprobe took out of
 * the stash, so that no receive but the Mrecv given it gets it. MPICH's
 * messages are requests: their handles are too, above any request's
 * index (MSG_BASE), so that neither is taken for the other. */
struct matched {
	int used;
	struct stash *s;
	struct comm *c;
};
TABLE(struct matched, matched)
#define MSG_BASE 0xae000000u

static int do_mprobe(const char *fn, int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
		     MPI_Status *status, int block)
{
	struct stash *s = NULL;
	int rc = do_probe(fn, source, tag, comm, flag, status, block, &s);
	if (rc != MPI_SUCCESS || !*flag)
		return rc;
	if (source == MPI_PROC_NULL) {
		*message = MPI_MESSAGE_NO_PROC;
		return MPI_SUCCESS;
	}
	struct stash *prev = NULL;
	for (struct stash *q = G.stash_head; q != s; q = q->next)
		prev = q;
	stash_unlink(s, prev);
	int i = slot_matched();
	*matched[i] = (struct matched){1, s, comm_get(comm)};
	*message = (MPI_Message)(MSG_BASE + (unsigned)i);
	return MPI_SUCCESS;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
	int flag;
	return do_mprobe("MPI_Mprobe", source, tag, comm, &flag, message, status, 1);
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
	return do_mprobe("MPI_Improbe", source, tag, comm, flag, message, status, 0);
}

/* do_mrecv starts the receive of a matched message into a request (NULL
 * for MPI_MESSAGE_NO_PROC's, done at once). */
static int do_mrecv(const char *fn, void *buf, int count, MPI_Datatype datatype, MPI_Message *message, struct req **out)
{
	NEED_INIT(fn);
	*out = NULL;
	if (*message == MPI_MESSAGE_NO_PROC) {
		*message = MPI_MESSAGE_NULL;
		return MPI_SUCCESS;
	}
	unsigned i = (unsigned)*message - MSG_BASE;
	if ((unsigned)*message < MSG_BASE || i >= (unsigned)n_matched || !matched[i]->used)
		return cmpi_err(NULL, MPI_ERR_REQUEST, fn, "message %#x: none Mprobe or Improbe gave", (unsigned)*message);
	struct stash *s = matched[i]->s;
	struct comm *c = matched[i]->c;
	struct dtype *dt = dt_get(datatype);
	if (!dt)
		return cmpi_err(c, MPI_ERR_TYPE, fn, "datatype %#x", (unsigned)datatype);
	if (count < 0)
		return cmpi_err(c, MPI_ERR_COUNT, fn, "count %d", count);
	matched[i]->used = 0;
	*message = MPI_MESSAGE_NULL;
	struct req *r = recv_req(c, s->ctx, buf, count, dt);
	r->src = s->wsrc;
	r->tag = s->tag;
	deliver_first(r, s->wsrc, s->tag, s->x, s->n); /* a large message's other fragments are posted for */
	free(s);
	*out = r;
	return MPI_SUCCESS;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
	struct req *r;
	int rc = do_mrecv("MPI_Mrecv", buf, count, datatype, message, &r);
	if (rc != MPI_SUCCESS)
		return rc;
	if (!r) {
		if (!ST_IGNORED(status)) {
			empty_status(status);
			status->MPI_SOURCE = MPI_PROC_NULL;
		}
		return MPI_SUCCESS;
	}
	wait_reqs(&r, 1, 0);
	return complete("MPI_Mrecv", r, status);
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request)
{
	struct req *r;
	int rc = do_mrecv("MPI_Imrecv", buf, count, datatype, message, &r);
	if (rc != MPI_SUCCESS)
		return rc;
	if (!r) { /* MPI_MESSAGE_NO_PROC: a receive from MPI_PROC_NULL, done */
		r = req_new(RQ_RECV);
		r->st.MPI_SOURCE = MPI_PROC_NULL;
		r->st.MPI_TAG = MPI_ANY_TAG;
		r->complete = 1;
	}
	*request = r->handle;
	return MPI_SUCCESS;
}

/* ---- persistent requests ---- */

static int pinit(const char *fn, const void *buf, int count, MPI_Datatype datatype, int peer, int tag, MPI_Comm comm,
		 int kind, int sync, MPI_Request *request)
{
	struct comm *c;
	struct dtype *dt;
	int rc = check(fn, comm, &c, count, datatype, &dt, peer, tag, kind == RQ_RECV);
	if (rc)
		return rc;
	struct req *r = req_new(kind);
	r->persistent = 1;
	r->complete = 1; /* inactive */
	r->comm = c;
	r->pbuf = buf;
	r->pcount = count;
	r->pdt = dt;
	dt_ref(dt);
	r->ppeer = peer;
	r->ptag = tag;
	r->psync = sync;
	*request = r->handle;
	return MPI_SUCCESS;
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		  MPI_Request *request)
{
	return pinit("MPI_Send_init", buf, count, datatype, dest, tag, comm, RQ_SEND, 0, request);
}

int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	return pinit("MPI_Bsend_init", buf, count, datatype, dest, tag, comm, RQ_SEND, 0, request);
}

int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	return pinit("MPI_Rsend_init", buf, count, datatype, dest, tag, comm, RQ_SEND, 0, request);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
		   MPI_Request *request)
{
	return pinit("MPI_Ssend_init", buf, count, datatype, dest, tag, comm, RQ_SEND, 1, request);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
		  MPI_Request *request)
{
	return pinit("MPI_Recv_init", buf, count, datatype, source, tag, comm, RQ_RECV, 0, request);
}

int MPI_Start(MPI_Request *request)
{
	NEED_INIT("MPI_Start");
	struct req *r = req_get(*request);
	if (!r || !r->persistent || r->active)
		return cmpi_err(NULL, MPI_ERR_REQUEST, "MPI_Start", "request %#x is %s", (unsigned)*request,
				!r || !r->persistent ? "not persistent" : "active");
	struct comm *c = r->comm;
	if (!c->used || !r->pdt->used)
		return cmpi_err(NULL, MPI_ERR_REQUEST, "MPI_Start", "request %#x: its communicator or datatype is gone", (unsigned)*request);
	struct req *in;
	if (r->kind == RQ_RECV)
		in = p2p_irecv(c, r->ppeer, r->ptag, PCTX(c), (void *)r->pbuf, r->pcount, r->pdt);
	else
		p2p_send(c, r->ppeer, r->ptag, PCTX(c), r->pbuf, r->pcount, r->pdt, r->psync, &in);
	r->active = 1;
	r->complete = 0;
	r->inner = in;
	in->parent = r;
	if (in->complete)
		req_done(in);
	return MPI_SUCCESS;
}

int MPI_Startall(int count, MPI_Request requests[])
{
	for (int i = 0; i < count; i++) {
		int rc = MPI_Start(&requests[i]);
		if (rc)
			return rc;
	}
	return MPI_SUCCESS;
}
