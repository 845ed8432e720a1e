/* The non-blocking, collective-heavy workload program: bench's news,NB
 * template with its barrier an MPI_Allreduce. Each iteration computes a
 * grain, posts an MPI_Irecv from and an MPI_Isend to every torus
 * neighbour, sums a residual over all ranks with MPI_Allreduce (where the
 * template has its barrier), then completes the exchanges with
 * MPI_Waitall. Arguments and output: workload.h. */
#include "workload.h"

int main(int argc, char **argv)
{
	struct wl w;
	MPI_Init(&argc, &argv);
	wl_init(&w, argc, argv);
	char *sbuf[4], *rbuf[4];
	for (int s = 0; s < 4; s++) {
		sbuf[s] = calloc(1, w.bytes);
		rbuf[s] = calloc(1, w.bytes);
	}
	MPI_Request req[8];
	MPI_Status st[8];
	int bad = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime();
	for (long it = 0; it < w.iters && !bad; it++) {
		wl_compute(&w);
		double t0 = MPI_Wtime();
		for (int s = 0; s < w.nsteps; s++)
			MPI_Irecv(rbuf[s], (int)w.bytes, MPI_BYTE, w.from[s], s, MPI_COMM_WORLD, &req[s]);
		for (int s = 0; s < w.nsteps; s++) {
			wl_fill(&w, sbuf[s], it);
			MPI_Isend(sbuf[s], (int)w.bytes, MPI_BYTE, w.to[s], s, MPI_COMM_WORLD, &req[w.nsteps + s]);
		}
		double mine = w.me + it, sum = 0;
		MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		if (sum != (double)w.n * (w.n - 1) / 2 + (double)w.n * it) {
			printf("FAIL rank %d iteration %ld: Allreduce gave %g\n", w.me, it, sum);
			bad = 1;
		}
		MPI_Waitall(2 * w.nsteps, req, st);
		for (int s = 0; s < w.nsteps; s++)
			bad |= wl_check(&w, rbuf[s], w.from[s], it);
		w.comm += MPI_Wtime() - t0;
	}
	for (int s = 0; s < 4; s++) {
		free(sbuf[s]);
		free(rbuf[s]);
	}
	wl_done(&w, start, bad);
}
