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
 * channels together. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "cmpi.h"

/* A message on a channel: this header, then x (payload header and data). */
struct chdr {
	uint32_t n;
	int32_t tag, ctx;
};

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
	int ended;   /* its end marker was read (revoked: docs/mpi.md) */
	int drained; /* and its receives went to the relay (Drained said if revoked) */
	struct buf out; /* bytes the socket did not take yet */
	size_t out_off;
	struct buf in;
	size_t in_off;
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
static unsigned events; /* messages taken from channels, posts matched */
static volatile uint64_t *ctr; /* sent, sent bytes, delivered, delivered bytes */
static void *ctr_map;
static int revoke_asked, revoked; /* the relay said Revoke; it was done (chan_step) */
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
	return npeers > 0 && (wrank == G.rank || (!revoked && chan_is_peer(wrank)));
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
		peer_at[w] = i;
		/* a 1 MiB message in one write (the kernel caps it at net.core.wmem_max) */
		int sz = 4 << 20;
		setsockopt(peers[i].fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	}
	npeers = np;
}

/* flush_out writes what waits for p; returns 0, or -1 when the socket is full. */
static int flush_out(struct peer *p)
{
	while (p->out_off < p->out.len) {
		ssize_t w = send(p->fd, p->out.p + p->out_off, p->out.len - p->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -1;
			/* the peer has gone (after its MPI_Finalize, or the job is
			 * being ended): nothing more can reach it */
			p->out.len = p->out_off = 0;
			return 0;
		}
		p->out_off += (size_t)w;
	}
	p->out.len = p->out_off = 0;
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
	}
	queue_out(p, iov, 3, done);
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
static void do_revoke(void)
{
	revoked = 1;
	events++;
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (p->fd < 0)
			continue;
		struct chdr h = {0, -1, -1};
		struct iovec iov = {&h, sizeof h};
		queue_out(p, &iov, 1, 0);
		flush_out(p);
		if (p->drained)
			say_drained(p->wrank);
	}
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
			p->eof = 1; /* it finalized (or died): ended for a revoke (chan_step) */
			events++;
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
			if (h.n == 0 && h.tag == -1 && h.ctx == -1) { /* its end marker: nothing follows */
				p->in_off += sizeof h;
				p->ended = 1;
				events++;
				return;
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
			take(p->wrank, h.tag, h.ctx, p->in.p + p->in_off - h.n, h.n);
		}
		if ((size_t)n < room)
			break; /* drained */
	}
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
	match_fresh();
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (p->fd < 0)
			continue;
		if (p->out.len > p->out_off)
			flush_out(p);
		if (!p->ended && !p->eof)
			read_peer(p);
	}
	match_fresh();
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];
		if (!p->drained && (p->ended || (p->eof && revoked)))
			drained(p);
		if (p->fd >= 0 && p->drained && revoked && p->out.len == p->out_off) {
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
		short ev = (p->ended || p->eof ? 0 : POLLIN) | (p->out.len > p->out_off ? POLLOUT : 0);
		if (ev)
			pfs[n++] = (struct pollfd){p->fd, ev, 0};
	}
	while (poll(pfs, n, -1) < 0 && errno == EINTR)
		;
	if (pfs != pf)
		free(pfs);
}

/* chan_drain writes everything still waiting for the peers (MPI_Finalize):
 * a completed send must arrive. It keeps reading meanwhile. */
void chan_drain(void)
{
	for (;;) {
		int left = 0;
		for (int i = 0; i < npeers; i++)
			left |= peers[i].out.len > peers[i].out_off;
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

/* chan_counter_fd is the counter page's descriptor, or -1 (no grant). */
int chan_counter_fd(void) { return ctr_fd; }
