/* Protocol 3: numbered messages, kept until delivered, so that a rank
 * outlives its relay (its agent restarted with --keep-ranks). The same
 * rules as the Go library (comm/resume.go; docs/runtime.md, "Relay
 * restarts"): with COSCHED_RELAY_GRACE set the Hello says `numbers`; if
 * the relay answers protocol 3, every Send to a destination carries the
 * next number of that destination (1, 2, … over every context) and the
 * library keeps a copy of it until the destination's relay acknowledges
 * it (Acked, sent when the Deliver is written to the destination's
 * socket). The library also records what it received of each source
 * (a floor and the numbers above it), which a resumed Hello reports.
 *
 * Memory: the copies are exactly this rank's messages not yet delivered
 * to a receiver, which the relays hold too; G.kept_bytes/kept_msgs
 * account for them (COSCHED_MPI_DEBUG=1 prints the peak at
 * MPI_Finalize). There is no cap: blocking a send until its receiver
 * posts would deadlock programs MPI says are correct (two ranks that
 * Isend to each other before receiving). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

struct kept {
	uint64_t seq;
	int tag, ctx;
	size_t n;
	uint8_t *x; /* the payload as sent (header included) */
};

/* one destination's messages not acknowledged: k[head..len), by number */
struct sentlog {
	uint64_t last;
	struct kept *k;
	size_t head, len, cap;
};

/* one source's messages received: all up to floor, and above[0..n) */
struct gotlog {
	uint64_t floor;
	uint64_t *above;
	size_t n, cap;
};

static struct sentlog *sent;
static struct gotlog *got;

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);
	if (!p)
		cmpi_die(1, "out of memory");
	return p;
}

void resume_init(void)
{
	if (!sent) {
		sent = xcalloc(G.size, sizeof *sent);
		got = xcalloc(G.size, sizeof *got);
	}
}

uint64_t sent_keep(int dst, int tag, int ctx, const uint8_t *hdr, size_t hl, const void *data, size_t dl)
{
	struct sentlog *l = &sent[dst];
	if (l->len == l->cap) {
		if (l->head > 0) { /* acknowledged from the front: reuse the room */
			memmove(l->k, l->k + l->head, (l->len - l->head) * sizeof *l->k);
			l->len -= l->head;
			l->head = 0;
		}
		if (l->len == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 16;
			l->k = realloc(l->k, l->cap * sizeof *l->k);
			if (!l->k)
				cmpi_die(1, "out of memory");
		}
	}
	struct kept *m = &l->k[l->len++];
	m->seq = ++l->last;
	m->tag = tag;
	m->ctx = ctx;
	m->n = hl + dl;
	m->x = malloc(m->n ? m->n : 1);
	if (!m->x)
		cmpi_die(1, "out of memory keeping a %zu-byte message until it is delivered", m->n);
	if (hl)
		memcpy(m->x, hdr, hl);
	if (dl)
		memcpy(m->x + hl, data, dl);
	G.kept_bytes += m->n;
	G.kept_msgs++;
	if (G.kept_bytes > G.kept_peak)
		G.kept_peak = G.kept_bytes;
	return m->seq;
}

/* sent_ack forgets message seq to dst; an unknown number (acknowledged
 * twice: a resent message delivered before) is ignored. */
void sent_ack(int dst, uint64_t seq)
{
	if (!sent || dst < 0 || dst >= G.size)
		return;
	struct sentlog *l = &sent[dst];
	size_t lo = l->head, hi = l->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (l->k[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == l->len || l->k[lo].seq != seq)
		return;
	G.kept_bytes -= l->k[lo].n;
	G.kept_msgs--;
	free(l->k[lo].x);
	if (lo == l->head)
		l->head++;
	else {
		memmove(l->k + lo, l->k + lo + 1, (l->len - lo - 1) * sizeof *l->k);
		l->len--;
	}
	if (l->head == l->len)
		l->head = l->len = 0;
}

/* sent_resend appends to b, in order, the Send frames of every message
 * to dst (-1: to every destination) not acknowledged yet. */
void sent_resend(struct buf *b, int dst)
{
	if (!sent)
		return;
	struct buf s = {0};
	for (int d = 0; d < G.size; d++) {
		if (dst >= 0 && d != dst)
			continue;
		struct sentlog *l = &sent[d];
		for (size_t i = l->head; i < l->len; i++) {
			struct kept *m = &l->k[i];
			s.len = 0;
			mp_map(&s, 5);
			mp_str(&s, "d");
			mp_int(&s, d);
			mp_str(&s, "t");
			mp_int(&s, m->tag);
			mp_str(&s, "c");
			mp_int(&s, m->ctx);
			mp_str(&s, "q");
			mp_uint(&s, m->seq);
			mp_str(&s, "x");
			mp_bin_header(&s, m->n);
			frame_append(b, FR_SEND, s.p, s.len, m->x, m->n);
		}
	}
	free(s.p);
}

int got_record(int src, uint64_t seq)
{
	struct gotlog *g = &got[src];
	if (seq <= g->floor)
		return 0;
	size_t lo = 0, hi = g->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->above[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < g->n && g->above[lo] == seq)
		return 0;
	if (seq != g->floor + 1) { /* matched out of order (another tag or context): held above */
		if (g->n == g->cap) {
			g->cap = g->cap ? 2 * g->cap : 8;
			g->above = realloc(g->above, g->cap * sizeof *g->above);
			if (!g->above)
				cmpi_die(1, "out of memory");
		}
		memmove(g->above + lo + 1, g->above + lo, (g->n - lo) * sizeof *g->above);
		g->above[lo] = seq;
		g->n++;
		return 1;
	}
	g->floor++;
	size_t k = 0;
	while (k < g->n && g->above[k] == g->floor + 1) {
		g->floor++;
		k++;
	}
	if (k) {
		memmove(g->above, g->above + k, (g->n - k) * sizeof *g->above);
		g->n -= k;
	}
	return 1;
}

/* got_hello appends Hello's got: [{s, f, a}] for every source heard from. */
void got_hello(struct buf *b)
{
	uint32_t cnt = 0;
	for (int s = 0; s < G.size; s++)
		cnt += got[s].floor > 0 || got[s].n > 0;
	mp_array(b, cnt);
	for (int s = 0; s < G.size; s++) {
		struct gotlog *g = &got[s];
		if (g->floor == 0 && g->n == 0)
			continue;
		mp_map(b, 3);
		mp_str(b, "s");
		mp_int(b, s);
		mp_str(b, "f");
		mp_uint(b, g->floor);
		mp_str(b, "a");
		mp_array(b, (uint32_t)g->n);
		for (size_t i = 0; i < g->n; i++)
			mp_uint(b, g->above[i]);
	}
}

/* cmpi_parse_duration_ms reads a Go duration (what the agent writes:
 * "1m30s", "90s", "1.5s", "500ms", "0") into milliseconds, rounded up;
 * -1 on anything else or a negative one. */
int cmpi_parse_duration_ms(const char *s, int64_t *ms)
{
	if (!strcmp(s, "0")) {
		*ms = 0;
		return 0;
	}
	if (*s == '+')
		s++;
	if (!*s)
		return -1;
	double ns = 0;
	while (*s) {
		if ((*s < '0' || *s > '9') && *s != '.')
			return -1;
		double v = 0, scale = 1;
		int digits = 0, frac = 0;
		for (; (*s >= '0' && *s <= '9') || *s == '.'; s++) {
			if (*s == '.') {
				if (frac++)
					return -1;
				continue;
			}
			digits++;
			if (frac)
				scale /= 10, v += (*s - '0') * scale;
			else
				v = v * 10 + (*s - '0');
		}
		if (!digits)
			return -1;
		double unit;
		if (!strncmp(s, "ns", 2))
			unit = 1, s += 2;
		else if (!strncmp(s, "us", 2))
			unit = 1e3, s += 2;
		else if (!strncmp(s, "\xc2\xb5s", 3) || !strncmp(s, "\xce\xbcs", 3))
			unit = 1e3, s += 3;
		else if (!strncmp(s, "ms", 2))
			unit = 1e6, s += 2;
		else if (*s == 's')
			unit = 1e9, s++;
		else if (*s == 'm')
			unit = 60e9, s++;
		else if (*s == 'h')
			unit = 3600e9, s++;
		else
			return -1;
		ns += v * unit;
	}
	if (ns > 1e18)
		return -1;
	*ms = (int64_t)((ns + 999999) / 1e6);
	return 0;
}
