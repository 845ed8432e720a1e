/* The fuzz harness of the library's wire decoding: built with the
 * library's decoders (src/msgpack.c) under AddressSanitizer and
 * UndefinedBehaviorSanitizer, it reads inputs from stdin, each a
 * big-endian uint32 length and that many bytes, and answers one byte
 * each. An input is decoded every way the library decodes what reaches
 * it: as the stream of frames a relay sends (split, each body decoded,
 * a Deliver's payload header parsed), as the body of every frame type,
 * and as a payload header. A bad read or undefined behaviour aborts the
 * harness: the Go test (FuzzWire) reports the input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/cmpi.h"

struct cmpi G;

void cmpi_die(int code, const char *fmt, ...)
{
	(void)fmt;
	exit(code);
}

static void one(const uint8_t *p, size_t n)
{
	size_t off = 0;
	for (;;) {
		int type;
		const uint8_t *body;
		size_t bl;
		ssize_t used = cmpi_frame_split(p + off, n - off, &type, &body, &bl);
		if (used <= 0)
			break;
		struct inframe f;
		if (cmpi_decode(type, body, bl, &f) == 0 && type == FR_DELIVER && f.x) {
			struct phdr h;
			cmpi_phdr_parse(f.x, f.xlen, &h);
		}
		off += used;
	}
	for (int type = 0; type < 22; type++) {
		struct inframe f;
		if (cmpi_decode(type, p, n, &f) == 0 && f.str)
			(void)(volatile char)(f.strlen ? f.str[f.strlen - 1] : 0);
		if (f.arr) { /* Acked q, Resend d: every element within what was checked */
			const uint8_t *a = f.arr;
			size_t left = f.arrlen;
			for (uint32_t i = 0; i < f.narr; i++)
				(void)cmpi_uint_next(&a, &left);
			if (a != f.arr + f.arrlen)
				abort();
		}
		if (f.x && f.xlen)
			(void)(volatile uint8_t)f.x[f.xlen - 1];
	}
	struct phdr h;
	int hl = cmpi_phdr_parse(p, n, &h);
	if (hl > 0) {
		uint8_t back[PH_MAX];
		if (cmpi_phdr_put(back, &h) != (size_t)hl || memcmp(back, p, hl) != 0)
			abort(); /* what parses must encode back to itself */
	}
}

int main(void)
{
	uint8_t len[4];
	while (fread(len, 1, 4, stdin) == 4) {
		size_t n = (size_t)len[0] << 24 | (size_t)len[1] << 16 | (size_t)len[2] << 8 | len[3];
		/* an exact-size heap copy: ASan sees any read past the end */
		uint8_t *p = malloc(n ? n : 1);
		if (fread(p, 1, n, stdin) != n)
			return 0;
		one(p, n);
		free(p);
		fputc('k', stdout);
		fflush(stdout);
	}
	return 0;
}
