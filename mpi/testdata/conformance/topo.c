/* Process topologies, the neighbourhood collectives and subarray types:
 * MPI_Dims_create's answers, a 2-D grid (coordinates, shifts, a halo
 * exchange, rows by MPI_Cart_sub), a grid smaller than the communicator,
 * rings where a rank is its own neighbour or the same neighbour twice,
 * graphs and distributed graphs, and errors. Every expectation is what
 * MPICH itself answers (run it under MPICH's mpirun) but two: where a
 * rank is the same neighbour twice (a periodic dimension of 1 or 2), MPI
 * 4.0's errata (MPI Forum issue 153) send block s of the sender to block
 * s^1 of the receiver, which Debian's MPICH 4.0.2 gets wrong in
 * MPI_Neighbor_alltoallv (and in MPI_Neighbor_alltoall on 1 or 2 ranks);
 * and a subarray past its array's end, which MPICH accepts. */
#include "check.h"

static int mod(int a, int n) { return ((a % n) + n) % n; }

static void dims(void)
{
	struct {
		int n, nd, in[3], want[3];
	} cases[] = {
	    {6, 2, {0, 0}, {3, 2}},       {16, 3, {0, 0, 0}, {4, 2, 2}}, {7, 2, {0, 0}, {7, 1}},
	    {12, 3, {0, 0, 0}, {3, 2, 2}}, {24, 3, {0, 0, 0}, {4, 3, 2}}, {36, 2, {0, 0}, {6, 6}},
	    {24, 3, {0, 3, 0}, {4, 3, 2}}, {8, 2, {2, 0}, {2, 4}},       {1, 3, {0, 0, 0}, {1, 1, 1}},
	    {30, 3, {0, 0, 0}, {5, 3, 2}}, {64, 3, {0, 0, 0}, {4, 4, 4}}, {5, 1, {0}, {5}},
	    /* where assigning prime factors round-robin goes wrong */
	    {72, 2, {0, 0}, {9, 8}},      {5040, 3, {0, 0, 0}, {21, 16, 15}}, {6240, 3, {0, 0, 0}, {26, 16, 15}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int d[3];
		memcpy(d, cases[i].in, sizeof d);
		OK(MPI_Dims_create(cases[i].n, cases[i].nd, d));
		for (int j = 0; j < cases[i].nd; j++)
			CHECK(d[j] == cases[i].want[j], "Dims_create(%d, %d) dim %d = %d, want %d", cases[i].n,
			      cases[i].nd, j, d[j], cases[i].want[j]);
	}
	int bad[2] = {5, 0};
	int rc = MPI_Dims_create(12, 2, bad), cls = -1;
	MPI_Error_class(rc, &cls);
	CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_DIMS, "Dims_create(12, {5, 0}) gave %d (class %d)", rc, cls);
}

static void grid(int n)
{
	int d[2] = {0, 0}, periods[2] = {1, 0};
	MPI_Dims_create(n, 2, d);
	MPI_Comm g;
	OK(MPI_Cart_create(MPI_COMM_WORLD, 2, d, periods, 0, &g));
	CHECK(g != MPI_COMM_NULL, "no grid communicator");
	int status = -1, nd = -1, r = -1;
	MPI_Topo_test(g, &status);
	CHECK(status == MPI_CART, "Topo_test %d", status);
	MPI_Topo_test(MPI_COMM_WORLD, &status);
	CHECK(status == MPI_UNDEFINED, "world's Topo_test %d", status);
	MPI_Cartdim_get(g, &nd);
	CHECK(nd == 2, "Cartdim_get %d", nd);
	MPI_Comm_rank(g, &r);
	CHECK(r == me, "grid rank %d (no reordering)", r);
	int gd[2], gp[2], xy[2];
	OK(MPI_Cart_get(g, 2, gd, gp, xy));
	CHECK(gd[0] == d[0] && gd[1] == d[1] && gp[0] == 1 && gp[1] == 0, "Cart_get %dx%d periods %d %d", gd[0], gd[1],
	      gp[0], gp[1]);
	CHECK(xy[0] == me / d[1] && xy[1] == me % d[1], "my coordinates %d,%d (row-major)", xy[0], xy[1]);
	for (int q = 0; q < n; q++) {
		int c[2], back = -1;
		OK(MPI_Cart_coords(g, q, 2, c));
		OK(MPI_Cart_rank(g, c, &back));
		CHECK(back == q, "rank %d → (%d,%d) → %d", q, c[0], c[1], back);
	}
	/* periodic dimension 0 wraps */
	int c[2] = {-1, xy[1]}, wrapped = -1;
	OK(MPI_Cart_rank(g, c, &wrapped));
	CHECK(wrapped == (d[0] - 1) * d[1] + xy[1], "(-1,%d) wrapped to %d", xy[1], wrapped);
	int src, dst;
	OK(MPI_Cart_shift(g, 0, 1, &src, &dst));
	CHECK(src == mod(xy[0] - 1, d[0]) * d[1] + xy[1] && dst == mod(xy[0] + 1, d[0]) * d[1] + xy[1],
	      "shift 0: %d %d", src, dst);
	OK(MPI_Cart_shift(g, 1, 1, &src, &dst));
	CHECK(src == (xy[1] == 0 ? MPI_PROC_NULL : me - 1), "shift 1 source %d", src);
	CHECK(dst == (xy[1] == d[1] - 1 ? MPI_PROC_NULL : me + 1), "shift 1 dest %d", dst);
	/* a halo exchange along each dimension */
	for (int dir = 0; dir < 2; dir++) {
		MPI_Cart_shift(g, dir, 1, &src, &dst);
		int got = -7;
		OK(MPI_Sendrecv(&me, 1, MPI_INT, dst, 5, &got, 1, MPI_INT, src, 5, g, MPI_STATUS_IGNORE));
		CHECK(got == (src == MPI_PROC_NULL ? -7 : src), "halo %d: got %d from %d", dir, got, src);
	}
	/* rows: keep dimension 1 */
	int keep[2] = {0, 1};
	MPI_Comm row;
	OK(MPI_Cart_sub(g, keep, &row));
	int rs = -1, rr = -1, sum = -1;
	MPI_Comm_size(row, &rs);
	MPI_Comm_rank(row, &rr);
	CHECK(rs == d[1] && rr == xy[1], "row size %d rank %d", rs, rr);
	MPI_Cartdim_get(row, &nd);
	CHECK(nd == 1, "row dimensions %d", nd);
	MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, row);
	int want = 0;
	for (int j = 0; j < d[1]; j++)
		want += xy[0] * d[1] + j;
	CHECK(sum == want, "row sum %d, want %d", sum, want);
	MPI_Comm_free(&row);
	/* a duplicate keeps the topology */
	MPI_Comm dup;
	MPI_Comm_dup(g, &dup);
	MPI_Topo_test(dup, &status);
	CHECK(status == MPI_CART, "dup's Topo_test %d", status);
	MPI_Comm_free(&dup);
	MPI_Comm_free(&g);
}

/* A grid of n-1 ranks: the last rank gets MPI_COMM_NULL. */
static void smaller(int n)
{
	if (n < 2)
		return;
	int d = n - 1, p = 0;
	MPI_Comm g;
	OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &d, &p, 0, &g));
	CHECK((me == n - 1) == (g == MPI_COMM_NULL), "rank %d: grid %s", me, g == MPI_COMM_NULL ? "null" : "made");
	if (g != MPI_COMM_NULL)
		MPI_Comm_free(&g);
	int mapped = -2;
	OK(MPI_Cart_map(MPI_COMM_WORLD, 1, &d, &p, &mapped));
	CHECK(mapped == (me < d ? me : MPI_UNDEFINED), "Cart_map %d", mapped);
}

/* A periodic ring (n ranks) times a periodic dimension of 1: for n = 1
 * or 2 a rank is its neighbour twice, and in the second dimension it is
 * always its own. */
static void neighbours(int n)
{
	int d[2] = {n, 1}, p[2] = {1, 1};
	MPI_Comm g;
	OK(MPI_Cart_create(MPI_COMM_WORLD, 2, d, p, 0, &g));
	int left = mod(me - 1, n), right = mod(me + 1, n);
	int got[4] = {-1, -1, -1, -1};
	OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, g));
	CHECK(got[0] == left && got[1] == right && got[2] == me && got[3] == me, "allgather %d %d %d %d", got[0],
	      got[1], got[2], got[3]);
	int send[4], want[4] = {left * 10 + 1, right * 10 + 0, me * 10 + 3, me * 10 + 2};
	for (int j = 0; j < 4; j++)
		send[j] = me * 10 + j;
	OK(MPI_Neighbor_alltoall(send, 1, MPI_INT, got, 1, MPI_INT, g));
	for (int j = 0; j < 4; j++)
		CHECK(got[j] == want[j], "alltoall block %d: %d, want %d", j, got[j], want[j]);
	/* v: block j is j+1 ints, each me*10+j */
	int sc[4], sd[4], rc[4], rd[4], sv[10], rv[10], at = 0;
	for (int j = 0; j < 4; j++) {
		sc[j] = rc[j] = j + 1;
		sd[j] = rd[j] = at;
		for (int k = 0; k < j + 1; k++)
			sv[at + k] = me * 10 + j;
		at += j + 1;
	}
	/* block 0 comes from the left's block 1: send 2 ints each way in dimension 0 */
	sc[0] = sc[1] = rc[0] = rc[1] = 2;
	sc[2] = sc[3] = rc[2] = rc[3] = 3;
	sd[0] = rd[0] = 0, sd[1] = rd[1] = 2, sd[2] = rd[2] = 4, sd[3] = rd[3] = 7;
	for (int j = 0; j < 4; j++)
		for (int k = 0; k < sc[j]; k++)
			sv[sd[j] + k] = me * 10 + j;
	memset(rv, 0xff, sizeof rv);
	OK(MPI_Neighbor_alltoallv(sv, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, g));
	for (int j = 0; j < 4; j++)
		for (int k = 0; k < rc[j]; k++)
			CHECK(rv[rd[j] + k] == want[j], "alltoallv block %d[%d]: %d, want %d", j, k, rv[rd[j] + k], want[j]);
	MPI_Comm_free(&g);
	/* a non-periodic line: the ends' missing neighbours are MPI_PROC_NULL, their blocks untouched */
	int zero = 0;
	MPI_Comm line;
	OK(MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &zero, 0, &line));
	got[0] = got[1] = -5;
	OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, line));
	CHECK(got[0] == (me == 0 ? -5 : me - 1) && got[1] == (me == n - 1 ? -5 : me + 1), "line: %d %d", got[0],
	      got[1]);
	MPI_Comm_free(&line);
}

static void graphs(int n)
{
	/* a ring as a graph: node i's neighbours are i-1 and i+1 */
	int *index = malloc(n * sizeof(int)), *edges = malloc(2 * n * sizeof(int));
	for (int i = 0; i < n; i++) {
		index[i] = 2 * (i + 1);
		edges[2 * i] = mod(i - 1, n);
		edges[2 * i + 1] = mod(i + 1, n);
	}
	MPI_Comm g;
	OK(MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &g));
	int status = -1, nn = -1, ne = -1, cnt = -1, nb[2] = {-1, -1};
	MPI_Topo_test(g, &status);
	CHECK(status == MPI_GRAPH, "graph Topo_test %d", status);
	MPI_Graphdims_get(g, &nn, &ne);
	CHECK(nn == n && ne == 2 * n, "Graphdims_get %d %d", nn, ne);
	MPI_Graph_neighbors_count(g, me, &cnt);
	MPI_Graph_neighbors(g, me, 2, nb);
	CHECK(cnt == 2 && nb[0] == mod(me - 1, n) && nb[1] == mod(me + 1, n), "neighbours %d: %d %d", cnt, nb[0],
	      nb[1]);
	int got[2] = {-1, -1};
	OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, got, 1, MPI_INT, g));
	CHECK(got[0] == nb[0] && got[1] == nb[1], "graph allgather %d %d", got[0], got[1]);
	MPI_Comm_free(&g);
	free(index);
	free(edges);

	/* a directed ring, weighted, from each rank's own edges */
	int in = mod(me - 1, n), out = mod(me + 1, n), inw = 100 + in, outw = 100 + me;
	MPI_Comm dg;
	OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &in, &inw, 1, &out, &outw, MPI_INFO_NULL, 0, &dg));
	int indeg = -1, outdeg = -1, weighted = -1;
	MPI_Topo_test(dg, &status);
	MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
	CHECK(status == MPI_DIST_GRAPH && indeg == 1 && outdeg == 1 && weighted, "dist graph %d: %d %d %d", status,
	      indeg, outdeg, weighted);
	int s = -1, sw = -1, t = -1, tw = -1;
	MPI_Dist_graph_neighbors(dg, 1, &s, &sw, 1, &t, &tw);
	CHECK(s == in && sw == inw && t == out && tw == outw, "dist graph neighbours %d(%d) %d(%d)", s, sw, t, tw);
	int from = -1;
	OK(MPI_Neighbor_allgather(&me, 1, MPI_INT, &from, 1, MPI_INT, dg));
	CHECK(from == in, "dist graph allgather: %d, want %d", from, in);
	MPI_Comm_free(&dg);

	/* the same ring, every edge named by rank 0 */
	int *srcs = malloc(n * sizeof(int)), *degs = malloc(n * sizeof(int)), *dsts = malloc(n * sizeof(int));
	for (int i = 0; i < n; i++) {
		srcs[i] = i;
		degs[i] = 1;
		dsts[i] = mod(i + 1, n);
	}
	OK(MPI_Dist_graph_create(MPI_COMM_WORLD, me == 0 ? n : 0, srcs, degs, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
				 &dg));
	MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
	CHECK(indeg == 1 && outdeg == 1 && !weighted, "named by rank 0: %d %d %d", indeg, outdeg, weighted);
	MPI_Dist_graph_neighbors(dg, 1, &s, MPI_UNWEIGHTED, 1, &t, MPI_UNWEIGHTED);
	CHECK(s == in && t == out, "named by rank 0: from %d to %d", s, t);
	MPI_Comm_free(&dg);
	free(srcs);
	free(degs);
	free(dsts);
}

static void subarrays(void)
{
	/* a 4x5 int array; the 2x3 part at (1,1) */
	int sizes[2] = {4, 5}, sub[2] = {2, 3}, starts[2] = {1, 1};
	for (int order = 0; order < 2; order++) {
		MPI_Datatype t;
		OK(MPI_Type_create_subarray(2, sizes, sub, starts, order ? MPI_ORDER_FORTRAN : MPI_ORDER_C, MPI_INT,
					    &t));
		MPI_Type_commit(&t);
		int size = -1;
		MPI_Aint lb = -1, extent = -1;
		MPI_Type_size(t, &size);
		MPI_Type_get_extent(t, &lb, &extent);
		CHECK(size == 6 * (int)sizeof(int) && lb == 0 && extent == 20 * (MPI_Aint)sizeof(int),
		      "subarray size %d lb %ld extent %ld", size, (long)lb, (long)extent);
		int a[20], got[6];
		for (int i = 0; i < 20; i++)
			a[i] = i;
		OK(MPI_Sendrecv(a, 1, t, me, 9, got, 6, MPI_INT, me, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		/* C: rows 1-2, columns 1-3 of rows of 5; Fortran: the first index fastest, 4 per column */
		for (int k = 0; k < 6; k++) {
			int want = order ? (1 + k % 2) + 4 * (1 + k / 2) : 5 * (1 + k / 3) + (1 + k % 3);
			CHECK(got[k] == want, "order %d element %d: %d, want %d", order, k, got[k], want);
		}
		MPI_Type_free(&t);
	}
	int bad[2] = {3, 3};
	MPI_Datatype t;
	int rc = MPI_Type_create_subarray(2, sizes, sub, bad, MPI_ORDER_C, MPI_INT, &t);
	CHECK(rc != MPI_SUCCESS, "a subarray past the array's end was accepted");
}

static void errors(void)
{
	int src, dst, cls = -1;
	int rc = MPI_Cart_shift(MPI_COMM_WORLD, 0, 1, &src, &dst);
	MPI_Error_class(rc, &cls);
	CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_TOPOLOGY, "Cart_shift without a topology: %d (class %d)", rc, cls);
	int n = 2, p = 0;
	MPI_Comm g;
	MPI_Cart_create(MPI_COMM_SELF, 1, (int[]){1}, &p, 0, &g);
	int c = 5, r = -1;
	MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN);
	rc = MPI_Cart_rank(g, &c, &r);
	CHECK(rc != MPI_SUCCESS, "Cart_rank outside a non-periodic dimension: %d → %d", rc, r);
	rc = MPI_Cart_shift(g, 3, 1, &src, &dst);
	CHECK(rc != MPI_SUCCESS, "Cart_shift in dimension 3 of 1 was accepted");
	MPI_Comm_free(&g);
	(void)n;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	int n;
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
	dims();
	grid(n);
	smaller(n);
	neighbours(n);
	graphs(n);
	subarrays();
	errors();
	DONE();
}
