/* The rank's connection to its agent's relay: Hello/Welcome, writing
 * frames, and pump(), which reads what the relay sent and completes the
 * requests it concerns. Reads block in recv(2), never spin: a rank waiting
 * for a message sleeps in the kernel, and under bcs the relay has been
 * told (Wait) so that it can lend the processor. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cmpi.h"

struct cmpi G = {.fd = -1};

/* A posted receive or probe: the relay's request id is gen<<32 | slot, so
 * an answer for a slot since reused (an Unwaited probe's late answer) is
 * recognised and dropped. */
struct postslot {
	uint32_t gen;
	int kind;
	struct req *r;
	MPI_Aint off;
	int found, answered, src, tag; /* P_PROBE answer */
	int ctx;                       /* as posted (P_STASH's stash) */
	int local;                     /* a channel's: the relay never saw it (chan.c) */
	/* what a resumed connection posts again (conn_recover) */
	uint64_t order; /* posting order */
	int psrc, ptag, pblock;
	int waited; /* in a Wait not yet ended by an Unwait */
	int cancelling; /* a Cancel was sent: answered and found say its answer */
};

static uint64_t post_order;

static struct postslot *posts;
static int nposts, capposts, *freeposts, nfree;

/* slot_id is the id of slot p: its generation and its index. */
static uint64_t slot_id(const struct postslot *p) { return (uint64_t)p->gen << 32 | (uint32_t)(p - posts); }

static struct postslot *slot_of(uint64_t id)
{
	uint32_t i = (uint32_t)id, gen = (uint32_t)(id >> 32);
	if (i >= (uint32_t)nposts || posts[i].kind == P_NONE || posts[i].gen != gen)
		return NULL;
	return &posts[i];
}

static uint64_t slot_new(int kind, struct req *r, MPI_Aint off)
{
	int i;
	if (nfree)
		i = freeposts[--nfree];
	else {
		if (nposts == capposts) {
			capposts = capposts ? 2 * capposts : 64;
			posts = realloc(posts, capposts * sizeof *posts);
			freeposts = realloc(freeposts, capposts * sizeof *freeposts);
			if (!posts || !freeposts)
				cmpi_die(1, "out of memory");
		}
		i = nposts++;
		posts[i].gen = 0;
	}
	struct postslot *p = &posts[i];
	p->gen++;
	if (p->gen == 0)
		p->gen = 1;
	p->kind = kind;
	p->r = r;
	p->off = off;
	p->found = p->answered = p->local = p->cancelling = 0;
	p->order = ++post_order;
	p->waited = 0;
	return slot_id(p);
}

static void slot_free(struct postslot *p)
{
	p->kind = P_NONE;
	p->r = NULL;
	freeposts[nfree++] = (int)(p - posts);
}

/* write_all writes every byte, or, on a connection that numbers its
 * messages, stops at a failure and marks it broken: what was lost is
 * said again when conn_recover resumes it, since every frame's state
 * (kept message, posted slot, barrier, Finalize) is recorded before the
 * frame is written. */
static void write_all(const struct iovec *iov0, int n)
{
	if (G.broken)
		return;
	struct iovec iov[3];
	memcpy(iov, iov0, n * sizeof *iov);
	int i = 0;
	while (i < n) {
		/* sendmsg, not writev: MSG_NOSIGNAL turns a relay gone into an
		 * error the library reports, not a SIGPIPE that kills the rank */
		struct msghdr mh = {.msg_iov = iov + i, .msg_iovlen = n - i};
		ssize_t w = sendmsg(G.fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (G.numbered && errno != EAGAIN) {
				G.broken = 1; /* resumed at the next pump */
				return;
			}
			if (errno == EPIPE || errno == ECONNRESET) {
				G.fd = -1; /* nothing more can be said to it */
				cmpi_die(1, "the relay closed the connection");
			}
			if (errno == EAGAIN) {
				struct pollfd pf = {G.fd, POLLOUT, 0};
				poll(&pf, 1, -1);
				continue;
			}
			int e = errno;
			G.fd = -1;
			cmpi_die(1, "write to the relay: %s", strerror(e));
		}
		while (i < n && (size_t)w >= iov[i].iov_len) {
			w -= iov[i].iov_len;
			i++;
		}
		if (i < n) {
			iov[i].iov_base = (char *)iov[i].iov_base + w;
			iov[i].iov_len -= w;
		}
	}
}

/* Frames are gathered in G.pend and written together: a blocking receive's
 * Post and Wait (and a Sendrecv's Send before them) leave in one sendmsg,
 * and the relay reads them in one read. The rule: what is written goes
 * out at once unless G.cork is set, and in any case before the rank
 * blocks (pump) — so no frame waits in the library while the rank
 * computes. Large payloads are written from where they lie (one sendmsg
 * with what is pending before them), never copied into G.pend. */
#define PEND_COPY_MAX 16384

/* keep_lost_colls keeps the Coll frames among frames p[0..n) that a
 * broken connection lost: the only frames whose state is not recorded
 * elsewhere (conn_recover says them again). */
static void keep_lost_colls(const uint8_t *p, size_t n)
{
	while (n >= 6) {
		size_t l = 4 + ((size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3]);
		if (l > n)
			return;
		if (p[5] == FR_COLL) {
			buf_reserve(&G.lost, l);
			memcpy(G.lost.p + G.lost.len, p, l);
			G.lost.len += l;
		}
		p += l;
		n -= l;
	}
}

void conn_flush(void)
{
	if (G.pend.len == 0)
		return;
	struct iovec iov = {G.pend.p, G.pend.len};
	size_t n = G.pend.len;
	G.pend.len = 0; /* before writing: a failure exits, and must not write it again */
	write_all(&iov, 1);
	if (G.broken)
		keep_lost_colls(G.pend.p, n);
}

static void frame_header(uint8_t h[6], int type, size_t blen)
{
	uint32_t l = 2 + blen;
	h[0] = l >> 24;
	h[1] = l >> 16;
	h[2] = l >> 8;
	h[3] = l;
	h[4] = 1;
	h[5] = type;
}

/* frame_append appends to b one frame whose body is body followed by tail
 * (a resumed connection's replay: resume.c). */
void frame_append(struct buf *b, int type, const uint8_t *body, size_t n, const void *tail, size_t tn)
{
	buf_reserve(b, 6 + n + tn);
	uint8_t *h = b->p + b->len;
	frame_header(h, type, n + tn);
	memcpy(h + 6, body, n);
	if (tn)
		memcpy(h + 6 + n, tail, tn);
	b->len += 6 + n + tn;
}

/* conn_writev2 writes one frame whose body is head followed by tail (at
 * once, unless corked). */
void conn_writev2(int type, const uint8_t *head, size_t hlen, const void *tail, size_t tlen)
{
	uint8_t h[6];
	frame_header(h, type, hlen + tlen);
	if (tlen > PEND_COPY_MAX) {
		buf_reserve(&G.pend, 6 + hlen);
		memcpy(G.pend.p + G.pend.len, h, 6);
		memcpy(G.pend.p + G.pend.len + 6, head, hlen);
		size_t n = G.pend.len;
		struct iovec iov[2] = {{G.pend.p, G.pend.len + 6 + hlen}, {(void *)tail, tlen}};
		G.pend.len = 0;
		write_all(iov, 2);
		if (G.broken)
			keep_lost_colls(G.pend.p, n);
		return;
	}
	buf_reserve(&G.pend, 6 + hlen + tlen);
	memcpy(G.pend.p + G.pend.len, h, 6);
	memcpy(G.pend.p + G.pend.len + 6, head, hlen);
	if (tlen)
		memcpy(G.pend.p + G.pend.len + 6 + hlen, tail, tlen);
	G.pend.len += 6 + hlen + tlen;
	if (!G.cork)
		conn_flush();
}

void conn_write(int type, struct buf *b) { conn_writev2(type, b->p, b->len, NULL, 0); }

/* conn_write_lazy queues a frame that may wait for the next one or for
 * pump (an announcement: Coll). */
static void conn_write_lazy(int type, struct buf *b)
{
	G.cork++;
	conn_write(type, b);
	G.cork--;
}

static void handle(const struct inframe *f);

/* read_some reads what is there; with block it first sleeps in recv(2)
 * until something is. Returns 0 at end of file. */
static int read_some(int block)
{
	for (;;) {
		if (G.in_off > 0 && G.in_off == G.in.len)
			G.in.len = G.in_off = 0;
		if (G.in.cap - G.in.len < 65536) {
			if (G.in_off > 0) { /* compact */
				memmove(G.in.p, G.in.p + G.in_off, G.in.len - G.in_off);
				G.in.len -= G.in_off;
				G.in_off = 0;
			}
			buf_reserve(&G.in, 65536);
		}
		size_t room = G.in.cap - G.in.len;
		ssize_t n = recv(G.fd, G.in.p + G.in.len, room, block ? 0 : MSG_DONTWAIT);
		if (n > 0) {
			G.in.len += n;
			if ((size_t)n < room)
				return 1; /* drained: a read more would say EAGAIN */
			block = 0;
			continue;
		}
		if (n == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 1;
		if (G.numbered)
			return 0; /* the relay died: resumed (conn_recover) */
		cmpi_die(1, "read from the relay: %s", strerror(errno));
	}
}

static void parse_frames(void)
{
	for (;;) {
		int type;
		const uint8_t *body;
		size_t bl;
		ssize_t used = cmpi_frame_split(G.in.p + G.in_off, G.in.len - G.in_off, &type, &body, &bl);
		if (used < 0)
			cmpi_die(1, "the relay sent a malformed frame");
		if (used == 0) {
			/* make room for a large frame being read */
			if (G.in.len - G.in_off >= 4) {
				const uint8_t *q = G.in.p + G.in_off;
				size_t l = (size_t)q[0] << 24 | (size_t)q[1] << 16 | (size_t)q[2] << 8 | q[3];
				if (G.in_off + 4 + l > G.in.cap) {
					memmove(G.in.p, G.in.p + G.in_off, G.in.len - G.in_off);
					G.in.len -= G.in_off;
					G.in_off = 0;
					buf_reserve(&G.in, 4 + l + 65536 - G.in.len);
				}
			}
			return;
		}
		G.in_off += used;
		struct inframe f;
		if (cmpi_decode(type, body, bl, &f))
			cmpi_die(1, "the relay sent a malformed frame of type %d", type);
		G.in_parse++;
		handle(&f);
		G.in_parse--;
	}
}

/* pump writes what is pending, then processes what the relay sent; with
 * block it first sleeps (in recv, not spinning) until something arrives. */
void pump(int block)
{
	/* passive-target commands that came in earlier (to this rank from
	 * itself, at once) first: having served one, there may be nothing
	 * left to wait for */
	if (!G.in_parse && win_progress())
		block = 0;
	conn_flush();
	if (!G.broken && chan_active()) {
		/* the relay's socket and the channels together (chan.c) */
		for (;;) {
			size_t had = G.in.len - G.in_off;
			unsigned ev = chan_step();
			int alive = read_some(0);
			size_t got = G.in.len - G.in_off;
			parse_frames();
			if (!alive && G.numbered) {
				G.broken = 1;
				break;
			}
			if (!alive) {
				G.fd = -1;
				cmpi_die(1, "the relay closed the connection");
			}
			if (!block || ev || got != had)
				return;
			chan_wait();
			block = 0;
		}
	} else if (!G.broken) {
		int alive = read_some(block);
		parse_frames();
		if (!alive && G.numbered)
			G.broken = 1;
		else if (!alive) {
			G.fd = -1;
			cmpi_die(1, "the relay closed the connection");
		}
	}
	if (G.broken)
		conn_recover(); /* callers loop on their condition: returning without news is fine */
	if (!G.in_parse)
		win_progress(); /* it sends: not in the middle of a frame's handling */
}

/* slot_pending says whether the receive of slot id still waits for its
 * message (a wildcard's: the relay has not matched it yet). */
int slot_pending(uint64_t id)
{
	struct postslot *p = slot_of(id);
	return p && p->kind != P_STASH && p->kind != P_PROBE;
}

static void pass_on(int ctx, int wsrc, int tag, const uint8_t *x, size_t n);

/* deliver_slot hands a message to the receive of slot id (the relay's
 * Deliver, or a channel's message: chan.c). keep: the relay may still
 * deliver to this slot (a wildcard posted there too), so it stays, as a
 * stash post. */
void deliver_slot(uint64_t id, int wsrc, int tag, const uint8_t *x, size_t n, int keep)
{
	struct postslot *p = slot_of(id);
	if (!p)
		return; /* unknown request: ignored (MPI-WIRE.md) */
	struct postslot s = *p;
	if (keep) {
		p->kind = P_STASH;
		p->r = NULL;
	} else
		slot_free(p);
	if (s.r)
		s.r->outstanding--;
	switch (s.kind) {
	case P_RECV:
		if (s.r && G.stash_head && stash_swap(s.r, wsrc, tag, x, n))
			break;
		deliver_first(s.r, wsrc, tag, x, n);
		break;
	case P_FRAG:
		deliver_frag(s.r, s.off, x, n);
		break;
	case P_ACK:
		if (s.r && s.r->outstanding == 0) {
			s.r->complete = 1;
			req_done(s.r);
		}
		break;
	case P_STASH:
		pass_on(s.ctx, wsrc, tag, x, n);
		break;
	default:
		break;
	}
}

/* pass_on takes a message the relay matched with a receive that a channel
 * had satisfied first (a stash post, chan.c): the relay will not match it
 * again, so it goes to the oldest receive still waiting at the relay that
 * it matches (which stays posted there, now a stash post itself), else to
 * the stash. Only stashing it would strand a receive posted before it
 * came: that receive looked at the stash when it was posted and now waits
 * for the relay alone (a wildcard's last message of a round never came). */
static void pass_on(int ctx, int wsrc, int tag, const uint8_t *x, size_t n)
{
	struct postslot *oldest = NULL;
	for (int i = 0; i < nposts; i++) {
		struct postslot *q = &posts[i];
		if (q->kind == P_RECV && q->r && !q->local && q->ctx == ctx && (q->psrc < 0 || q->psrc == wsrc) &&
		    (q->ptag < 0 || q->ptag == tag) && (!oldest || q->order < oldest->order))
			oldest = q;
	}
	if (!oldest) {
		stash_add(ctx, wsrc, tag, x, n);
		return;
	}
	deliver_slot(slot_id(oldest), wsrc, tag, x, n, 1);
}

static void handle(const struct inframe *f)
{
	struct postslot *p;
	switch (f->type) {
	case FR_DELIVER:
		if (f->s < 0 || f->s >= G.size || f->t < 0 || f->t > INT32_MAX)
			cmpi_die(1, "the relay delivered a message from rank %lld tag %lld", (long long)f->s, (long long)f->t);
		/* a numbered message counts as received even for a request
		 * since forgotten: the relay delivered it, once */
		if (f->q && G.numbered && !got_record((int)f->s, f->q))
			cmpi_die(1, "the relay delivered message %llu from rank %lld twice", (unsigned long long)f->q, (long long)f->s);
		deliver_slot(f->r, (int)f->s, (int)f->t, f->x, f->xlen, 0);
		return;
	case FR_PROBED:
		p = slot_of(f->r);
		if (!p || p->kind != P_PROBE)
			return;
		p->answered = 1;
		p->found = f->f;
		p->src = (int)f->s;
		p->tag = (int)f->t;
		return;
	case FR_CANCELLED:
		p = slot_of(f->r);
		if (!p || !p->cancelling)
			return; /* delivered first: its slot is gone */
		p->answered = 1;
		p->found = f->f;
		return;
	case FR_RELEASE:
		if (f->r > G.released)
			G.released = f->r;
		return;
	case FR_BYE:
		G.bye = 1;
		return;
	case FR_ACKED:
		if (G.numbered && f->s >= 0 && f->s < G.size) {
			const uint8_t *a = f->arr;
			size_t n = f->arrlen;
			for (uint32_t i = 0; i < f->narr; i++)
				sent_ack((int)f->s, cmpi_uint_next(&a, &n));
		}
		return;
	case FR_RESEND:
		/* a destination's relay restarted: say again what it may have
		 * lost (a broken connection says everything when resumed) */
		if (G.numbered && !G.broken) {
			const uint8_t *a = f->arr;
			size_t n = f->arrlen;
			for (uint32_t i = 0; i < f->narr; i++) {
				uint64_t d = cmpi_uint_next(&a, &n);
				if (d < (uint64_t)G.size)
					sent_resend(&G.pend, (int)d);
			}
			chan_resay(); /* and a broken channel's count */
			if (!G.cork)
				conn_flush();
		}
		return;
	case FR_FATAL:
		fprintf(stderr, "cosched MPI: rank %d: the relay ended the connection: %.*s\n", G.rank, (int)f->strlen, f->str);
		exit(1);
	case FR_REVOKE:
		chan_revoke(); /* done at the next chan_step, outside the parse */
		return;
	case FR_BROKEN:
		if (f->s >= 0 && f->s < G.size)
			chan_broken((int)f->s, f->q, f->f);
		return;
	}
	/* other types (a newer relay's): ignored */
}

static void post_fields(struct buf *b, uint64_t id, const struct postslot *p);
static void write_post(struct buf *b, uint64_t id);

uint64_t post(int kind, struct req *r, int src, int tag, int ctx, MPI_Aint off)
{
	uint64_t id = slot_new(kind, r, off);
	struct postslot *p = slot_of(id);
	p->ctx = ctx;
	if (chan_active() && chan_post(id, src, tag, ctx)) {
		p->local = 1;
		if (r)
			r->outstanding++;
		return id; /* from a granted peer: matched here (chan.c) */
	}
	p->psrc = src;
	p->ptag = tag;
	if (r)
		r->outstanding++;
	write_post(&G.out, id);
	return id;
}

/* post_fields encodes slot id's Post (or Probe) as a resumed connection
 * says it again too: from the slot's psrc, ptag, ctx (and pblock). */
static void post_fields(struct buf *b, uint64_t id, const struct postslot *p)
{
	b->len = 0;
	mp_map(b, p->kind == P_PROBE ? 5 : 4);
	mp_str(b, "r");
	mp_uint(b, id);
	mp_str(b, "s");
	mp_int(b, p->psrc);
	mp_str(b, "t");
	mp_int(b, p->ptag);
	mp_str(b, "c");
	mp_int(b, p->ctx);
	if (p->kind == P_PROBE) {
		mp_str(b, "b");
		mp_bool(b, p->pblock);
	}
}

/* write_post says slot id's Post to the relay, in b, and a Wait for it
 * if the rank is blocked: the relay must know the rank waits for it. */
static void write_post(struct buf *b, uint64_t id)
{
	post_fields(b, id, slot_of(id));
	conn_write(FR_POST, b);
	if (!G.blocking)
		return;
	struct postslot *p = slot_of(id); /* again: writing may have resumed the connection */
	if (p)
		p->waited = 1;
	b->len = 0;
	mp_map(b, 1);
	mp_str(b, "r");
	mp_array(b, 1);
	mp_uint(b, id);
	conn_write(FR_WAIT, b);
}

/* post_relay posts to the relay the receive of slot id that a channel
 * would have matched (chan.c): its peer's channel has ended, and what the
 * peer sends now comes through the relay. */
void post_relay(uint64_t id, int src, int tag, int ctx)
{
	struct postslot *p = slot_of(id);
	if (!p || !p->local)
		return;
	p->local = 0;
	p->psrc = src;
	p->ptag = tag;
	p->ctx = ctx;
	struct buf b = {0};
	write_post(&b, id);
	free(b.p);
}

/* post_cancel_for forgets r's outstanding posts (its receive was freed):
 * what they still deliver is dropped. */
void post_cancel_for(struct req *r)
{
	for (int i = 0; i < nposts; i++)
		if (posts[i].kind != P_NONE && posts[i].r == r)
			posts[i].r = NULL, posts[i].kind = P_DEAD; /* still posted: what it matches is dropped */
}

/* post_take_back takes back r's receive (MPI_Cancel) if no message has
 * matched it yet: from the relay (Cancel, whose answer says whether it
 * was still posted there; a message it matched first has been delivered
 * by then) and from a channel's list (where a freed slot's entry is
 * dropped when next looked at: take, in chan.c). It reports whether it
 * was taken back; the caller completes r as cancelled. */
int post_take_back(struct req *r)
{
	int i;
	for (i = 0; i < nposts; i++)
		if (posts[i].kind == P_RECV && posts[i].r == r)
			break;
	if (i == nposts)
		return 0; /* matched: its message, or the rest of it, is on the way */
	uint64_t id = slot_id(&posts[i]);
	if (!posts[i].local) {
		if (G.relay_v < 4)
			cmpi_die(1, "MPI_Cancel needs a relay that speaks protocol 4: this one speaks %d", G.relay_v);
		posts[i].cancelling = 1;
		posts[i].answered = 0;
		G.out.len = 0;
		mp_map(&G.out, 1);
		mp_str(&G.out, "r");
		mp_uint(&G.out, id);
		conn_write(FR_CANCEL, &G.out);
		struct postslot *p;
		while ((p = slot_of(id)) && !p->answered)
			pump(1);
		if (!p || !p->found)
			return 0; /* delivered before the relay had the Cancel */
	}
	slot_free(&posts[i]);
	r->outstanding--;
	return 1;
}

static void wait_frame(int type, struct req **rs, int n)
{
	int cnt = 0;
	for (int i = 0; i < nposts; i++) {
		if (posts[i].kind == P_NONE || !posts[i].r || posts[i].local)
			continue;
		for (int j = 0; j < n; j++)
			if (rs[j] == posts[i].r || (rs[j] && (posts[i].r->parent == rs[j] || posts[i].r->nbc == rs[j]))) {
				cnt++;
				break;
			}
	}
	if (cnt == 0)
		return;
	G.out.len = 0;
	mp_map(&G.out, 1);
	mp_str(&G.out, "r");
	mp_array(&G.out, cnt);
	for (int i = 0; i < nposts; i++) {
		if (posts[i].kind == P_NONE || !posts[i].r || posts[i].local)
			continue;
		for (int j = 0; j < n; j++)
			if (rs[j] == posts[i].r || (rs[j] && (posts[i].r->parent == rs[j] || posts[i].r->nbc == rs[j]))) {
				mp_uint(&G.out, slot_id(&posts[i]));
				posts[i].waited = type == FR_WAIT;
				break;
			}
	}
	if (type == FR_UNWAIT) {
		/* Unwait's barrier field: 0, none */
		G.out.p[0] = 0x82;
		mp_str(&G.out, "b");
		mp_uint(&G.out, 0);
	}
	conn_write(type, &G.out);
}

void send_frame_wait(struct req **rs, int n) { wait_frame(FR_WAIT, rs, n); }
void send_frame_unwait(struct req **rs, int n) { wait_frame(FR_UNWAIT, rs, n); }

/* probe_send asks the relay for the oldest message matching, recording
 * the probe so that a resumed connection asks again (replay); returns the
 * probe's slot id. */
static uint64_t probe_send(int src, int tag, int ctx, int block)
{
	uint64_t id = slot_new(P_PROBE, NULL, 0);
	struct postslot *q = slot_of(id);
	q->psrc = src;
	q->ptag = tag;
	q->ctx = ctx;
	q->pblock = block;
	post_fields(&G.out, id, q);
	conn_write(FR_PROBE, &G.out);
	return id;
}

/* probe_answer takes an answered probe's result and frees its slot. */
static int probe_answer(struct postslot *p, int *wsrc, int *wtag)
{
	int found = p->found;
	*wsrc = p->src;
	*wtag = p->tag;
	slot_free(p);
	return found;
}

/* probe_relay asks the relay (protocol 2) for the oldest message matching;
 * returns 1 and fills src/tag when there is one. */
int probe_relay(int src, int tag, int ctx, int block, int *wsrc, int *wtag)
{
	uint64_t id = probe_send(src, tag, ctx, block);
	struct postslot *p;
	while (!(p = slot_of(id))->answered)
		pump(1);
	return probe_answer(p, wsrc, wtag);
}

/* probe_relay_chan is a blocking probe_relay that a channel's message
 * may answer first: then it cancels the relay's probe (Unwait; a late
 * answer is dropped) and returns 0, the message being in the stash. */
int probe_relay_chan(int src, int tag, int ctx, int *wsrc, int *wtag)
{
	uint64_t id = probe_send(src, tag, ctx, 1);
	struct postslot *p;
	while (!(p = slot_of(id))->answered) {
		if (stash_has(ctx, src, tag)) {
			slot_free(p);
			G.out.len = 0;
			mp_map(&G.out, 2);
			mp_str(&G.out, "r");
			mp_array(&G.out, 1);
			mp_uint(&G.out, id);
			mp_str(&G.out, "b");
			mp_uint(&G.out, 0);
			conn_write(FR_UNWAIT, &G.out);
			return 0;
		}
		pump(1);
	}
	return probe_answer(p, wsrc, wtag);
}

void send_coll(struct comm *c, const char *kind, int root, int64_t bytes)
{
	if (G.relay_v < 2)
		return; /* a relay of protocol 1 fails on frame types it does not know */
	G.out.len = 0;
	mp_map(&G.out, 5);
	mp_str(&G.out, "q");
	mp_uint(&G.out, c->coll_seq);
	mp_str(&G.out, "c");
	mp_int(&G.out, 3 + 2 * c->k);
	mp_str(&G.out, "k");
	mp_str(&G.out, kind);
	mp_str(&G.out, "o");
	mp_int(&G.out, root);
	mp_str(&G.out, "n");
	mp_int(&G.out, bytes);
	conn_write_lazy(FR_COLL, &G.out);
}

static void wait_relay_closed(int fd, int ms);

void send_abort(int code, const char *msg)
{
	static int once;
	if (G.fd < 0 || once++)
		return; /* a failure while saying Abort must not say it again */
	struct buf b = {0};
	mp_map(&b, 2);
	mp_str(&b, "x");
	mp_int(&b, code);
	mp_str(&b, "e");
	mp_strn(&b, msg, strnlen(msg, 4096));
	conn_write(FR_ABORT, &b);
	conn_flush(); /* whatever was corked, and the Abort */
	free(b.p);
	if (G.fd >= 0 && !G.broken)
		wait_relay_closed(G.fd, 2000);
}

static int env_int(const char *name, long long lo, long long hi, long long *out)
{
	const char *s = getenv(name);
	char *end;
	if (!s || !*s) {
		fprintf(stderr, "cosched MPI: %s is not set: run this program with `cosched submit --mpi cosched`\n", name);
		return -1;
	}
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi) {
		fprintf(stderr, "cosched MPI: %s=%s is not a number in [%lld, %lld]\n", name, s, lo, hi);
		return -1;
	}
	*out = v;
	return 0;
}

/* chan_wanted: ask the relay for channels (chan.c): 2, to every peer it
 * grants one (same node, and other nodes in immediate delivery); 1, to
 * same-node peers only (COSCHED_MPI_CHANNELS=node); 0, none
 * (COSCHED_MPI_CHANNELS=0). */
static int chan_wanted(void)
{
	const char *ch = getenv("COSCHED_MPI_CHANNELS");
	if (ch && !strcmp(ch, "0"))
		return 0;
	return ch && !strcmp(ch, "node") ? 1 : 2;
}

/* hello is the Hello's body: with a grace it says `numbers`, and a
 * resumed one what the rank received. A rank that wants no channel to
 * other nodes says so ("chn"), even one that wants none at all: its relay
 * then tells the relays of its remote peers at once, so that those which
 * want channels do not wait for its dial. */
static void hello(struct buf *b, int resume)
{
	int ch = resume ? 0 : chan_wanted(); /* a resumed rank keeps the channels it has */
	int node_only = !resume && ch < 2;
	/* rel: the last barrier released, for a restarted root that may not
	 * know it completed (comm.Hello.Released) */
	int rel = resume && G.released > 0;
	int chk = resume ? chan_hello_keys() : 0; /* what a restarted relay forgot (chan.c) */
	mp_map(b, 4 + (G.grace_ms > 0) + 2 * resume + rel + 2 * (ch > 0) + node_only + chk);
	if (chk)
		chan_hello(b);
	if (ch) {
		mp_str(b, "ch");
		mp_bool(b, 1);
		mp_str(b, "rv"); /* it takes Revoke (chan.c) */
		mp_bool(b, 1);
	}
	if (node_only) {
		mp_str(b, "chn");
		mp_bool(b, 1);
	}
	mp_str(b, "job");
	mp_int(b, G.job);
	mp_str(b, "rank");
	mp_int(b, G.rank);
	mp_str(b, "size");
	mp_int(b, G.size);
	mp_str(b, "pid");
	mp_int(b, getpid());
	if (G.grace_ms > 0) {
		mp_str(b, "numbers");
		mp_bool(b, 1);
	}
	if (resume) {
		mp_str(b, "resume");
		mp_bool(b, 1);
		mp_str(b, "got");
		got_hello(b);
	}
	if (rel) {
		mp_str(b, "rel");
		mp_uint(b, G.released);
	}
}

/* read_welcome is read_some(1) for the relay's first bytes: the Welcome,
 * which may carry the channels the relay grants (SCM_RIGHTS). */
static int read_welcome(int *fds, int *nfds)
{
	buf_reserve(&G.in, 65536);
	union {
		char b[CMSG_SPACE(CHAN_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} cm;
	for (;;) {
		struct iovec iov = {G.in.p, G.in.cap};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b};
		ssize_t n = recvmsg(G.fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			cmpi_die(1, "read from the relay: %s", strerror(errno));
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
				int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				if (*nfds + k > CHAN_MAX_FDS)
					cmpi_die(1, "the relay passed more than %d descriptors", CHAN_MAX_FDS);
				memcpy(fds + *nfds, CMSG_DATA(c), k * sizeof(int));
				*nfds += k;
			}
		if (mh.msg_flags & MSG_CTRUNC)
			cmpi_die(1, "the relay passed more than %d descriptors", CHAN_MAX_FDS);
		G.in.len = (size_t)n;
		return n > 0;
	}
}

/* conn_open connects to the relay and says hello; it exits on failure
 * (MPI_Init has no way to fail usefully). */
int conn_open(void)
{
	long long job, rank, size;
	if (env_int("COSCHED_JOB", 0, INT64_MAX, &job) || env_int("COSCHED_SIZE", 1, 1 << 24, &size) ||
	    env_int("COSCHED_RANK", 0, size - 1, &rank))
		exit(1);
	const char *path = getenv("COSCHED_RELAY");
	if (!path || !*path) {
		fprintf(stderr, "cosched MPI: COSCHED_RELAY is not set: run this program with `cosched submit --mpi cosched`\n");
		exit(1);
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		fprintf(stderr, "cosched MPI: COSCHED_RELAY=%s is too long for a Unix socket\n", path);
		exit(1);
	}
	strcpy(sa.sun_path, path);
	const char *grace = getenv("COSCHED_RELAY_GRACE");
	if (grace && *grace && cmpi_parse_duration_ms(grace, &G.grace_ms)) {
		fprintf(stderr, "cosched MPI: COSCHED_RELAY_GRACE=%s is not a duration >= 0 (like 5m or 1m30s)\n", grace);
		exit(1);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		fprintf(stderr, "cosched MPI: connect to the relay at %s: %s\n", path, strerror(errno));
		exit(1);
	}
	/* a send buffer that holds a large message whole: it goes in one
	 * sendmsg (the kernel caps it at net.core.wmem_max) */
	int sndbuf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	G.fd = fd;
	G.job = job;
	G.rank = (int)rank;
	G.size = (int)size;
	struct buf b = {0};
	hello(&b, 0);
	conn_write(FR_HELLO, &b);
	free(b.p);
	/* the Welcome (a Fatal exits in handle) */
	int fds[CHAN_MAX_FDS], nfds = 0;
	for (;;) {
		int alive = nfds == 0 && G.in.len == 0 ? read_welcome(fds, &nfds) : read_some(1);
		int type;
		const uint8_t *body;
		size_t bl;
		ssize_t used = cmpi_frame_split(G.in.p, G.in.len, &type, &body, &bl);
		if (used < 0)
			cmpi_die(1, "the relay sent a malformed frame");
		if (used > 0) {
			struct inframe f;
			if (cmpi_decode(type, body, bl, &f))
				cmpi_die(1, "the relay sent a malformed frame of type %d", type);
			G.in_off = used;
			if (type == FR_WELCOME) {
				G.relay_v = f.v > 0 && f.v < 1000 ? (int)f.v : 1;
				G.numbered = G.grace_ms > 0 && G.relay_v >= 3;
				if (G.numbered)
					resume_init();
				snprintf(G.mode, sizeof G.mode, "%.*s", (int)(f.strlen < 15 ? f.strlen : 15), f.str ? f.str : "");
				chan_setup(fds, nfds, f.x, f.xlen, f.n);
				parse_frames();
				return 0;
			}
			handle(&f);
			cmpi_die(1, "the relay answered hello with frame type %d", type);
		}
		if (!alive)
			cmpi_die(1, "the relay closed the connection at hello");
	}
}

/* ---- resuming a broken connection (protocol 3; resume.c) ---- */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* wait_relay_closed waits, at most ms, until the relay closes the
 * connection, discarding what it still sends: it does once it has read
 * an Abort (and told the agent), so a rank that exits after this cannot
 * have its Abort dropped unread with its job, which the agent may remove
 * as soon as the rank has exited (the reason would be lost). */
static void wait_relay_closed(int fd, int ms)
{
	char scratch[4096];
	int64_t until = now_ms() + ms;
	for (;;) {
		int64_t left = until - now_ms();
		struct pollfd pf = {fd, POLLIN, 0};
		if (left <= 0)
			return;
		int n = poll(&pf, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		ssize_t r = recv(fd, scratch, sizeof scratch, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			return;
	}
}

/* write_fd writes p[0..n) to fd; -1 on failure. */
static int write_fd(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pf = {fd, POLLOUT, 0};
			poll(&pf, 1, -1);
			continue;
		}
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

/* write_hello writes a resumed Hello, its first byte with the counter
 * page's descriptor (SCM_RIGHTS) if the rank has one: the restarted
 * relay then reads the counts of its channels again. A relay that does
 * not look for it reads the bytes alone (the kernel drops the copy). */
static int write_hello(int fd, const uint8_t *p, size_t n)
{
	int page = chan_counter_fd();
	if (page < 0 || n == 0)
		return write_fd(fd, p, n);
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cm;
	memset(&cm, 0, sizeof cm);
	struct iovec iov = {(void *)p, n};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &page, sizeof(int));
	ssize_t w;
	while ((w = sendmsg(fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (w <= 0)
		return -1;
	return write_fd(fd, p + w, n - (size_t)w);
}

static int cmp_order(const void *a, const void *b)
{
	uint64_t x = posts[*(const int *)a].order, y = posts[*(const int *)b].order;
	return x < y ? -1 : x > y;
}

/* replay is what the dead relay held for this rank, in the order comm
 * says it (comm/resume.go): its posted receives (same ids, in posting
 * order) and unanswered probes, the Wait it is blocked in, its barrier if
 * not released, the collective announcements lost, every message not
 * acknowledged, and its Finalize. */
static void replay(struct buf *out)
{
	struct buf b = {0};
	int *idx = malloc((nposts ? nposts : 1) * sizeof *idx);
	if (!idx)
		cmpi_die(1, "out of memory");
	int n = 0, waited = 0;
	for (int i = 0; i < nposts; i++) {
		if (posts[i].cancelling) { /* the new relay has no such receive: taken back */
			posts[i].answered = posts[i].found = 1;
			continue;
		}
		if (posts[i].kind != P_NONE && !posts[i].local && !(posts[i].kind == P_PROBE && posts[i].answered))
			idx[n++] = i; /* a channel's posts: the relay never saw them */
	}
	qsort(idx, n, sizeof *idx, cmp_order);
	for (int j = 0; j < n; j++) {
		struct postslot *p = &posts[idx[j]];
		uint64_t id = slot_id(p);
		post_fields(&b, id, p);
		frame_append(out, p->kind == P_PROBE ? FR_PROBE : FR_POST, b.p, b.len, NULL, 0);
		waited += p->kind != P_PROBE && p->waited;
	}
	if (waited) {
		b.len = 0;
		mp_map(&b, 1);
		mp_str(&b, "r");
		mp_array(&b, waited);
		for (int j = 0; j < n; j++)
			if (posts[idx[j]].kind != P_PROBE && posts[idx[j]].waited)
				mp_uint(&b, slot_id(&posts[idx[j]]));
		frame_append(out, FR_WAIT, b.p, b.len, NULL, 0);
	}
	free(idx);
	if (G.released < G.barrier_seq) {
		b.len = 0;
		mp_map(&b, 1);
		mp_str(&b, "s");
		mp_uint(&b, G.barrier_seq);
		frame_append(out, FR_ARRIVE, b.p, b.len, NULL, 0);
	}
	buf_reserve(out, G.lost.len);
	memcpy(out->p + out->len, G.lost.p, G.lost.len);
	out->len += G.lost.len;
	sent_resend(out, -1);
	if (G.finalizing) {
		b.len = 0;
		mp_map(&b, 0);
		frame_append(out, FR_FINALIZE, b.p, b.len, NULL, 0);
	}
	free(b.p);
}

/* resume_once dials the relay, says a resumed Hello, waits for its
 * Welcome (a Fatal or an old relay ends the rank) and sends replay();
 * NULL on success, else what failed (the caller dials again). */
static const char *resume_once(void)
{
	static char why[160];
	const char *path = getenv("COSCHED_RELAY");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		snprintf(why, sizeof why, "connect to %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return why;
	}
	int sndbuf = 4 << 20;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
	struct buf b = {0}, fr = {0};
	hello(&b, 1);
	frame_append(&fr, FR_HELLO, b.p, b.len, NULL, 0);
	free(b.p);
	int bad = write_hello(fd, fr.p, fr.len);
	free(fr.p);
	if (bad) {
		snprintf(why, sizeof why, "hello: %s", strerror(errno));
		close(fd);
		return why;
	}
	/* the Welcome, within 5 s */
	G.in.len = G.in_off = 0;
	int64_t until = now_ms() + 5000;
	for (;;) {
		int type;
		const uint8_t *body;
		size_t bl;
		ssize_t used = cmpi_frame_split(G.in.p, G.in.len, &type, &body, &bl);
		if (used < 0)
			cmpi_die(1, "the resumed relay sent a malformed frame");
		if (used > 0) {
			struct inframe f;
			if (cmpi_decode(type, body, bl, &f))
				cmpi_die(1, "the resumed relay sent a malformed frame of type %d", type);
			if (type == FR_FATAL)
				cmpi_die(1, "the relay refused to resume the connection: %.*s", (int)f.strlen, f.str);
			if (type != FR_WELCOME)
				cmpi_die(1, "the resumed relay answered hello with frame type %d", type);
			if (f.v < 3)
				cmpi_die(1, "the relay came back without numbered messages (protocol %lld)", (long long)f.v);
			G.in_off = used;
			break;
		}
		int64_t left = until - now_ms();
		struct pollfd pf = {fd, POLLIN, 0};
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0) {
			snprintf(why, sizeof why, "no Welcome within 5 s");
			close(fd);
			return why;
		}
		buf_reserve(&G.in, 65536);
		ssize_t r = recv(fd, G.in.p + G.in.len, G.in.cap - G.in.len, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
			snprintf(why, sizeof why, "the relay closed the connection at hello");
			close(fd);
			G.in.len = 0;
			return why;
		}
		if (r > 0)
			G.in.len += r;
	}
	struct buf out = {0};
	replay(&out);
	bad = write_fd(fd, out.p, out.len);
	free(out.p);
	if (bad) {
		snprintf(why, sizeof why, "resending: %s", strerror(errno));
		close(fd);
		G.in.len = G.in_off = 0;
		return why;
	}
	G.fd = fd;
	return NULL;
}

/* conn_recover resumes a broken connection (G.broken): it takes what the
 * dead relay had written (so that the Hello counts it as received), then
 * dials the relay every 20 ms, sleeping in between, until the agent's
 * next life answers or the grace passes (then the rank fails, as it did
 * before protocol 3). Called at the top of pump, never while frames are
 * being handled. */
void conn_recover(void)
{
	if (!G.broken || G.in_parse)
		return;
	if (G.fd >= 0) {
		for (;;) {
			struct pollfd pf = {G.fd, POLLIN, 0};
			if (poll(&pf, 1, 1000) <= 0)
				break;
			int alive = read_some(0);
			parse_frames();
			if (!alive)
				break;
		}
		close(G.fd);
		G.fd = -1;
	}
	G.in.len = G.in_off = 0; /* half a frame at most: not acknowledged, it comes again */
	keep_lost_colls(G.pend.p, G.pend.len);
	G.pend.len = 0; /* what handling wrote meanwhile: replay() says it */
	int64_t start = now_ms();
	const char *why;
	while ((why = resume_once()) != NULL) {
		if (now_ms() - start > G.grace_ms)
			cmpi_die(1, "the relay connection was lost and the relay was not back within %lld ms (COSCHED_RELAY_GRACE): %s",
				 (long long)G.grace_ms, why);
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
	}
	G.broken = 0;
	G.lost.len = 0;
	G.resumes++;
	chan_resay(); /* a broken channel's count may have died with the relay */
	if (getenv("COSCHED_MPI_DEBUG"))
		fprintf(stderr, "cosched MPI: rank %d: relay connection resumed after %lld ms (%llu messages not acknowledged sent again)\n", G.rank,
			(long long)(now_ms() - start), (unsigned long long)G.kept_msgs);
	parse_frames(); /* what came with the Welcome */
}
