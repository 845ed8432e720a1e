/* LD_PRELOAD for TestFinalizeTakesWhatCameEarly: a rank that looks late.
 * COSCHED_TEST_LATE=fin: after the rank writes a channel's fin frame (12
 * bytes: length 0, tag and context -3), its next recv waits 300 ms first,
 * so its peer's acknowledgement (and fin) are there before it reads.
 * COSCHED_TEST_LATE=poll: every poll waits 50 ms after it returns, so its
 * peer has read all there was before the rank writes again. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int armed;

static int late(const char *what)
{
	const char *v = getenv("COSCHED_TEST_LATE");
	return v && !strcmp(v, what);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, const void *, size_t, int);
	if (!real)
		real = (ssize_t (*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
	static const int32_t fin[3] = {0, -3, -3};
	ssize_t w = real(fd, buf, len, flags);
	if (len == sizeof fin && w == (ssize_t)len && !memcmp(buf, fin, sizeof fin) && late("fin"))
		armed = 1;
	return w;
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, void *, size_t, int);
	if (!real)
		real = (ssize_t (*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "recv");
	if (armed) {
		armed = 0;
		usleep(300000);
	}
	return real(fd, buf, len, flags);
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);
	if (!real)
		real = (int (*)(struct pollfd *, nfds_t, int))dlsym(RTLD_NEXT, "poll");
	int r = real(fds, n, timeout);
	if (late("poll"))
		usleep(50000);
	return r;
}
