/* Communicators and groups. A communicator is a list of world ranks and a
 * number k (contexts 2+2k and 3+2k on the wire). k is agreed when the
 * communicator is made: every member of the parent says its next free k,
 * all take the largest, so two communicators sharing a rank never share
 * a context (disjoint ones made by one split may: they have no rank in
 * common, so their messages cannot meet). */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

#define GROUP(fn, h, g)                                                                            \
	struct group *g = group_get(h);                                                            \
	if (!g)                                                                                    \
		return cmpi_err(NULL, MPI_ERR_GROUP, fn, "group %#x", (unsigned)(h));

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
	COMMARG("MPI_Comm_rank", comm, c);
	*rank = c->rank;
	return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
	COMMARG("MPI_Comm_size", comm, c);
	*size = c->size;
	return MPI_SUCCESS;
}

/* agree_k returns the k every member of c takes for a new communicator. */
static int agree_k(struct comm *c, const int *extra, int nextra, int **all_out)
{
	int n = 1 + nextra;
	int *mine = malloc(n * sizeof(int)), *all = malloc((size_t)n * c->size * sizeof(int));
	if (!mine || !all)
		cmpi_die(1, "out of memory");
	mine[0] = G.next_k;
	for (int i = 0; i < nextra; i++)
		mine[1 + i] = extra[i];
	coll_allgather_ints(c, mine, n, all);
	int k = 0;
	for (int i = 0; i < c->size; i++)
		if (all[i * n] > k)
			k = all[i * n];
	if ((int64_t)3 + 2 * (int64_t)k >= CTX_LIMIT)
		cmpi_die(1, "too many communicators created (context %d)", k);
	G.next_k = k + 1;
	free(mine);
	if (all_out)
		*all_out = all;
	else
		free(all);
	return k;
}

static struct comm *make(struct comm *parent, int k, int size, const int *w)
{
	struct comm *n = comm_new(size, w);
	n->k = k;
	n->eh = parent->eh;
	return n;
}

/* comm_dup makes a duplicate of c with its topology and, for
 * MPI_Comm_dup, the attributes its copy callbacks give (a communicator
 * made from another by a topology call gets none). */
int comm_dup(struct comm *c, int copy_attrs, MPI_Comm *newcomm)
{
	int k = agree_k(c, NULL, 0, NULL);
	struct comm *n = make(c, k, c->size, c->w);
	n->topo = topo_dup(c->topo); /* MPI: a duplicate keeps the topology */
	int rc = copy_attrs ? comm_attrs_copy(c, n) : MPI_SUCCESS;
	if (rc != MPI_SUCCESS) {
		comm_attrs_clear(n);
		comm_release(n);
		return cmpi_err(c, rc, "MPI_Comm_dup", "an attribute's copy callback failed");
	}
	*newcomm = n->handle;
	return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	COMMARG("MPI_Comm_dup", comm, c);
	return comm_dup(c, 1, newcomm);
}

int MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
	int rc = MPI_Comm_dup(comm, newcomm);
	if (rc == MPI_SUCCESS) {
		struct req *r = req_new(RQ_SEND);
		r->complete = 1;
		*request = r->handle;
	}
	return rc;
}

struct member {
	int key, rank;
};

static int by_key(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->rank - y->rank;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	COMMARG("MPI_Comm_split", comm, c);
	if (color < 0 && color != MPI_UNDEFINED)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Comm_split", "color %d", color);
	int extra[2] = {color, key}, *all;
	int k = agree_k(c, extra, 2, &all);
	if (color == MPI_UNDEFINED) {
		free(all);
		*newcomm = MPI_COMM_NULL;
		return MPI_SUCCESS;
	}
	struct member *m = malloc(c->size * sizeof *m);
	int n = 0;
	for (int i = 0; i < c->size; i++)
		if (all[i * 3 + 1] == color) {
			m[n].key = all[i * 3 + 2];
			m[n].rank = i;
			n++;
		}
	qsort(m, n, sizeof *m, by_key);
	int *w = malloc(n * sizeof(int));
	for (int i = 0; i < n; i++)
		w[i] = c->w[m[i].rank];
	*newcomm = make(c, k, n, w)->handle;
	free(w);
	free(m);
	free(all);
	return MPI_SUCCESS;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	COMMARG("MPI_Comm_create", comm, c);
	GROUP("MPI_Comm_create", group, g);
	for (int i = 0; i < g->size; i++)
		if (c->w2c[g->w[i]] < 0)
			return cmpi_err(c, MPI_ERR_GROUP, "MPI_Comm_create", "world rank %d of the group is not in the communicator", g->w[i]);
	int k = agree_k(c, NULL, 0, NULL);
	if (g->rank == MPI_UNDEFINED) {
		*newcomm = MPI_COMM_NULL;
		return MPI_SUCCESS;
	}
	*newcomm = make(c, k, g->size, g->w)->handle;
	return MPI_SUCCESS;
}

int MPI_Comm_free(MPI_Comm *comm)
{
	COMMARG("MPI_Comm_free", *comm, c);
	if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
		return cmpi_err(c, MPI_ERR_COMM, "MPI_Comm_free", "cannot free a predefined communicator");
	/* the delete callbacks run first; the communicator goes either way */
	int rc = comm_attrs_clear(c);
	comm_release(c);
	*comm = MPI_COMM_NULL;
	if (rc != MPI_SUCCESS)
		return cmpi_err(NULL, rc, "MPI_Comm_free", "an attribute's delete callback failed");
	return MPI_SUCCESS;
}

int MPI_Comm_disconnect(MPI_Comm *comm) { return MPI_Comm_free(comm); }

static int same_members(const int *a, const int *b, int n)
{
	/* n is small; quadratic is fine */
	for (int i = 0; i < n; i++) {
		int found = 0;
		for (int j = 0; j < n && !found; j++)
			found = a[i] == b[j];
		if (!found)
			return 0;
	}
	return 1;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
	COMMARG("MPI_Comm_compare", comm1, a);
	COMMARG("MPI_Comm_compare", comm2, b);
	if (a == b)
		*result = MPI_IDENT;
	else if (a->size != b->size)
		*result = MPI_UNEQUAL;
	else if (!memcmp(a->w, b->w, a->size * sizeof(int)))
		*result = MPI_CONGRUENT;
	else if (same_members(a->w, b->w, a->size))
		*result = MPI_SIMILAR;
	else
		*result = MPI_UNEQUAL;
	return MPI_SUCCESS;
}

int MPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
	COMMARG("MPI_Comm_test_inter", comm, c);
	(void)c;
	*flag = 0;
	return MPI_SUCCESS;
}

int MPI_Comm_set_name(MPI_Comm comm, const char *name)
{
	COMMARG("MPI_Comm_set_name", comm, c);
	strncpy(c->name, name, sizeof c->name - 1);
	c->name[sizeof c->name - 1] = 0;
	return MPI_SUCCESS;
}

int MPI_Comm_get_name(MPI_Comm comm, char *name, int *resultlen)
{
	COMMARG("MPI_Comm_get_name", comm, c);
	strcpy(name, c->name);
	*resultlen = (int)strlen(name);
	return MPI_SUCCESS;
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
	COMMARG("MPI_Comm_group", comm, c);
	*group = group_new(c->size, c->w);
	return MPI_SUCCESS;
}

int MPI_Group_size(MPI_Group group, int *size)
{
	GROUP("MPI_Group_size", group, g);
	*size = g->size;
	return MPI_SUCCESS;
}

int MPI_Group_rank(MPI_Group group, int *rank)
{
	GROUP("MPI_Group_rank", group, g);
	*rank = g->rank;
	return MPI_SUCCESS;
}

int MPI_Group_free(MPI_Group *group)
{
	GROUP("MPI_Group_free", *group, g);
	(void)g;
	group_release(*group);
	*group = MPI_GROUP_NULL;
	return MPI_SUCCESS;
}

int MPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	GROUP("MPI_Group_incl", group, g);
	if (n < 0 || n > g->size)
		return cmpi_err(NULL, MPI_ERR_ARG, "MPI_Group_incl", "%d ranks of a group of %d", n, g->size);
	int *w = malloc((n + 1) * sizeof(int));
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= g->size) {
			free(w);
			return cmpi_err(NULL, MPI_ERR_RANK, "MPI_Group_incl", "rank %d of a group of %d", ranks[i], g->size);
		}
		for (int j = 0; j < i; j++)
			if (ranks[j] == ranks[i]) {
				free(w);
				return cmpi_err(NULL, MPI_ERR_RANK, "MPI_Group_incl", "rank %d twice", ranks[i]);
			}
		w[i] = g->w[ranks[i]];
	}
	*newgroup = group_new(n, w);
	free(w);
	return MPI_SUCCESS;
}

int MPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
	GROUP("MPI_Group_excl", group, g);
	if (n < 0 || n > g->size)
		return cmpi_err(NULL, MPI_ERR_ARG, "MPI_Group_excl", "%d ranks of a group of %d", n, g->size);
	char *out = calloc(g->size + 1, 1);
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= g->size) {
			free(out);
			return cmpi_err(NULL, MPI_ERR_RANK, "MPI_Group_excl", "rank %d of a group of %d", ranks[i], g->size);
		}
		out[ranks[i]] = 1;
	}
	int *w = malloc((g->size + 1) * sizeof(int)), m = 0;
	for (int i = 0; i < g->size; i++)
		if (!out[i])
			w[m++] = g->w[i];
	*newgroup = group_new(m, w);
	free(w);
	free(out);
	return MPI_SUCCESS;
}

int MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
	GROUP("MPI_Group_range_incl", group, g);
	int cap = g->size + 1, m = 0;
	int *r = malloc(cap * sizeof(int));
	for (int i = 0; i < n; i++) {
		int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
		if (stride == 0) {
			free(r);
			return cmpi_err(NULL, MPI_ERR_ARG, "MPI_Group_range_incl", "stride 0");
		}
		for (int x = first; stride > 0 ? x <= last : x >= last; x += stride) {
			if (m == cap) {
				free(r);
				return cmpi_err(NULL, MPI_ERR_RANK, "MPI_Group_range_incl", "more ranks than the group has");
			}
			r[m++] = x;
		}
	}
	int rc = MPI_Group_incl(group, m, r, newgroup);
	free(r);
	return rc;
}

int MPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2, int ranks2[])
{
	GROUP("MPI_Group_translate_ranks", group1, a);
	GROUP("MPI_Group_translate_ranks", group2, b);
	for (int i = 0; i < n; i++) {
		if (ranks1[i] == MPI_PROC_NULL) {
			ranks2[i] = MPI_PROC_NULL;
			continue;
		}
		if (ranks1[i] < 0 || ranks1[i] >= a->size)
			return cmpi_err(NULL, MPI_ERR_RANK, "MPI_Group_translate_ranks", "rank %d of a group of %d", ranks1[i], a->size);
		ranks2[i] = MPI_UNDEFINED;
		for (int j = 0; j < b->size; j++)
			if (b->w[j] == a->w[ranks1[i]]) {
				ranks2[i] = j;
				break;
			}
	}
	return MPI_SUCCESS;
}

int MPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
	GROUP("MPI_Group_compare", group1, a);
	GROUP("MPI_Group_compare", group2, b);
	if (a->size != b->size)
		*result = MPI_UNEQUAL;
	else if (a->size == 0 || !memcmp(a->w, b->w, a->size * sizeof(int)))
		*result = MPI_IDENT;
	else if (same_members(a->w, b->w, a->size))
		*result = MPI_SIMILAR;
	else
		*result = MPI_UNEQUAL;
	return MPI_SUCCESS;
}

static int in(const struct group *g, int w)
{
	for (int i = 0; i < g->size; i++)
		if (g->w[i] == w)
			return 1;
	return 0;
}

int MPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	GROUP("MPI_Group_union", group1, a);
	GROUP("MPI_Group_union", group2, b);
	int *w = malloc((a->size + b->size + 1) * sizeof(int)), m = 0;
	for (int i = 0; i < a->size; i++)
		w[m++] = a->w[i];
	for (int i = 0; i < b->size; i++)
		if (!in(a, b->w[i]))
			w[m++] = b->w[i];
	*newgroup = group_new(m, w);
	free(w);
	return MPI_SUCCESS;
}

int MPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	GROUP("MPI_Group_intersection", group1, a);
	GROUP("MPI_Group_intersection", group2, b);
	int *w = malloc((a->size + 1) * sizeof(int)), m = 0;
	for (int i = 0; i < a->size; i++)
		if (in(b, a->w[i]))
			w[m++] = a->w[i];
	*newgroup = group_new(m, w);
	free(w);
	return MPI_SUCCESS;
}

int MPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
	GROUP("MPI_Group_difference", group1, a);
	GROUP("MPI_Group_difference", group2, b);
	int *w = malloc((a->size + 1) * sizeof(int)), m = 0;
	for (int i = 0; i < a->size; i++)
		if (!in(b, a->w[i]))
			w[m++] = a->w[i];
	*newgroup = group_new(m, w);
	free(w);
	return MPI_SUCCESS;
}

/* host_hash tells hosts apart: the processor name's hash. */
int host_hash(void)
{
	char name[MPI_MAX_PROCESSOR_NAME];
	int len;
	MPI_Get_processor_name(name, &len);
	unsigned h = 5381;
	for (int i = 0; i < len; i++)
		h = h * 33 + (unsigned char)name[i];
	return (int)(h & 0x7fffffff);
}

/* Comm_split_type(MPI_COMM_TYPE_SHARED): the ranks on one host, by
 * host_hash (a collision would only merge two hosts' ranks into one
 * communicator, which is still a valid split). */
int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
	(void)info;
	COMMARG("MPI_Comm_split_type", comm, c);
	(void)c;
	if (split_type == MPI_UNDEFINED)
		return MPI_Comm_split(comm, MPI_UNDEFINED, key, newcomm);
	if (split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_COMM_TYPE_HW_GUIDED &&
	    split_type != MPI_COMM_TYPE_HW_UNGUIDED)
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Comm_split_type", "split type %d", split_type);
	return MPI_Comm_split(comm, host_hash(), key, newcomm);
}
