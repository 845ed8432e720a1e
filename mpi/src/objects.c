/* Handle tables. Handles follow MPICH's encoding (kind in bits 30-31,
 * object in bits 26-29) so that a program comparing them with MPICH's
 * constants sees what it would under MPICH; the objects created here are
 * "direct" ones (0x8.......) with an index in the low bits. A forged
 * handle is recognised: its kind, object or index is wrong, or its slot
 * is free. */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

TABLE(struct comm, comms)
TABLE(struct group, groups)
TABLE(struct op, ops)
TABLE(struct req, reqs)
TABLE(struct errh, errhs)

#define IDX_MASK 0x03ffffff

struct comm *comm_get(MPI_Comm h)
{
	unsigned u = (unsigned)h;
	int i;
	if (u == (unsigned)MPI_COMM_WORLD)
		i = 0;
	else if (u == (unsigned)MPI_COMM_SELF)
		i = 1;
	else if ((u & ~IDX_MASK) == 0x84000000u)
		i = u & IDX_MASK;
	else
		return NULL;
	if (i >= n_comms || !comms[i]->used)
		return NULL;
	return comms[i];
}

struct comm *comm_new(int size, const int *w)
{
	int i = slot_comms();
	struct comm *c = comms[i];
	memset(c, 0, sizeof *c);
	c->used = 1;
	c->handle = i == 0 ? MPI_COMM_WORLD : i == 1 ? MPI_COMM_SELF : (MPI_Comm)(0x84000000u | i);
	c->size = size;
	c->w = malloc(size * sizeof(int));
	c->w2c = malloc(G.size * sizeof(int));
	if (!c->w || !c->w2c)
		cmpi_die(1, "out of memory");
	memcpy(c->w, w, size * sizeof(int));
	for (int j = 0; j < G.size; j++)
		c->w2c[j] = -1;
	c->rank = MPI_UNDEFINED;
	for (int j = 0; j < size; j++) {
		c->w2c[w[j]] = j;
		if (w[j] == G.rank)
			c->rank = j;
	}
	c->eh = MPI_ERRORS_ARE_FATAL;
	return c;
}

void comm_release(struct comm *c)
{
	free(c->w);
	free(c->w2c);
	topo_free(c->topo);
	c->topo = NULL;
	c->w = c->w2c = NULL;
	c->used = 0;
}

static struct group empty_group = {1, 0, MPI_UNDEFINED, NULL};

struct group *group_get(MPI_Group h)
{
	unsigned u = (unsigned)h;
	if (u == (unsigned)MPI_GROUP_EMPTY)
		return &empty_group;
	if ((u & ~IDX_MASK) != 0x88000000u)
		return NULL;
	int i = u & IDX_MASK;
	if (i >= n_groups || !groups[i]->used)
		return NULL;
	return groups[i];
}

MPI_Group group_new(int size, const int *w)
{
	if (size == 0)
		return MPI_GROUP_EMPTY;
	int i = slot_groups();
	struct group *g = groups[i];
	g->used = 1;
	g->size = size;
	g->w = malloc(size * sizeof(int));
	if (!g->w)
		cmpi_die(1, "out of memory");
	memcpy(g->w, w, size * sizeof(int));
	g->rank = MPI_UNDEFINED;
	for (int j = 0; j < size; j++)
		if (w[j] == G.rank)
			g->rank = j;
	return (MPI_Group)(0x88000000u | i);
}

void group_release(MPI_Group h)
{
	struct group *g = group_get(h);
	if (g && g != &empty_group) {
		free(g->w);
		g->w = NULL;
		g->used = 0;
	}
}

struct op *op_get(MPI_Op h)
{
	unsigned u = (unsigned)h;
	if ((u & ~IDX_MASK) != 0x98000000u)
		return NULL;
	int i = u & IDX_MASK;
	if (i >= n_ops || !ops[i]->used)
		return NULL;
	return ops[i];
}

MPI_Op op_new(MPI_User_function *fn, int commute)
{
	int i = slot_ops();
	ops[i]->used = 1;
	ops[i]->holds = ops[i]->released = 0;
	ops[i]->fn = fn;
	ops[i]->commute = commute;
	return (MPI_Op)(0x98000000u | i);
}

struct req *req_new(int kind)
{
	int i = slot_reqs();
	struct req *r = reqs[i];
	memset(r, 0, sizeof *r);
	r->used = 1;
	r->kind = kind;
	r->handle = (MPI_Request)(0xac000000u | i);
	return r;
}

struct req *req_get(MPI_Request h)
{
	unsigned u = (unsigned)h;
	if ((u & ~IDX_MASK) != 0xac000000u)
		return NULL;
	int i = u & IDX_MASK;
	if (i >= n_reqs || !reqs[i]->used || reqs[i]->released)
		return NULL;
	return reqs[i];
}

void req_free(struct req *r)
{
	if (r->nbcst)
		nbc_free(r);
	if (r->dt)
		dt_unref(r->dt);
	free(r->stage);
	r->stage = NULL;
	r->dt = NULL;
	r->used = 0;
}

struct errh *errh_get(MPI_Errhandler h)
{
	unsigned u = (unsigned)h;
	if ((u & ~IDX_MASK) != 0x94000000u)
		return NULL;
	int i = u & IDX_MASK;
	if (i >= n_errhs || !errhs[i]->used)
		return NULL;
	return errhs[i];
}

MPI_Errhandler errh_new(MPI_Comm_errhandler_function *fn)
{
	int i = slot_errhs();
	errhs[i]->used = 1;
	errhs[i]->fn = fn;
	return (MPI_Errhandler)(0x94000000u | i);
}

int errh_valid(MPI_Errhandler h)
{
	return h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_RETURN || h == MPI_ERRORS_ABORT || errh_get(h) != NULL;
}
