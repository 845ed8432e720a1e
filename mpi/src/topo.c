/* Process topologies: Cartesian grids, graphs and distributed graphs,
 * and the ranks' neighbours that the neighbourhood collectives (coll.c)
 * use. A topology is a description attached to a communicator; the
 * communicator itself is made by MPI_Comm_split or MPI_Comm_dup, so it
 * gets its own contexts like any other. Ranks are never reordered
 * (`reorder` is allowed to be ignored): a rank's place in the grid is its
 * rank in the old communicator. */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

/* TOPO fetches c's topology of kind k (0: any), or fails with
 * MPI_ERR_TOPOLOGY. */
#define TOPO(fn, c, t, k)                                                                          \
	struct topo *t = (c)->topo;                                                                \
	if (!t || ((k) && t->kind != (k)))                                                         \
		return cmpi_err(c, MPI_ERR_TOPOLOGY, fn, "the communicator has no %s topology",          \
				(k) == MPI_CART ? "Cartesian" : (k) == MPI_GRAPH ? "graph" : (k) ? "distributed graph" : "");

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		cmpi_die(1, "out of memory");
	return p;
}

static int *ints(const int *src, int n)
{
	int *p = xcalloc(n, sizeof(int));
	if (src && n)
		memcpy(p, src, (size_t)n * sizeof(int));
	return p;
}

void topo_free(struct topo *t)
{
	if (!t)
		return;
	free(t->dims);
	free(t->periods);
	free(t->index);
	free(t->edges);
	free(t->in);
	free(t->inw);
	free(t->out);
	free(t->outw);
	free(t);
}

struct topo *topo_dup(const struct topo *t)
{
	if (!t)
		return NULL;
	struct topo *n = xcalloc(1, sizeof *n);
	*n = *t;
	n->dims = ints(t->dims, t->ndims);
	n->periods = ints(t->periods, t->ndims);
	n->index = ints(t->index, t->nnodes);
	n->edges = ints(t->edges, t->nedges);
	n->in = ints(t->in, t->indeg);
	n->inw = ints(t->inw, t->indeg);
	n->out = ints(t->out, t->outdeg);
	n->outw = ints(t->outw, t->outdeg);
	return n;
}

/* set_topo gives the communicator h its topology, in place of one its
 * making copied (MPI_Comm_dup keeps the old communicator's). */
static void set_topo(MPI_Comm h, struct topo *t)
{
	struct comm *c = comm_get(h);
	topo_free(c->topo);
	c->topo = t;
}

/* ---- Cartesian ---- */

/* grid_size multiplies dims, or returns -1 past INT_MAX or on a
 * dimension below 1. */
static int64_t grid_size(int ndims, const int *dims)
{
	int64_t n = 1;
	for (int i = 0; i < ndims; i++) {
		if (dims[i] <= 0)
			return -1;
		n *= dims[i];
		if (n > 0x7fffffff)
			return -1;
	}
	return n;
}

static void cart_coords(const struct topo *t, int rank, int *coords)
{
	for (int i = t->ndims - 1; i >= 0; i--) {
		coords[i] = rank % t->dims[i];
		rank /= t->dims[i];
	}
}

/* cart_rank maps coords (wrapped in periodic dimensions) to a rank, or
 * returns -1 for a coordinate outside a non-periodic dimension. */
static int cart_rank(const struct topo *t, const int *coords)
{
	int r = 0;
	for (int i = 0; i < t->ndims; i++) {
		int c = coords[i], d = t->dims[i];
		if (c < 0 || c >= d) {
			if (!t->periods[i])
				return -1;
			c %= d;
			if (c < 0)
				c += d;
		}
		r = r * d + c;
	}
	return r;
}

static struct topo *cart_new(int ndims, const int *dims, const int *periods)
{
	struct topo *t = xcalloc(1, sizeof *t);
	t->kind = MPI_CART;
	t->ndims = ndims;
	t->dims = ints(dims, ndims);
	t->periods = xcalloc(ndims, sizeof(int));
	for (int i = 0; i < ndims; i++)
		t->periods[i] = periods && periods[i] != 0;
	return t;
}

int MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
		    MPI_Comm *comm_cart)
{
	COMMARG("MPI_Cart_create", comm_old, c);
	if (ndims < 0)
		return cmpi_err(c, MPI_ERR_DIMS, "MPI_Cart_create", "ndims %d", ndims);
	int64_t n = grid_size(ndims, dims);
	if (n < 0)
		return cmpi_err(c, MPI_ERR_DIMS, "MPI_Cart_create", "a dimension below 1 or a grid beyond 2^31 ranks");
	if (n > c->size)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Cart_create", "a grid of %lld ranks on a communicator of %d",
				(long long)n, c->size);
	int rc = MPI_Comm_split(comm_old, c->rank < n ? 0 : MPI_UNDEFINED, c->rank, comm_cart);
	if (rc != MPI_SUCCESS || *comm_cart == MPI_COMM_NULL)
		return rc;
	set_topo(*comm_cart, cart_new(ndims, dims, periods));
	return MPI_SUCCESS;
}

/* MPI_Dims_create fills the zeros of dims so that their product with the
 * given ones is nnodes and the dimensions are as close to each other as
 * possible, in non-increasing order. "Close" is MPICH's: the smallest
 * difference between the largest and the smallest (Träff and Lübbe,
 * EuroMPI'15); among equals, the one found last in this search, which
 * gives MPICH's answer on each of the 75,394 cases of its own test
 * (test/mpi/topo/baddims.h). The search takes the factors in
 * non-decreasing order from the divisors of nnodes, dropping a branch
 * once its factor alone is further from the smallest than the best. */
struct dsearch {
	int k;
	int *divs, ndivs;
	int *cur, *best;
	int have, bestbal;
};

static void dims_search(struct dsearch *s, int i, int rest, int from)
{
	if (i == s->k - 1) {
		if (i > 0 && rest < s->cur[i - 1])
			return;
		s->cur[i] = rest;
		int bal = rest - s->cur[0];
		if (!s->have || bal <= s->bestbal) {
			memcpy(s->best, s->cur, (size_t)s->k * sizeof(int));
			s->bestbal = bal;
			s->have = 1;
		}
		return;
	}
	int left = s->k - i;
	for (int j = from; j < s->ndivs; j++) {
		int f = s->divs[j];
		if (rest % f)
			continue;
		/* this factor and the ones after it (no smaller) must fit in rest */
		int64_t p = 1;
		for (int t = 0; t < left && p <= rest; t++)
			p *= f;
		if (p > rest)
			break;
		if (s->have && i > 0 && f - s->cur[0] > s->bestbal)
			break;
		s->cur[i] = f;
		dims_search(s, i + 1, rest / f, j);
	}
}

/* dims_balanced writes k factors of n into out, non-increasing. */
static void dims_balanced(int n, int k, int *out)
{
	if (k == 1) {
		out[0] = n;
		return;
	}
	struct dsearch s = {k, xcalloc(2048, sizeof(int)), 0, xcalloc(k, sizeof(int)), xcalloc(k, sizeof(int)), 0, 0};
	/* the divisors in increasing order (fewer than 1,600 below 2^31) */
	for (int64_t d = 1; d * d <= n; d++)
		if (n % d == 0)
			s.divs[s.ndivs++] = (int)d;
	for (int j = s.ndivs - 1; j >= 0; j--)
		if ((int64_t)s.divs[j] * s.divs[j] != n)
			s.divs[s.ndivs++] = n / s.divs[j];
	dims_search(&s, 0, n, 0);
	for (int i = 0; i < k; i++)
		out[i] = s.best[k - 1 - i];
	free(s.divs);
	free(s.cur);
	free(s.best);
}

int MPI_Dims_create(int nnodes, int ndims, int dims[])
{
	NEED_INIT("MPI_Dims_create");
	if (nnodes < 1 || ndims < 0)
		return cmpi_err(NULL, MPI_ERR_DIMS, "MPI_Dims_create", "nnodes %d, ndims %d", nnodes, ndims);
	int fixed = 1, free_dims = 0;
	for (int i = 0; i < ndims; i++) {
		if (dims[i] < 0)
			return cmpi_err(NULL, MPI_ERR_DIMS, "MPI_Dims_create", "dims[%d] = %d", i, dims[i]);
		if (dims[i] == 0)
			free_dims++;
		else if ((int64_t)fixed * dims[i] > nnodes)
			return cmpi_err(NULL, MPI_ERR_DIMS, "MPI_Dims_create",
					"the given dimensions multiply beyond nnodes %d", nnodes);
		else
			fixed *= dims[i];
	}
	if (nnodes % fixed)
		return cmpi_err(NULL, MPI_ERR_DIMS, "MPI_Dims_create",
				"nnodes %d is not a multiple of the given dimensions' product %d", nnodes, fixed);
	if (free_dims == 0) {
		if (fixed != nnodes)
			return cmpi_err(NULL, MPI_ERR_DIMS, "MPI_Dims_create",
					"the given dimensions multiply to %d, not nnodes %d", fixed, nnodes);
		return MPI_SUCCESS;
	}
	int *f = xcalloc(free_dims, sizeof(int));
	dims_balanced(nnodes / fixed, free_dims, f);
	for (int i = 0, j = 0; i < ndims; i++)
		if (dims[i] == 0)
			dims[i] = f[j++];
	free(f);
	return MPI_SUCCESS;
}

int MPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
	COMMARG("MPI_Cartdim_get", comm, c);
	TOPO("MPI_Cartdim_get", c, t, MPI_CART);
	*ndims = t->ndims;
	return MPI_SUCCESS;
}

int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
	COMMARG("MPI_Cart_get", comm, c);
	TOPO("MPI_Cart_get", c, t, MPI_CART);
	if (maxdims < t->ndims)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Cart_get", "maxdims %d below the grid's %d dimensions", maxdims,
				t->ndims);
	int *xy = xcalloc(t->ndims, sizeof(int));
	cart_coords(t, c->rank, xy);
	for (int i = 0; i < t->ndims; i++) {
		dims[i] = t->dims[i];
		periods[i] = t->periods[i];
		coords[i] = xy[i];
	}
	free(xy);
	return MPI_SUCCESS;
}

int MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
	COMMARG("MPI_Cart_rank", comm, c);
	TOPO("MPI_Cart_rank", c, t, MPI_CART);
	int r = cart_rank(t, coords);
	if (r < 0)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Cart_rank", "coordinates outside a non-periodic dimension");
	*rank = r;
	return MPI_SUCCESS;
}

int MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
	COMMARG("MPI_Cart_coords", comm, c);
	TOPO("MPI_Cart_coords", c, t, MPI_CART);
	if (rank < 0 || rank >= c->size)
		return cmpi_err(c, MPI_ERR_RANK, "MPI_Cart_coords", "rank %d of a grid of %d", rank, c->size);
	if (maxdims < t->ndims)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Cart_coords", "maxdims %d below the grid's %d dimensions",
				maxdims, t->ndims);
	cart_coords(t, rank, coords);
	return MPI_SUCCESS;
}

/* cart_shift is MPI_Cart_shift for this rank (MPI_PROC_NULL past the end
 * of a non-periodic dimension). */
static void cart_shift(const struct topo *t, int rank, int dir, int disp, int *src, int *dst)
{
	int *xy = xcalloc(t->ndims, sizeof(int));
	cart_coords(t, rank, xy);
	int at = xy[dir];
	xy[dir] = at + disp;
	*dst = cart_rank(t, xy);
	xy[dir] = at - disp;
	*src = cart_rank(t, xy);
	if (*dst < 0)
		*dst = MPI_PROC_NULL;
	if (*src < 0)
		*src = MPI_PROC_NULL;
	free(xy);
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest)
{
	COMMARG("MPI_Cart_shift", comm, c);
	TOPO("MPI_Cart_shift", c, t, MPI_CART);
	if (direction < 0 || direction >= t->ndims)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Cart_shift", "direction %d of a grid of %d dimensions", direction,
				t->ndims);
	cart_shift(t, c->rank, direction, disp, rank_source, rank_dest);
	return MPI_SUCCESS;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
	COMMARG("MPI_Cart_sub", comm, c);
	TOPO("MPI_Cart_sub", c, t, MPI_CART);
	int *xy = xcalloc(t->ndims, sizeof(int)), *dims = xcalloc(t->ndims, sizeof(int)),
	    *periods = xcalloc(t->ndims, sizeof(int));
	cart_coords(t, c->rank, xy);
	/* color: the place among the dropped dimensions; key: among the kept */
	int color = 0, key = 0, n = 0;
	for (int i = 0; i < t->ndims; i++)
		if (remain_dims[i]) {
			key = key * t->dims[i] + xy[i];
			dims[n] = t->dims[i];
			periods[n] = t->periods[i];
			n++;
		} else
			color = color * t->dims[i] + xy[i];
	int rc = MPI_Comm_split(comm, color, key, newcomm);
	if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL)
		set_topo(*newcomm, cart_new(n, dims, periods));
	free(xy);
	free(dims);
	free(periods);
	return rc;
}

int MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)
{
	COMMARG("MPI_Cart_map", comm, c);
	if (ndims < 0)
		return cmpi_err(c, MPI_ERR_DIMS, "MPI_Cart_map", "ndims %d", ndims);
	int64_t n = grid_size(ndims, dims);
	if (n < 0 || n > c->size)
		return cmpi_err(c, MPI_ERR_DIMS, "MPI_Cart_map", "a grid that does not fit the communicator of %d",
				c->size);
	*newrank = c->rank < n ? c->rank : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

/* ---- graphs ---- */

int MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int indx[], const int edges[], int reorder,
		     MPI_Comm *comm_graph)
{
	COMMARG("MPI_Graph_create", comm_old, c);
	if (nnodes < 0 || nnodes > c->size)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Graph_create", "nnodes %d on a communicator of %d", nnodes,
				c->size);
	for (int i = 0; i < nnodes; i++)
		if (indx[i] < (i ? indx[i - 1] : 0))
			return cmpi_err(c, MPI_ERR_ARG, "MPI_Graph_create", "index[%d] = %d decreases", i, indx[i]);
	int nedges = nnodes ? indx[nnodes - 1] : 0;
	for (int i = 0; i < nedges; i++)
		if (edges[i] < 0 || edges[i] >= nnodes)
			return cmpi_err(c, MPI_ERR_ARG, "MPI_Graph_create", "edges[%d] = %d, not a node of %d", i,
					edges[i], nnodes);
	int rc = MPI_Comm_split(comm_old, c->rank < nnodes ? 0 : MPI_UNDEFINED, c->rank, comm_graph);
	if (rc != MPI_SUCCESS || *comm_graph == MPI_COMM_NULL)
		return rc;
	struct topo *t = xcalloc(1, sizeof *t);
	t->kind = MPI_GRAPH;
	t->nnodes = nnodes;
	t->nedges = nedges;
	t->index = ints(indx, nnodes);
	t->edges = ints(edges, nedges);
	set_topo(*comm_graph, t);
	return MPI_SUCCESS;
}

int MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
	COMMARG("MPI_Graphdims_get", comm, c);
	TOPO("MPI_Graphdims_get", c, t, MPI_GRAPH);
	*nnodes = t->nnodes;
	*nedges = t->nedges;
	return MPI_SUCCESS;
}

int MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int indx[], int edges[])
{
	COMMARG("MPI_Graph_get", comm, c);
	TOPO("MPI_Graph_get", c, t, MPI_GRAPH);
	for (int i = 0; i < t->nnodes && i < maxindex; i++)
		indx[i] = t->index[i];
	for (int i = 0; i < t->nedges && i < maxedges; i++)
		edges[i] = t->edges[i];
	return MPI_SUCCESS;
}

static int graph_first(const struct topo *t, int rank) { return rank ? t->index[rank - 1] : 0; }

int MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
	COMMARG("MPI_Graph_neighbors_count", comm, c);
	TOPO("MPI_Graph_neighbors_count", c, t, MPI_GRAPH);
	if (rank < 0 || rank >= t->nnodes)
		return cmpi_err(c, MPI_ERR_RANK, "MPI_Graph_neighbors_count", "rank %d of a graph of %d", rank,
				t->nnodes);
	*nneighbors = t->index[rank] - graph_first(t, rank);
	return MPI_SUCCESS;
}

int MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
	COMMARG("MPI_Graph_neighbors", comm, c);
	TOPO("MPI_Graph_neighbors", c, t, MPI_GRAPH);
	if (rank < 0 || rank >= t->nnodes)
		return cmpi_err(c, MPI_ERR_RANK, "MPI_Graph_neighbors", "rank %d of a graph of %d", rank, t->nnodes);
	for (int i = graph_first(t, rank), j = 0; i < t->index[rank] && j < maxneighbors; i++, j++)
		neighbors[j] = t->edges[i];
	return MPI_SUCCESS;
}

int MPI_Graph_map(MPI_Comm comm, int nnodes, const int indx[], const int edges[], int *newrank)
{
	COMMARG("MPI_Graph_map", comm, c);
	if (nnodes < 1 || nnodes > c->size)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Graph_map", "nnodes %d on a communicator of %d", nnodes, c->size);
	*newrank = c->rank < nnodes ? c->rank : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

/* ---- distributed graphs ---- */

static int check_ranks(struct comm *c, const char *fn, const char *what, const int *r, int n)
{
	for (int i = 0; i < n; i++)
		if (r[i] < 0 || r[i] >= c->size)
			return cmpi_err(c, MPI_ERR_RANK, fn, "%s[%d] = %d, not a rank of %d", what, i, r[i], c->size);
	return MPI_SUCCESS;
}

static int *weights(const int *w, int n)
{
	if (w == MPI_UNWEIGHTED || w == MPI_WEIGHTS_EMPTY || !w)
		return xcalloc(n, sizeof(int));
	return ints(w, n);
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[], const int sourceweights[],
				   int outdegree, const int destinations[], const int destweights[], MPI_Info info,
				   int reorder, MPI_Comm *comm_dist_graph)
{
	const char *fn = "MPI_Dist_graph_create_adjacent";
	COMMARG(fn, comm_old, c);
	if (indegree < 0 || outdegree < 0)
		return cmpi_err(c, MPI_ERR_ARG, fn, "indegree %d, outdegree %d", indegree, outdegree);
	int rc = check_ranks(c, fn, "sources", sources, indegree);
	if (!rc)
		rc = check_ranks(c, fn, "destinations", destinations, outdegree);
	if (!rc)
		rc = comm_dup(c, 0, comm_dist_graph);
	if (rc)
		return rc;
	struct topo *t = xcalloc(1, sizeof *t);
	t->kind = MPI_DIST_GRAPH;
	t->weighted = sourceweights != MPI_UNWEIGHTED && destweights != MPI_UNWEIGHTED;
	t->indeg = indegree;
	t->outdeg = outdegree;
	t->in = ints(sources, indegree);
	t->out = ints(destinations, outdegree);
	t->inw = weights(sourceweights, indegree);
	t->outw = weights(destweights, outdegree);
	set_topo(*comm_dist_graph, t);
	return MPI_SUCCESS;
}

/* MPI_Dist_graph_create: any rank may name any edge, so every rank
 * gathers every edge (source, destination, weight) and keeps its own, in
 * the order of the ranks that named them. */
int MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[], const int destinations[],
			  const int weights_[], MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
	const char *fn = "MPI_Dist_graph_create";
	COMMARG(fn, comm_old, c);
	if (n < 0)
		return cmpi_err(c, MPI_ERR_ARG, fn, "n %d", n);
	int rc = check_ranks(c, fn, "sources", sources, n);
	if (rc)
		return rc;
	int64_t m = 0;
	for (int i = 0; i < n; i++) {
		if (degrees[i] < 0)
			return cmpi_err(c, MPI_ERR_ARG, fn, "degrees[%d] = %d", i, degrees[i]);
		m += degrees[i];
	}
	if (m > (1 << 24))
		return cmpi_err(c, MPI_ERR_ARG, fn, "%lld edges from one rank", (long long)m);
	rc = check_ranks(c, fn, "destinations", destinations, (int)m);
	if (rc)
		return rc;
	int weighted = weights_ != MPI_UNWEIGHTED;
	int *mine = xcalloc(3 * m, sizeof(int));
	for (int i = 0, e = 0; i < n; i++)
		for (int j = 0; j < degrees[i]; j++, e++) {
			mine[3 * e] = sources[i];
			mine[3 * e + 1] = destinations[e];
			mine[3 * e + 2] = weighted && weights_ != MPI_WEIGHTS_EMPTY ? weights_[e] : 0;
		}
	int *counts = xcalloc(c->size, sizeof(int)), *displs = xcalloc(c->size, sizeof(int)), count = (int)(3 * m);
	coll_allgather_ints(c, &count, 1, counts);
	int64_t total = 0;
	for (int i = 0; i < c->size; i++) {
		displs[i] = (int)total;
		total += counts[i];
		if (total > 0x7fffffff)
			cmpi_die(1, "%s: more than 2^31 edge entries in all", fn);
	}
	int *all = xcalloc(total, sizeof(int));
	rc = MPI_Allgatherv(mine, count, MPI_INT, all, counts, displs, MPI_INT, comm_old);
	if (!rc)
		rc = comm_dup(c, 0, comm_dist_graph);
	if (!rc) {
		struct topo *t = xcalloc(1, sizeof *t);
		t->kind = MPI_DIST_GRAPH;
		t->weighted = weighted;
		for (int64_t e = 0; e < total / 3; e++) {
			t->indeg += all[3 * e + 1] == c->rank;
			t->outdeg += all[3 * e] == c->rank;
		}
		t->in = xcalloc(t->indeg, sizeof(int));
		t->inw = xcalloc(t->indeg, sizeof(int));
		t->out = xcalloc(t->outdeg, sizeof(int));
		t->outw = xcalloc(t->outdeg, sizeof(int));
		for (int64_t e = 0, i = 0, o = 0; e < total / 3; e++) {
			if (all[3 * e + 1] == c->rank) {
				t->in[i] = all[3 * e];
				t->inw[i++] = all[3 * e + 2];
			}
			if (all[3 * e] == c->rank) {
				t->out[o] = all[3 * e + 1];
				t->outw[o++] = all[3 * e + 2];
			}
		}
		set_topo(*comm_dist_graph, t);
	}
	free(all);
	free(counts);
	free(displs);
	free(mine);
	return rc;
}

int MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
	COMMARG("MPI_Dist_graph_neighbors_count", comm, c);
	TOPO("MPI_Dist_graph_neighbors_count", c, t, MPI_DIST_GRAPH);
	*indegree = t->indeg;
	*outdegree = t->outdeg;
	*weighted = t->weighted;
	return MPI_SUCCESS;
}

int MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[], int maxoutdegree,
			     int destinations[], int destweights[])
{
	COMMARG("MPI_Dist_graph_neighbors", comm, c);
	TOPO("MPI_Dist_graph_neighbors", c, t, MPI_DIST_GRAPH);
	for (int i = 0; i < t->indeg && i < maxindegree; i++) {
		sources[i] = t->in[i];
		if (t->weighted && sourceweights != MPI_UNWEIGHTED && sourceweights)
			sourceweights[i] = t->inw[i];
	}
	for (int i = 0; i < t->outdeg && i < maxoutdegree; i++) {
		destinations[i] = t->out[i];
		if (t->weighted && destweights != MPI_UNWEIGHTED && destweights)
			destweights[i] = t->outw[i];
	}
	return MPI_SUCCESS;
}

int MPI_Topo_test(MPI_Comm comm, int *status)
{
	COMMARG("MPI_Topo_test", comm, c);
	*status = c->topo ? c->topo->kind : MPI_UNDEFINED;
	return MPI_SUCCESS;
}

/* topo_neighbors gives this rank's neighbours in the order the
 * neighbourhood collectives use (MPI 4.0, 7.6): a grid's, per dimension,
 * the one below then the one above (MPI_PROC_NULL past a non-periodic
 * end), the same list in and out; a graph's, its edges, in and out; a
 * distributed graph's, its sources in and its destinations out. recv_order
 * says in which order to post the receives so that, with a rank that is a
 * neighbour twice (a periodic dimension of 1 or 2), each message lands in
 * its place by MPI's order alone: a rank sends below then above, so the
 * first message from a rank that is both is the one meant for its lower
 * neighbour, which is this rank's upper slot. The caller frees the
 * arrays. Returns -1 without a topology. */
int topo_neighbors(struct comm *c, int *nin, int **in, int *nout, int **out, int **recv_order)
{
	struct topo *t = c->topo;
	if (!t)
		return -1;
	switch (t->kind) {
	case MPI_CART:
		*nin = *nout = 2 * t->ndims;
		*in = xcalloc(*nin, sizeof(int));
		*recv_order = xcalloc(*nin, sizeof(int));
		for (int d = 0; d < t->ndims; d++) {
			cart_shift(t, c->rank, d, 1, &(*in)[2 * d], &(*in)[2 * d + 1]);
			(*recv_order)[2 * d] = 2 * d + 1;
			(*recv_order)[2 * d + 1] = 2 * d;
		}
		*out = ints(*in, *nin);
		return 0;
	case MPI_GRAPH: {
		int first = graph_first(t, c->rank);
		*nin = *nout = t->index[c->rank] - first;
		*in = ints(t->edges + first, *nin);
		*out = ints(t->edges + first, *nin);
		break;
	}
	default:
		*nin = t->indeg;
		*nout = t->outdeg;
		*in = ints(t->in, t->indeg);
		*out = ints(t->out, t->outdeg);
	}
	*recv_order = xcalloc(*nin, sizeof(int));
	for (int i = 0; i < *nin; i++)
		(*recv_order)[i] = i;
	return 0;
}
