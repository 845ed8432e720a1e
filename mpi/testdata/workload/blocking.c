/* The blocking, communication-heavy workload program: bench's news,B
 * template. Each iteration computes a grain, then exchanges with each torus
 * neighbour in turn with MPI_Sendrecv (send north, receive from south, …:
 * every rank sends in the same direction at each step, so no step
 * deadlocks). Arguments and output: workload.h. */
#include "workload.h"

int main(int argc, char **argv)
{
	struct wl w;
	MPI_Init(&argc, &argv);
	wl_init(&w, argc, argv);
	char *sbuf = calloc(1, w.bytes), *rbuf = calloc(1, w.bytes);
	int bad = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime();
	for (long it = 0; it < w.iters && !bad; it++) {
		wl_compute(&w);
		double t0 = MPI_Wtime();
		for (int s = 0; s < w.nsteps; s++) {
			wl_fill(&w, sbuf, it);
			MPI_Sendrecv(sbuf, (int)w.bytes, MPI_BYTE, w.to[s], s, rbuf, (int)w.bytes, MPI_BYTE, w.from[s], s,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			bad |= wl_check(&w, rbuf, w.from[s], it);
		}
		w.comm += MPI_Wtime() - t0;
	}
	free(sbuf);
	free(rbuf);
	wl_done(&w, start, bad);
}
