/* Channels: messages between two ranks of one job on the same node, in
 * an immediate mode, go over a Unix socket pair the relay created and
 * handed to both (with the Welcome, SCM_RIGHTS), not through the relay.
 * The relay stays the owner: it grants the pair or not (never under bcs),
 * and it reads what each rank counts here (a memfd page it also maps) for
 * its per-job statistics.
 *
 * Ordering: a pair is granted for the job's whole life, so every message
 * between two granted ranks takes the channel and MPI's per-pair order is
 * the socket's. A receive from a granted peer is matched here, never
 * posted to the relay. A wildcard receive is matched against what the
 * channels delivered first; if nothing matches it is posted to the relay
 * as well, and whichever path matches first takes it: if a channel does,
 * the relay's post becomes a stash post (what the relay later matches
 * waits in the stash for the next receive, as for a probe).
 *
 * Sends never block: what the socket does not take waits in the peer's
 * out buffer, written while the rank is in any MPI call (pump), so two
 * ranks sending large messages to each other cannot deadlock. What comes
 * in and matches no receive goes to the stash, which receives look at
 * first. Blocking calls sleep in poll(2) on the relay's socket and the
 * channels together.
 *
 * A broken connection (docs/mpi.md, "A broken channel"): a cross-node
 * channel is TCP, which a network fault can reset. Each end keeps what it
 * wrote on a channel until the peer acknowledges it (ack frames on the
 * reverse direction: cumulative bytes read, every CHAN_ACK_EVERY), and
 * writes no new frame past CHAN_KEEP unacknowledged bytes (what it holds
 * back waits in the out buffer, as what the socket does not take). When
 * the connection breaks (an error or an end without the peer's fin
 * frame), the rank stops reading it, posts its receives from that peer to
 * the relay (as at a revoke's marker) and says Broken through the relays
 * with how many bytes it read; the peer does the same. Each resends,
 * through the relay, what the other had not read, then sends there: the
 * relay path from that peer starts where the channel's read part ended,
 * so the pair's order holds. At MPI_Finalize a rank writes a fin frame on
 * each channel and waits until it is acknowledged: a rank never leaves
 * with unacknowledged bytes, so an end after the peer's fin is no fault,
 * and one before it means the peer is alive to answer. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cmpi.h"

/* A message on a channel: this header, then x (payload header and data).
 * Control frames have a negative tag and context: the end marker (-1,
 * revoke), an ack (-2, 8 bytes: the cumulative bytes read), fin (-3, a
 * rank finalizing). The stream's bytes that acks count are every frame's
 * but acks. */
struct chdr {
	uint32_t n;
	int32_t tag, ctx;
};

enum { CH_END = -1, CH_ACK = -2, CH_FIN = -3 };

/* CHAN_ACK_EVERY: a reader acknowledges every so many bytes read;
 * CHAN_KEEP: a writer keeps at most about so many unacknowledged bytes
 * (no new frame starts past it). */
#define CHAN_ACK_EVERY (1u << 20)
#define CHAN_KEEP (8u << 20)

/* broken: a connection's state after a fault */
enum { B_NONE, B_SAID, B_DONE };

/* Taken back (docs/mpi.md, "Taking channels back"): the relay's Revoke
 * makes the rank write an end marker (tag and context -1, no payload)
 * after what it queued on each channel and send on through the relay.
 * A peer's channel is read until its marker (or its end): its receives
 * stay here until then, and the relay holds what the peer sends through
 * it; at the marker (or, revoked, the channel's end: the peer finalized)
 * they are posted to the relay and the rank says Drained, which releases
 * them. */
struct peer {
	int fd, wrank, eof;
	int keep; /* TCP (cross-node): keeps what it wrote until acknowledged */
	int ended;   /* its end marker was read (revoked: docs/mpi.md) */
	int drained; /* and its receives went to the relay (Drained said if revoked) */
	/* out: from the first byte the peer has not acknowledged (stream
	 * offset out_base) to the last queued; out_off is where writing is,
	 * frame_end the end of the frame being written (== out_off between
	 * frames, where an ack may go). */
	struct buf out;
	size_t out_off, frame_end;
	uint64_t out_base, acked; /* acked: what the peer acknowledged */
	struct buf in;
	size_t in_off;
	uint64_t got, got_acked; /* stream bytes read (whole frames), acknowledged */
	int want_ack;
	uint8_t ackb[sizeof(struct chdr) + 8];
	size_t ack_len, ack_off; /* an ack being written */
	int fin_read, fin_sent; /* its fin was read; this rank's was queued */
	int broken;             /* B_*: the connection failed (docs/mpi.md, "A broken channel") */
	int failed;             /* it failed: declare at the next chan_step, outside any parse */
	int notice;             /* the peer's Broken came (notice_read, notice_reply) */
	uint64_t notice_read;
	int notice_reply;
};

/* A receive waiting for a channel's message, in posting order. wild: also
 * posted to the relay. fresh: the stash was not looked at yet. */
struct lpost {
	uint64_t id;
	int src, tag, ctx, wild, fresh;
};

static struct peer *peers;
static int npeers;
static int *peer_at; /* world rank → index in peers, or -1 */
static struct lpost *lposts;
static int nlposts, caplposts;
/* events: messages taken from channels, posts matched, and every other
 * change a caller may wait for (an ack or fin read, bytes written): a
 * pump that saw one returns instead of sleeping, as nothing may come. */
static unsigned events;
static volatile uint64_t *ctr; /* sent, sent bytes, delivered, delivered bytes */
static void *ctr_map;
static int revoke_asked, revoked; /* the relay said Revoke; it was done (chan_step) */
static int resay;                 /* a relay restarted: say pending Broken again */
/* ctr_fd is the page's descriptor, kept: a relay that restarts has lost
 * its own, and a resumed Hello hands it this one (chan_counter_fd). */
static int ctr_fd = -1;

enum { C_SENT, C_SENT_BYTES, C_DELIVERED, C_DELIVERED_BYTES };

static void count(int i, uint64_t v)
{
	if (ctr)
		__atomic_store_n(&ctr[i], ctr[i] + v, __ATOMIC_RELAXED); /* one writer: this rank */
}

int chan_active(void) { return npeers > 0; }

/* chan_is_peer: wrank's messages to this rank come on a channel (granted,
 * and not ended yet). */
int chan_is_peer(int wrank)
{
	return npeers > 0 && wrank >= 0 && wrank < G.size && peer_at[wrank] >= 0 && !peers[peer_at[wrank]].ended;
}

/* chan_sends: messages to wrank take a channel (or memory: itself). */
int chan_sends(int wrank)
{
	if (npeers == 0)
		return 0;
	if (wrank == G.rank || (!revoked && chan_is_peer(wrank)))
		return 1;
	/* broken, waiting for the peer's count: queued behind what it may
	 * have to resend */
	return wrank >= 0 && wrank < G.size && peer_at[wrank] >= 0 && peers[peer_at[wrank]].broken == B_SAID;
}

void chan_revoke(void) { revoke_asked = 1; }

/* chan_local says whether messages from wrank are matched here: a granted
 * peer's, and with channels the rank's own (handed over in memory, so
 * that a job whose ranks are all on one node never needs the relay to
 * match anything, wildcards included). */
int chan_local(int wrank) { return chan_is_peer(wrank) || (npeers > 0 && wrank == G.rank); }

/* chan_all: every rank of the job is this one or a granted peer. */
int chan_all(void)
{
	if (npeers == 0 || revoked || npeers != G.size - 1)
		return 0;
	for (int i = 0; i < npeers; i++)
		if (peers[i].ended)
			return 0;
	return 1;
}

static void take(int wsrc, int tag, int ctx, const uint8_t *x, size_t n);
static void say_drained(int wrank);

/* chan_setup takes the Welcome's grant: fds[0] the counter page, fds[1..]
 * the channels to the world ranks in ranks (4 bytes each, little endian).
 * A grant it cannot use is closed: the rank then cannot talk to those
 * peers, so it fails. */
void chan_setup(const int *fds, int nfds, const uint8_t *ranks, size_t rlen, int64_t slot)
{
	if (nfds == 0)
		return;
	int np = (int)(rlen / 4);
	if (np != nfds - 1 || slot < 0 || slot > 4096)
		cmpi_die(1, "the relay granted %d channels for %d peers (counter slot %lld)", nfds - 1, np,
			 (long long)slot);
	size_t len = (size_t)(slot + 1) * 4 * sizeof(uint64_t);
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	if (m == MAP_FAILED)
		cmpi_die(1, "map the relay's counter page: %s", strerror(errno));
	ctr_fd = fds[0];
	ctr_map = m;
	ctr = (volatile uint64_t *)m + slot * 4;
	peer_at = malloc(G.size * sizeof *peer_at);
	peers = calloc(np, sizeof *peers);
	if (!peer_at || !peers)
		cmpi_die(1, "out of memory");
	for (int i = 0; i < G.size; i++)
		peer_at[i] = -1;
	for (int i = 0; i < np; i++) {
		uint32_t w = (uint32_t)ranks[4 * i] | (uint32_t)ranks[4 * i + 1] << 8 |
			     (uint32_t)ranks[4 * i + 2] << 16 | (uint32_t)ranks[4 * i + 3] << 24;
		if (w >= (uint32_t)G.size || w == (uint32_t)G.rank || peer_at[w] >= 0)
			cmpi_die(1, "the relay granted a channel to rank %u", w);
		peers[i].fd = fds[i + 1];
		peers[i].wrank = (int)w;
		int dom = 0;
		socklen_t dl = sizeof dom;
		peers[i].keep = getsockopt(peers[i].fd, SOL_SOCKET, SO_DOMAIN, &dom, &dl) == 0 && dom != AF_UNIX;
		peer_at[w] = i;
		/* a 1 MiB message in one write (the kernel caps it at net.core.wmem_max) */
		int sz = 4 << 20;
		setsockopt(peers[i].fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	}
	npeers = np;
}

static void lost(struct peer *p);

/* trim drops what the peer acknowledged from p's out buffer, when moving
 * the rest costs no more than what is dropped. Without acks (a same-node
 * channel, or one being taken back) what is written counts as acknowledged. */
static void trim(struct peer *p)
{
	if (!p->keep || revoked || p->ended)
		p->acked = p->out_base + p->out_off;
	if (p->acked <= p->out_base)
		return;
	size_t k = (size_t)(p->acked - p->out_base);
	if (k < p->out.len && (k < 65536 || k < p->out.len - k))
		return;
	memmove(p->out.p, p->out.p + k, p->out.len - k);
	p->out.len -= k;
	p->out_off -= k;
	p->frame_end -= k;
	p->out_base += k;
}

/* may_start: a new frame may be written (fewer than CHAN_KEEP bytes wait
 * for the peer's ack). */
static int may_start(const struct peer *p, size_t at)
{
	return !p->keep || revoked || p->ended || p->out_base + at - p->acked < CHAN_KEEP;
}

/* wants_write: flush_out has something it may write now. */
static int wants_write(const struct peer *p)
{
	if (p->fd < 0)
		return 0;
	if (p->ack_off < p->ack_len || p->out_off < p->frame_end || (p->want_ack && !revoked))
		return 1;
	return p->out_off < p->out.len && may_start(p, p->out_off);
}

/* flush_out writes what waits for p: an ack between frames when one is
 * due, else the frames the bound lets start. Returns 0, or -1 when the
 * socket is full. */
static int flush_out(struct peer *p)
{
	while (p->fd >= 0) {
		if (p->ack_off == p->ack_len && p->out_off == p->frame_end) { /* between frames */
			if (p->want_ack && !revoked) {
				struct chdr h = {8, CH_ACK, CH_ACK};
				uint64_t g = p->got;
				memcpy(p->ackb, &h, sizeof h);
				memcpy(p->ackb + sizeof h, &g, sizeof g);
				p->ack_len = sizeof p->ackb;
				p->ack_off = 0;
				p->got_acked = g;
				p->want_ack = 0;
			} else {
				size_t e = p->frame_end;
				while (e < p->out.len && may_start(p, e)) {
					struct chdr h;
					memcpy(&h, p->out.p + e, sizeof h);
					e += sizeof h + h.n;
				}
				if (e == p->out_off) {
					trim(p);
					return 0; /* nothing, or held until the peer acknowledges */
				}
				p->frame_end = e;
			}
		}
		int ack = p->ack_off < p->ack_len;
		const uint8_t *from = ack ? p->ackb + p->ack_off : p->out.p + p->out_off;
		size_t len = ack ? p->ack_len - p->ack_off : p->frame_end - p->out_off;
		ssize_t w = send(p->fd, from, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -1;
			lost(p); /* the peer has gone, or the connection broke */
			return 0;
		}
		if (ack)
			p->ack_off += (size_t)w;
		else
			p->out_off += (size_t)w;
		events++; /* bytes left: what MPI_Finalize may wait for (leaving) */
	}
	return 0;
}

static void queue_out(struct peer *p, const struct iovec *iov, int n, size_t skip)
{
	for (int i = 0; i < n; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		size_t l = iov[i].iov_len - skip;
		buf_reserve(&p->out, l);
		memcpy(p->out.p + p->out.len, (const uint8_t *)iov[i].iov_base + skip, l);
		p->out.len += l;
		skip = 0;
	}
}

/* chan_send sends one message to a granted peer; it never blocks. */
void chan_send(int wdst, int tag, int ctx, const uint8_t *hdr, size_t hl, const void *data, size_t dl)
{
	if (wdst == G.rank) { /* to itself: delivered now */
		uint8_t *x = malloc(hl + dl + 1);
		if (!x)
			cmpi_die(1, "out of memory (%zu bytes)", hl + dl);
		memcpy(x, hdr, hl);
		if (dl)
			memcpy(x + hl, data, dl);
		count(C_SENT, 1);
		count(C_SENT_BYTES, hl + dl);
		take(wdst, tag, ctx, x, hl + dl);
		free(x);
		return;
	}
	struct peer *p = &peers[peer_at[wdst]];
	struct chdr h = {(uint32_t)(hl + dl), tag, ctx};
	struct iovec iov[3] = {{&h, sizeof h}, {(void *)hdr, hl}, {(void *)data, dl}};
	count(C_SENT, 1);
	count(C_SENT_BYTES, hl + dl);
	if (p->fd < 0 && p->broken != B_SAID && !p->failed)
		return; /* the peer has gone: see flush_out */
	if (p->keep || p->fd < 0) { /* kept until acknowledged: resent if the connection breaks */
		queue_out(p, iov, 3, 0);
		flush_out(p);
		return;
	}
	size_t total = sizeof h + hl + dl, done = 0;
	if (p->out.len == p->out_off) {
		for (;;) {
			struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 3};
			ssize_t w = sendmsg(p->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
				return; /* the peer has gone: see flush_out */
			done = w < 0 ? 0 : (size_t)w;
			break;
		}
		if (done == total)
			return;
		/* the rest of this frame is the one being written */
		p->out.len = p->out_off = p->frame_end = 0;
		queue_out(p, iov, 3, done);
		p->frame_end = p->out.len;
		flush_out(p);
		return;
	}
	queue_out(p, iov, 3, 0);
	flush_out(p);
}

static int matches(const struct lpost *l, int wsrc, int tag, int ctx)
{
	return l->ctx == ctx && (l->src < 0 || l->src == wsrc) && (l->tag < 0 || l->tag == tag);
}

static void lpost_remove(int i)
{
	memmove(lposts + i, lposts + i + 1, (nlposts - i - 1) * sizeof *lposts);
	nlposts--;
}

/* chan_post registers a receive (slot id) that a channel may match.
 * Returns 1 when the relay must not see it (its source is a granted
 * peer), 0 when it goes to the relay too (a wildcard, or another source:
 * then only a wildcard is registered). */
int chan_post(uint64_t id, int src, int tag, int ctx)
{
	if (src >= 0 && !chan_local(src))
		return 0;
	int wild = src < 0 && !chan_all(); /* the relay may bring a match too */
	if (nlposts == caplposts) {
		caplposts = caplposts ? 2 * caplposts : 16;
		lposts = realloc(lposts, caplposts * sizeof *lposts);
		if (!lposts)
			cmpi_die(1, "out of memory");
	}
	lposts[nlposts++] = (struct lpost){id, src, tag, ctx, wild, 1};
	return !wild;
}

/* take delivers a channel's message to the oldest receive that matches,
 * or stashes it. */
static void take(int wsrc, int tag, int ctx, const uint8_t *x, size_t n)
{
	events++;
	count(C_DELIVERED, 1);
	count(C_DELIVERED_BYTES, n);
	for (int i = 0; i < nlposts; i++) {
		struct lpost l = lposts[i];
		if (!slot_pending(l.id)) { /* the relay matched the wildcard first */
			lpost_remove(i--);
			continue;
		}
		if (!matches(&l, wsrc, tag, ctx))
			continue;
		lpost_remove(i);
		deliver_slot(l.id, wsrc, tag, x, n, l.wild);
		return;
	}
	stash_add(ctx, wsrc, tag, x, n);
}

/* do_revoke takes the channels back (the relay's Revoke): an end marker
 * on each, after what waits there; wildcard receives kept here because
 * every peer had a channel go to the relay too; Drained for the peers
 * whose channel had ended already (the relay holds their messages too). */
static void wilds_to_relay(void);

static void do_revoke(void)
{
	revoked = 1;
	events++;
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (p->fd >= 0) {
			struct chdr h = {0, CH_END, CH_END};
			struct iovec iov = {&h, sizeof h};
			queue_out(p, &iov, 1, 0);
			flush_out(p);
		}
		if (p->drained) /* its end was read already, or its connection broke */
			say_drained(p->wrank);
	}
	wilds_to_relay();
}

/* wilds_to_relay posts to the relay the wildcard receives kept here
 * while every peer had a channel: one no longer has. */
static void wilds_to_relay(void)
{
	for (int i = 0; i < nlposts; i++) {
		struct lpost *l = &lposts[i];
		if (l->src < 0 && !l->wild) {
			l->wild = 1;
			post_relay(l->id, l->src, l->tag, l->ctx);
		}
	}
}

/* drained: p's channel ended; its receives waiting here go to the relay,
 * oldest first, then the relay is told (if it took the channels back:
 * only then does it hold p's messages, and know the frame). */
static void drained(struct peer *p)
{
	p->drained = 1;
	events++;
	for (int i = 0; i < nlposts; i++) {
		struct lpost l = lposts[i];
		if (l.src != p->wrank)
			continue;
		lpost_remove(i--);
		post_relay(l.id, l.src, l.tag, l.ctx); /* if it still waits */
	}
	if (revoked)
		say_drained(p->wrank);
}

static void say_drained(int wrank)
{
	struct buf b = {0};
	mp_map(&b, 1);
	mp_str(&b, "p");
	mp_int(&b, wrank);
	conn_write(FR_DRAINED, &b);
	free(b.p);
}

/* fresh: a receive posted since the last pump may match what a channel
 * delivered before it was posted (a fragment, an ack). */
static void match_fresh(void)
{
	for (int i = 0; i < nlposts; i++) {
		if (!lposts[i].fresh)
			continue;
		lposts[i].fresh = 0;
		struct lpost l = lposts[i];
		if (l.wild) /* the receive looked at the stash when it was posted */
			continue;
		if (stash_has(l.ctx, l.src, l.tag)) {
			/* removed first: delivering may post or take (a send to
			 * itself), which changes the list */
			lpost_remove(i);
			stash_deliver(l.id, l.src, l.tag, l.ctx);
			events++;
			i = -1; /* look again */
		}
	}
}

static void read_peer(struct peer *p)
{
	for (;;) {
		if (p->in_off > 0 && p->in_off == p->in.len)
			p->in.len = p->in_off = 0;
		if (p->in.cap - p->in.len < 65536) {
			if (p->in_off > 0) {
				memmove(p->in.p, p->in.p + p->in_off, p->in.len - p->in_off);
				p->in.len -= p->in_off;
				p->in_off = 0;
			}
			buf_reserve(&p->in, 65536);
		}
		size_t room = p->in.cap - p->in.len;
		ssize_t n = recv(p->fd, p->in.p + p->in.len, room, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
			lost(p);
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		p->in.len += (size_t)n;
		/* the messages complete so far */
		for (;;) {
			size_t have = p->in.len - p->in_off;
			struct chdr h;
			if (have < sizeof h)
				break;
			memcpy(&h, p->in.p + p->in_off, sizeof h);
			if (h.n == 0 && h.tag == CH_END && h.ctx == CH_END) { /* its end marker: nothing follows */
				p->in_off += sizeof h;
				p->got += sizeof h;
				p->ended = 1;
				events++;
				return;
			}
			if (h.n == 0 && h.tag == CH_FIN && h.ctx == CH_FIN) { /* it finalizes: say so at once */
				p->in_off += sizeof h;
				p->got += sizeof h;
				p->fin_read = 1;
				p->want_ack = 1;
				events++;
				continue;
			}
			if (h.n == 8 && h.tag == CH_ACK && h.ctx == CH_ACK) {
				if (have < sizeof h + 8)
					break;
				uint64_t a;
				memcpy(&a, p->in.p + p->in_off + sizeof h, sizeof a);
				p->in_off += sizeof h + 8;
				if (a < p->acked || a > p->out_base + p->out_off)
					cmpi_die(1, "rank %d acknowledged %llu bytes of its channel; %llu were written, %llu acknowledged before",
						 p->wrank, (unsigned long long)a, (unsigned long long)(p->out_base + p->out_off),
						 (unsigned long long)p->acked);
				p->acked = a;
				trim(p);
				events++; /* what MPI_Finalize may wait for (leaving) */
				continue;
			}
			if (h.n > CMPI_MAX_FRAME || h.tag < 0 || h.ctx < 0)
				cmpi_die(1, "rank %d sent a malformed channel message", p->wrank);
			if (have < sizeof h + h.n) {
				if (p->in_off + sizeof h + h.n > p->in.cap) {
					memmove(p->in.p, p->in.p + p->in_off, have);
					p->in.len = have;
					p->in_off = 0;
					buf_reserve(&p->in, sizeof h + h.n + 65536 - have);
				}
				break;
			}
			p->in_off += sizeof h + h.n;
			p->got += sizeof h + h.n;
			if (p->keep && p->got - p->got_acked >= CHAN_ACK_EVERY)
				p->want_ack = 1;
			take(p->wrank, h.tag, h.ctx, p->in.p + p->in_off - h.n, h.n);
			if (p->fd < 0)
				return; /* delivering wrote to it, and it broke (lost) */
		}
		if ((size_t)n < room)
			break; /* drained */
	}
}

/* lost: p's connection ended without a revoke's marker. After its fin,
 * or for a same-node channel (which no network breaks), the peer left:
 * nothing more comes or can go. Otherwise the connection broke under a
 * live peer (it waits for this rank to acknowledge its fin before it
 * leaves): the pair goes on through the relays (declare). */
static void declare(struct peer *p);

static void lost(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->eof = 1;
	events++;
	if (p->keep && !p->fin_read && !p->broken && !revoked && !p->ended) {
		p->failed = 1; /* what is sent to it meanwhile is kept (chan_send) */
		return;
	}
	if (p->broken != B_SAID) /* kept for a resend if it is waiting for the count */
		p->out.len = p->out_off = p->frame_end = 0;
}

static void say_broken(int wrank, uint64_t read, int reply)
{
	struct buf b = {0};
	mp_map(&b, 3);
	mp_str(&b, "p");
	mp_int(&b, wrank);
	mp_str(&b, "n");
	mp_uint(&b, read);
	mp_str(&b, "w");
	mp_bool(&b, reply);
	conn_write(FR_BROKEN, &b);
	free(b.p);
}

/* declare: p's channel is done with on this side. What was read of it
 * stays read; its receives go to the relay (oldest first), and so do
 * wildcards kept here; the peer is told how many bytes came (through the
 * relays, Broken), to resend the rest there. What this rank sends it
 * waits in out until the peer's count comes (resend). */
static void declare(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->broken = B_SAID;
	p->ended = 1; /* its messages come through the relay from now on */
	p->in.len = p->in_off = 0;
	p->ack_len = p->ack_off = 0;
	p->want_ack = 0;
	events++;
	drained(p);
	wilds_to_relay();
	say_broken(p->wrank, p->got, !p->notice);
	if (getenv("COSCHED_MPI_DEBUG"))
		fprintf(stderr, "cosched MPI: rank %d: channel to rank %d broken after %llu bytes read: on through the relays\n",
			G.rank, p->wrank, (unsigned long long)p->got);
}

/* resend: the peer read from of p's stream; what this rank wrote or
 * queued after that goes through the relay, in order, then everything
 * does. Those messages were counted on the channel: the relay counts them
 * now. */
static void resend(struct peer *p, uint64_t from)
{
	if (from > p->out_base + p->out.len)
		cmpi_die(1, "rank %d says it read %llu bytes of its channel from this rank, which wrote %llu", p->wrank,
			 (unsigned long long)from, (unsigned long long)(p->out_base + p->out.len));
	if (from < p->out_base) { /* taken back meanwhile: no copy kept (docs/mpi.md, limits) */
		fprintf(stderr, "cosched MPI: rank %d: bytes %llu to %llu of the channel to rank %d were lost with its connection while it was taken back\n",
			G.rank, (unsigned long long)from, (unsigned long long)p->out_base, p->wrank);
		from = p->out_base;
	}
	size_t off = (size_t)(from - p->out_base);
	unsigned long long n = 0;
	while (off + sizeof(struct chdr) <= p->out.len) {
		struct chdr h;
		memcpy(&h, p->out.p + off, sizeof h);
		off += sizeof h;
		if (h.tag >= 0) { /* a message, not a marker */
			count(C_SENT, (uint64_t)-1);
			count(C_SENT_BYTES, (uint64_t)0 - h.n);
			relay_send(p->wrank, h.tag, h.ctx, p->out.p + off, h.n);
			n++;
		}
		off += h.n;
	}
	free(p->out.p);
	p->out = (struct buf){0};
	p->out_off = p->frame_end = 0;
	p->broken = B_DONE;
	events++;
	if (getenv("COSCHED_MPI_DEBUG"))
		fprintf(stderr, "cosched MPI: rank %d: rank %d read %llu bytes of the broken channel; %llu messages sent again through the relay\n",
			G.rank, p->wrank, (unsigned long long)from, n);
}

/* chan_broken takes the relay's word that wrank's channel broke there
 * (Broken): it read so many bytes of this rank's; reply: wrank waits for
 * this rank's count. Done at the next chan_step, outside the parse. */
void chan_broken(int wrank, uint64_t read, int reply)
{
	if (npeers == 0 || wrank < 0 || wrank >= G.size || peer_at[wrank] < 0)
		return; /* no channel to it: a repeat for a peer never granted */
	struct peer *p = &peers[peer_at[wrank]];
	if (!p->keep)
		return;
	p->notice = 1;
	p->notice_read = read;
	p->notice_reply |= reply;
}

/* chan_resay: a relay restarted (this rank's, or a peer's): a Broken
 * still unanswered may have died with it. */
void chan_resay(void) { resay = 1; }

static void broken_step(void)
{
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (p->failed) {
			p->failed = 0;
			declare(p);
		}
		if (resay && p->broken == B_SAID)
			say_broken(p->wrank, p->got, 1);
		if (!p->notice)
			continue;
		p->notice = 0;
		if (p->broken == B_DONE) { /* a repeat: the peer may have lost this rank's count */
			if (p->notice_reply)
				say_broken(p->wrank, p->got, 0);
		} else {
			if (!p->broken)
				declare(p); /* its side saw the fault first (says no reply wanted: p->notice) */
			resend(p, p->notice_read);
		}
		p->notice_reply = 0;
	}
	resay = 0;
}

/* chan_step does what can be done without waiting: match fresh receives,
 * write what waits, read what came. Returns how many events happened. */
unsigned chan_step(void)
{
	unsigned before = events;
	if (revoke_asked) {
		revoke_asked = 0;
		if (!revoked)
			do_revoke();
		else /* said again (a resumed connection): what it may have lost */
			for (int i = 0; i < npeers; i++)
				if (peers[i].drained)
					say_drained(peers[i].wrank);
	}
	broken_step();
	match_fresh();
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (p->fd < 0)
			continue;
		if (wants_write(p))
			flush_out(p);
		if (p->fd >= 0 && !p->ended && !p->eof)
			read_peer(p);
		if (p->fd >= 0 && p->want_ack)
			flush_out(p);
	}
	match_fresh();
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (!p->drained && (p->ended || (p->eof && revoked)))
			drained(p);
		if (p->fd >= 0 && p->drained && revoked && p->out.len == p->out_off && p->ack_off == p->ack_len) {
			close(p->fd); /* both markers went: the channel is done */
			p->fd = -1;
		}
	}
	return events - before;
}

/* chan_wait sleeps until the relay's socket or a channel can be read, or
 * a channel with bytes waiting can be written. */
void chan_wait(void)
{
	struct pollfd pf[1 + 64];
	struct pollfd *pfs = npeers < 64 ? pf : malloc((1 + npeers) * sizeof *pfs);
	if (!pfs)
		cmpi_die(1, "out of memory");
	int n = 0;
	pfs[n++] = (struct pollfd){G.fd, POLLIN, 0};
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (p->fd < 0)
			continue;
		short ev = (p->ended || p->eof ? 0 : POLLIN) | (wants_write(p) ? POLLOUT : 0);
		if (ev)
			pfs[n++] = (struct pollfd){p->fd, ev, 0};
	}
	while (poll(pfs, n, -1) < 0 && errno == EINTR)
		;
	if (pfs != pf)
		free(pfs);
}

/* leaving: MPI_Finalize still waits for p: bytes to write, its count
 * (the connection broke), or the ack of this rank's fin. */
static int leaving(const struct peer *p)
{
	if (p->broken == B_SAID || p->failed)
		return 1;
	if (p->fd < 0)
		return 0;
	if (p->out_off < p->out.len || p->ack_off < p->ack_len)
		return 1;
	/* a channel being taken back has no acks: its marker says the end */
	return p->fin_sent && !revoked && !p->ended && p->acked < p->out_base + p->out.len;
}

/* chan_drain (MPI_Finalize): a completed send must arrive. Each
 * cross-node channel gets a fin frame after the rest, and the rank waits
 * until the peer has acknowledged it all (it keeps reading meanwhile): a
 * connection that breaks later loses nothing. */
void chan_drain(void)
{
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (p->keep && p->fd >= 0 && !p->broken && !revoked && !p->ended && !p->fin_sent) {
			struct chdr h = {0, CH_FIN, CH_FIN};
			struct iovec iov = {&h, sizeof h};
			queue_out(p, &iov, 1, 0);
			p->fin_sent = 1;
			flush_out(p);
		}
	}
	for (;;) {
		int left = 0;
		for (int i = 0; i < npeers; i++)
			left |= leaving(&peers[i]);
		if (!left)
			return;
		pump(1);
	}
}

void chan_close(void)
{
	for (int i = 0; i < npeers; i++)
		if (peers[i].fd >= 0)
			close(peers[i].fd);
	npeers = 0;
	if (ctr_fd >= 0)
		close(ctr_fd);
	ctr_fd = -1;
}

/* chan_hello_keys and chan_hello: what a resumed Hello says of the
 * channels, for a relay that restarted and forgot it (comm.Hello's rv,
 * dr and cp): that the rank takes Revoke, the peers whose channel it has
 * not drained since it took its channels back (the relay holds their
 * relay-path messages until Drained), and those it still has a channel to
 * (the relay may take them back). */
int chan_hello_keys(void) { return npeers > 0 ? 3 : 0; }

void chan_hello(struct buf *b)
{
	if (npeers == 0)
		return;
	int back = revoked || revoke_asked, nd = 0, nc = 0;
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (back && !p->drained)
			nd++;
		if (!back && !p->ended && !p->broken && !p->failed)
			nc++;
	}
	mp_str(b, "rv");
	mp_bool(b, 1);
	mp_str(b, "dr");
	mp_array(b, (uint32_t)nd);
	for (int i = 0; i < npeers; i++)
		if (back && !peers[i].drained)
			mp_int(b, peers[i].wrank);
	mp_str(b, "cp");
	mp_array(b, (uint32_t)nc);
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (!back && !p->ended && !p->broken && !p->failed)
			mp_int(b, p->wrank);
	}
}

/* chan_counter_fd is the counter page's descriptor, or -1 (no grant). */
int chan_counter_fd(void) { return ctr_fd; }
