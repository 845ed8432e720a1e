/* A tiny msgpack encoder and the decoders of the relay's frames. The
 * decoders are pure (a byte range in, a struct out) and never read past
 * their input: the fuzz harness (mpi/fuzz) runs them under ASan/UBSan. */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

void buf_reserve(struct buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	size_t c = b->cap ? b->cap : 256;
	while (c < b->len + more)
		c *= 2;
	uint8_t *p = realloc(b->p, c);
	if (!p)
		cmpi_die(1, "out of memory (%zu bytes)", c);
	b->p = p;
	b->cap = c;
}

static void put8(struct buf *b, uint8_t v)
{
	buf_reserve(b, 1);
	b->p[b->len++] = v;
}

static void putbe(struct buf *b, uint64_t v, int n)
{
	buf_reserve(b, n);
	for (int i = n - 1; i >= 0; i--)
		b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

void mp_map(struct buf *b, uint32_t n)
{
	if (n < 16)
		put8(b, 0x80 | n);
	else if (n < 65536) {
		put8(b, 0xde);
		putbe(b, n, 2);
	} else {
		put8(b, 0xdf);
		putbe(b, n, 4);
	}
}

void mp_array(struct buf *b, uint32_t n)
{
	if (n < 16)
		put8(b, 0x90 | n);
	else if (n < 65536) {
		put8(b, 0xdc);
		putbe(b, n, 2);
	} else {
		put8(b, 0xdd);
		putbe(b, n, 4);
	}
}

void mp_strn(struct buf *b, const char *s, size_t n)
{
	if (n < 32)
		put8(b, 0xa0 | n);
	else if (n < 256) {
		put8(b, 0xd9);
		put8(b, n);
	} else if (n < 65536) {
		put8(b, 0xda);
		putbe(b, n, 2);
	} else {
		put8(b, 0xdb);
		putbe(b, n, 4);
	}
	buf_reserve(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

void mp_str(struct buf *b, const char *s) { mp_strn(b, s, strlen(s)); }

void mp_uint(struct buf *b, uint64_t v)
{
	if (v < 128)
		put8(b, v);
	else if (v < 256) {
		put8(b, 0xcc);
		put8(b, v);
	} else if (v < 65536) {
		put8(b, 0xcd);
		putbe(b, v, 2);
	} else if (v < 4294967296ULL) {
		put8(b, 0xce);
		putbe(b, v, 4);
	} else {
		put8(b, 0xcf);
		putbe(b, v, 8);
	}
}

void mp_int(struct buf *b, int64_t v)
{
	if (v >= 0) {
		mp_uint(b, v);
		return;
	}
	if (v >= -32)
		put8(b, (uint8_t)(int8_t)v);
	else if (v >= -128) {
		put8(b, 0xd0);
		put8(b, (uint8_t)(int8_t)v);
	} else if (v >= -32768) {
		put8(b, 0xd1);
		putbe(b, (uint16_t)(int16_t)v, 2);
	} else if (v >= INT32_MIN) {
		put8(b, 0xd2);
		putbe(b, (uint32_t)(int32_t)v, 4);
	} else {
		put8(b, 0xd3);
		putbe(b, (uint64_t)v, 8);
	}
}

void mp_bool(struct buf *b, int v) { put8(b, v ? 0xc3 : 0xc2); }

void mp_bin_header(struct buf *b, uint32_t n)
{
	if (n < 256) {
		put8(b, 0xc4);
		put8(b, n);
	} else if (n < 65536) {
		put8(b, 0xc5);
		putbe(b, n, 2);
	} else {
		put8(b, 0xc6);
		putbe(b, n, 4);
	}
}

/* ---- decoding ---- */

struct rd {
	const uint8_t *p;
	size_t n, off;
};

static int rbe(struct rd *r, int n, uint64_t *v)
{
	if (r->n - r->off < (size_t)n)
		return -1;
	uint64_t x = 0;
	for (int i = 0; i < n; i++)
		x = x << 8 | r->p[r->off + i];
	r->off += n;
	*v = x;
	return 0;
}

static int rbyte(struct rd *r, uint8_t *c)
{
	if (r->off >= r->n)
		return -1;
	*c = r->p[r->off++];
	return 0;
}

static int rmap(struct rd *r, uint32_t *n)
{
	uint8_t c;
	uint64_t v;
	if (rbyte(r, &c))
		return -1;
	if ((c & 0xf0) == 0x80) {
		*n = c & 0x0f;
		return 0;
	}
	if (c == 0xde && !rbe(r, 2, &v)) {
		*n = v;
		return 0;
	}
	if (c == 0xdf && !rbe(r, 4, &v)) {
		*n = v;
		return 0;
	}
	if (c == 0xc0) { /* nil map: empty */
		*n = 0;
		return 0;
	}
	return -1;
}

/* rraw reads a str or bin. */
static int rraw(struct rd *r, const uint8_t **p, size_t *len)
{
	uint8_t c;
	uint64_t v;
	if (rbyte(r, &c))
		return -1;
	if ((c & 0xe0) == 0xa0)
		v = c & 0x1f;
	else if (c == 0xd9 || c == 0xc4) {
		if (rbe(r, 1, &v))
			return -1;
	} else if (c == 0xda || c == 0xc5) {
		if (rbe(r, 2, &v))
			return -1;
	} else if (c == 0xdb || c == 0xc6) {
		if (rbe(r, 4, &v))
			return -1;
	} else if (c == 0xc0) {
		*p = r->p + r->off;
		*len = 0;
		return 0;
	} else
		return -1;
	if (r->n - r->off < v)
		return -1;
	*p = r->p + r->off;
	*len = v;
	r->off += v;
	return 0;
}

/* rint reads any integer (or a bool, or nil as 0) as int64; an unsigned
 * above INT64_MAX is refused. */
static int rint_(struct rd *r, int64_t *out, uint64_t *uout)
{
	uint8_t c;
	uint64_t v;
	if (rbyte(r, &c))
		return -1;
	if (c < 0x80) {
		v = c;
		goto pos;
	}
	if (c >= 0xe0) {
		*out = (int8_t)c;
		*uout = (uint64_t)*out;
		return 0;
	}
	switch (c) {
	case 0xc0:
	case 0xc2:
		v = 0;
		goto pos;
	case 0xc3:
		v = 1;
		goto pos;
	case 0xcc:
		if (rbe(r, 1, &v))
			return -1;
		goto pos;
	case 0xcd:
		if (rbe(r, 2, &v))
			return -1;
		goto pos;
	case 0xce:
		if (rbe(r, 4, &v))
			return -1;
		goto pos;
	case 0xcf:
		if (rbe(r, 8, &v))
			return -1;
		*uout = v;
		*out = (int64_t)v;
		return 0;
	case 0xd0:
		if (rbe(r, 1, &v))
			return -1;
		*out = (int8_t)v;
		break;
	case 0xd1:
		if (rbe(r, 2, &v))
			return -1;
		*out = (int16_t)v;
		break;
	case 0xd2:
		if (rbe(r, 4, &v))
			return -1;
		*out = (int32_t)v;
		break;
	case 0xd3:
		if (rbe(r, 8, &v))
			return -1;
		*out = (int64_t)v;
		break;
	default:
		return -1;
	}
	*uout = (uint64_t)*out;
	return 0;
pos:
	*out = (int64_t)v;
	*uout = v;
	return 0;
}

static int rskip(struct rd *r, int depth)
{
	uint8_t c;
	uint64_t v, n;
	if (depth > 32 || rbyte(r, &c))
		return -1;
	if (c < 0x80 || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3)
		return 0;
	if ((c & 0xf0) == 0x80) {
		n = 2 * (uint64_t)(c & 0x0f);
		goto items;
	}
	if ((c & 0xf0) == 0x90) {
		n = c & 0x0f;
		goto items;
	}
	if ((c & 0xe0) == 0xa0) {
		n = c & 0x1f;
		goto bytes;
	}
	switch (c) {
	case 0xc4: case 0xd9: if (rbe(r, 1, &n)) return -1; goto bytes;
	case 0xc5: case 0xda: if (rbe(r, 2, &n)) return -1; goto bytes;
	case 0xc6: case 0xdb: if (rbe(r, 4, &n)) return -1; goto bytes;
	case 0xc7: if (rbe(r, 1, &n)) return -1; n++; goto bytes;
	case 0xc8: if (rbe(r, 2, &n)) return -1; n++; goto bytes;
	case 0xc9: if (rbe(r, 4, &n)) return -1; n++; goto bytes;
	case 0xca: n = 4; goto bytes;
	case 0xcb: n = 8; goto bytes;
	case 0xcc: case 0xd0: n = 1; goto bytes;
	case 0xcd: case 0xd1: n = 2; goto bytes;
	case 0xce: case 0xd2: n = 4; goto bytes;
	case 0xcf: case 0xd3: n = 8; goto bytes;
	case 0xd4: n = 2; goto bytes;
	case 0xd5: n = 3; goto bytes;
	case 0xd6: n = 5; goto bytes;
	case 0xd7: n = 9; goto bytes;
	case 0xd8: n = 17; goto bytes;
	case 0xdc: if (rbe(r, 2, &n)) return -1; goto items;
	case 0xdd: if (rbe(r, 4, &n)) return -1; goto items;
	case 0xde: if (rbe(r, 2, &n)) return -1; n *= 2; goto items;
	case 0xdf: if (rbe(r, 4, &n)) return -1; n *= 2; goto items;
	}
	return -1;
bytes:
	if (r->n - r->off < n)
		return -1;
	r->off += n;
	return 0;
items:
	/* every item takes at least one byte: a count beyond what is left is a lie */
	if (n > r->n - r->off)
		return -1;
	for (v = 0; v < n; v++)
		if (rskip(r, depth + 1))
			return -1;
	return 0;
}

/* ruints reads an array of non-negative integers (Acked.q, Resend.d),
 * checking every element; f keeps where it lies, for cmpi_uint_next. */
static int ruints(struct rd *r, struct inframe *f)
{
	uint8_t c;
	uint64_t n;
	if (rbyte(r, &c))
		return -1;
	if ((c & 0xf0) == 0x90)
		n = c & 0x0f;
	else if (c == 0xdc) {
		if (rbe(r, 2, &n))
			return -1;
	} else if (c == 0xdd) {
		if (rbe(r, 4, &n))
			return -1;
	} else if (c == 0xc0)
		n = 0;
	else
		return -1;
	if (n > r->n - r->off)
		return -1;
	f->arr = r->p + r->off;
	for (uint64_t i = 0; i < n; i++) {
		int64_t iv;
		uint64_t uv;
		if (rint_(r, &iv, &uv) || iv < 0)
			return -1;
	}
	f->arrlen = r->p + r->off - f->arr;
	f->narr = (uint32_t)n;
	return 0;
}

/* cmpi_uint_next takes the next element of an array cmpi_decode checked. */
uint64_t cmpi_uint_next(const uint8_t **p, size_t *n)
{
	struct rd r = {*p, *n, 0};
	int64_t iv;
	uint64_t uv = 0;
	if (rint_(&r, &iv, &uv))
		uv = 0; /* not reached: cmpi_decode checked the array */
	*p += r.off;
	*n -= r.off;
	return uv;
}

ssize_t cmpi_frame_split(const uint8_t *p, size_t n, int *type, const uint8_t **body, size_t *bodylen)
{
	if (n < 4)
		return 0;
	uint32_t l = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	if (l < 2 || l > CMPI_MAX_FRAME)
		return -1;
	if (n < 4 + (size_t)l)
		return 0;
	if (p[4] != 1)
		return -1;
	*type = p[5];
	*body = p + 6;
	*bodylen = l - 2;
	return 4 + (ssize_t)l;
}

int cmpi_decode(int type, const uint8_t *body, size_t n, struct inframe *f)
{
	struct rd r = {body, n, 0};
	uint32_t m;
	memset(f, 0, sizeof *f);
	f->type = type;
	if (n == 0 && (type == FR_BYE))
		return 0;
	if (rmap(&r, &m))
		return -1;
	for (uint32_t i = 0; i < m; i++) {
		const uint8_t *k;
		size_t kl;
		int64_t iv;
		uint64_t uv;
		if (rraw(&r, &k, &kl))
			return -1;
		char key = kl == 1 ? (char)k[0] : 0;
		int handled = 1;
		switch (type) {
		case FR_WELCOME:
			if (kl == 4 && !memcmp(k, "mode", 4)) {
				if (rraw(&r, (const uint8_t **)&f->str, &f->strlen))
					return -1;
			} else if (key == 'v') {
				if (rint_(&r, &f->v, &uv))
					return -1;
			} else if (kl == 2 && !memcmp(k, "ch", 2)) { /* granted peers, chan.c */
				if (rraw(&r, &f->x, &f->xlen))
					return -1;
			} else if (kl == 2 && !memcmp(k, "cs", 2)) { /* their counter slot */
				if (rint_(&r, &f->n, &uv))
					return -1;
			} else
				handled = 0;
			break;
		case FR_DELIVER:
		case FR_PROBED:
			switch (key) {
			case 'r':
				if (rint_(&r, &iv, &f->r))
					return -1;
				break;
			case 's':
				if (rint_(&r, &f->s, &uv))
					return -1;
				break;
			case 't':
				if (rint_(&r, &f->t, &uv))
					return -1;
				break;
			case 'x':
				if (type != FR_DELIVER)
					handled = 0;
				else if (rraw(&r, &f->x, &f->xlen))
					return -1;
				break;
			case 'n':
				if (rint_(&r, &f->n, &uv))
					return -1;
				break;
			case 'q': /* Deliver's number (protocol 3) */
				if (type != FR_DELIVER)
					handled = 0;
				else if (rint_(&r, &iv, &f->q) || iv < 0)
					return -1;
				break;
			case 'f':
				if (rint_(&r, &iv, &uv))
					return -1;
				f->f = iv != 0;
				break;
			default:
				handled = 0;
			}
			break;
		case FR_CANCELLED:
			if (key == 'r') {
				if (rint_(&r, &iv, &f->r))
					return -1;
			} else if (key == 'd') {
				if (rint_(&r, &iv, &uv))
					return -1;
				f->f = iv != 0;
			} else
				handled = 0;
			break;
		case FR_RELEASE:
			if (key == 's') {
				if (rint_(&r, &iv, &f->r))
					return -1;
			} else
				handled = 0;
			break;
		case FR_ACKED:
		case FR_RESEND:
			if (key == 'd' && type == FR_ACKED) {
				if (rint_(&r, &f->s, &uv))
					return -1;
			} else if ((key == 'q' && type == FR_ACKED) || (key == 'd' && type == FR_RESEND)) {
				if (ruints(&r, f))
					return -1;
			} else
				handled = 0;
			break;
		case FR_BROKEN: /* p: the peer, n: bytes it read, w: it waits for the count */
			if (key == 'p') {
				if (rint_(&r, &f->s, &uv))
					return -1;
			} else if (key == 'n') {
				if (rint_(&r, &iv, &f->q) || iv < 0)
					return -1;
			} else if (key == 'w') {
				if (rint_(&r, &iv, &uv))
					return -1;
				f->f = iv != 0;
			} else
				handled = 0;
			break;
		case FR_FATAL:
			if (key == 'e') {
				if (rraw(&r, (const uint8_t **)&f->str, &f->strlen))
					return -1;
			} else
				handled = 0;
			break;
		default:
			handled = 0;
		}
		if (!handled && rskip(&r, 0))
			return -1;
	}
	return 0;
}

/* Payload header: flags byte; with PH_SYNC or PH_FRAG a big-endian
 * uint32 msgid; with PH_FRAG a big-endian uint64 total. */
int cmpi_phdr_parse(const uint8_t *x, size_t n, struct phdr *h)
{
	memset(h, 0, sizeof *h);
	if (n < 1)
		return -1;
	h->flags = x[0];
	size_t off = 1;
	if (h->flags & ~(unsigned)(PH_SYNC | PH_FRAG))
		return -1;
	if (h->flags) {
		if (n < off + 4)
			return -1;
		h->msgid = (uint32_t)x[1] << 24 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 8 | x[4];
		off += 4;
	}
	if (h->flags & PH_FRAG) {
		if (n < off + 8)
			return -1;
		uint64_t t = 0;
		for (int i = 0; i < 8; i++)
			t = t << 8 | x[off + i];
		off += 8;
		h->total = t;
		/* a fragmented message is larger than one frame and smaller than
		 * MPI's int-count world allows us to hold */
		if (t < n - off || t > ((uint64_t)1 << 40))
			return -1;
	} else
		h->total = n - off;
	return (int)off;
}

size_t cmpi_phdr_put(uint8_t *p, const struct phdr *h)
{
	size_t off = 1;
	p[0] = h->flags;
	if (h->flags) {
		for (int i = 0; i < 4; i++)
			p[1 + i] = h->msgid >> (24 - 8 * i);
		off += 4;
	}
	if (h->flags & PH_FRAG) {
		for (int i = 0; i < 8; i++)
			p[off + i] = h->total >> (56 - 8 * i);
		off += 8;
	}
	return off;
}
