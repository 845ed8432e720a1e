/* Shared parts of the workload programs (blocking.c, nonblocking.c): the
 * ⟨g,v,comm,sync⟩ benchmark jobs of package bench, written against MPI so
 * that the same jobs run on cosched's MPI library and in the simulator.
 *
 *   PROG GRAIN_US IMBALANCE_US ITERATIONS [MSG_BYTES [SEED [cpu|wall]]]
 *
 * Each iteration computes for a time uniform in (g − v/2, g + v/2), then
 * exchanges MSG_BYTES (default 4096) with its neighbours on the 2-D torus
 * of bench.Grid (the news pattern: north, south, east, west; a direction
 * whose neighbour is the rank itself is skipped). Every message carries
 * its sender and iteration, checked on receipt. Rank 0 prints
 * "PASS iterations N wall_s W comm_s C" (C: its time in MPI calls).
 *
 * Work "wall" (the default) waits instead of burning a core, for clusters
 * of more agents than cores, as `bench-rank --work wall` does: it sleeps
 * in steps of at most 1 ms and credits each with at most 1.2 ms of its
 * wall time, so time the rank spends stopped (SIGSTOP) does not count.
 * "cpu" burns the thread's CPU time. */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct wl {
	long grain_us, imb_us, iters, bytes;
	uint64_t rng;
	int cpu;
	int me, n, nsteps;
	int to[4], from[4];
	double comm; /* seconds in MPI calls */
};

static double wl_now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void wl_usage(const char *prog, const char *why)
{
	fprintf(stderr, "%s: %s\nusage: %s GRAIN_US IMBALANCE_US ITERATIONS [MSG_BYTES [SEED [cpu|wall]]]\n", prog, why, prog);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

/* wl_init parses argv (after MPI_Init) and lays the ranks on the torus. */
static void wl_init(struct wl *w, int argc, char **argv)
{
	memset(w, 0, sizeof *w);
	MPI_Comm_rank(MPI_COMM_WORLD, &w->me);
	MPI_Comm_size(MPI_COMM_WORLD, &w->n);
	if (argc < 4)
		wl_usage(argv[0], "missing arguments");
	w->grain_us = atol(argv[1]);
	w->imb_us = atol(argv[2]);
	w->iters = atol(argv[3]);
	w->bytes = argc > 4 ? atol(argv[4]) : 4096;
	w->rng = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
	w->cpu = argc > 6 && strcmp(argv[6], "cpu") == 0;
	if (argc > 6 && !w->cpu && strcmp(argv[6], "wall") != 0)
		wl_usage(argv[0], "work must be cpu or wall");
	if (w->grain_us < 0 || w->imb_us < 0 || w->imb_us > 2 * w->grain_us || w->iters < 0 || w->bytes < 8)
		wl_usage(argv[0], "want GRAIN_US ≥ 0, 0 ≤ IMBALANCE_US ≤ 2×GRAIN_US, ITERATIONS ≥ 0, MSG_BYTES ≥ 8");
	/* a stream of its own per rank (splitmix64 of seed and rank) */
	w->rng ^= 0x9e3779b97f4a7c15ULL * (uint64_t)(w->me + 1);
	/* bench.Grid: rows the largest divisor of n not above √n */
	int rows = 1;
	for (int r = 1; r * r <= w->n; r++)
		if (w->n % r == 0)
			rows = r;
	int cols = w->n / rows, r = w->me / cols, c = w->me % cols;
#define AT(rr, cc) ((((rr) + rows) % rows) * cols + (((cc) + cols) % cols))
	int to[4] = {AT(r - 1, c), AT(r + 1, c), AT(r, c + 1), AT(r, c - 1)};
	int from[4] = {AT(r + 1, c), AT(r - 1, c), AT(r, c - 1), AT(r, c + 1)};
#undef AT
	for (int s = 0; s < 4; s++)
		if (to[s] != w->me) {
			w->to[w->nsteps] = to[s];
			w->from[w->nsteps] = from[s];
			w->nsteps++;
		}
}

static uint64_t wl_next(struct wl *w)
{
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* wl_compute computes for this iteration's draw. */
static void wl_compute(struct wl *w)
{
	double d = (w->grain_us - w->imb_us / 2.0 + (double)(wl_next(w) >> 11) / 9007199254740992.0 * w->imb_us) * 1e-6;
	if (w->cpu) {
		double end = wl_now(CLOCK_THREAD_CPUTIME_ID) + d;
		volatile double x = 1;
		while (wl_now(CLOCK_THREAD_CPUTIME_ID) < end)
			for (int i = 0; i < 1000; i++)
				x = x * 1.0000001 + 1e-9;
		return;
	}
	while (d > 0) {
		double step = d < 1e-3 ? d : 1e-3;
		struct timespec ts = {0, (long)(step * 1e9)};
		double t0 = wl_now(CLOCK_MONOTONIC);
		nanosleep(&ts, NULL);
		double took = wl_now(CLOCK_MONOTONIC) - t0;
		d -= took < step + 200e-6 ? took : step + 200e-6;
	}
}

/* wl_fill stamps a message with its sender and iteration; wl_check checks. */
static void wl_fill(struct wl *w, char *buf, long it)
{
	int32_t h[2] = {w->me, (int32_t)it};
	memcpy(buf, h, sizeof h);
}

static int wl_check(struct wl *w, const char *buf, int from, long it)
{
	int32_t h[2];
	memcpy(h, buf, sizeof h);
	if (h[0] != from || h[1] != (int32_t)it) {
		printf("FAIL rank %d iteration %ld: message from rank %d iteration %d, want rank %d\n", w->me, it, h[0], h[1], from);
		return 1;
	}
	return 0;
}

static void wl_done(struct wl *w, double start, int bad)
{
	int anybad = 0;
	double t0 = MPI_Wtime();
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	w->comm += MPI_Wtime() - t0;
	if (w->me == 0)
		printf("%s iterations %ld wall_s %.3f comm_s %.3f\n", anybad ? "FAIL" : "PASS", w->iters, MPI_Wtime() - start, w->comm);
	MPI_Finalize();
	exit(anybad ? 1 : 0);
}

#endif
