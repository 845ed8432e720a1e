/* One-sided communication (MPI 4.0, 12).
 *
 * Active target (fences, post-start-complete-wait): a Put, Get or
 * accumulate is recorded at its origin (its data packed, with the target
 * datatype's layout) and carried out at the epoch's end: at a fence every
 * rank sends each target the operations it has for it, through the relays
 * like any message (so under bcs they are buffer-coscheduled), applies
 * what it receives in origin rank order, and answers the Gets;
 * Win_complete and Win_wait do the same between the start and post
 * groups.
 *
 * Passive target (Win_lock, Win_lock_all, Win_flush…, Win_unlock): the
 * operations are recorded the same way and sent at the flush or unlock,
 * with the lock request when the target has not granted it yet (a lock is
 * taken lazily, at the first flush or unlock that has operations, except
 * on the origin itself, whose local loads and stores it must protect).
 * The target serves them in whatever MPI call it is in (every window keeps
 * a receive posted for them, looked at each time the library reads from
 * the relay): the weak progress MPI allows and MPICH without its progress
 * thread has, so a target computing outside MPI delays its origins until
 * its next call. A command that asks for a lock held in a conflicting mode
 * waits at the target, in arrival order, until the holder unlocks. The
 * request-based calls (Rput…) are the calls with a request completed at
 * once, Rget's and Rget_accumulate's after a flush of their target.
 *
 * Shared-memory windows (Win_allocate_shared): one POSIX shared memory
 * segment mapped by every rank of the communicator, which must all be on
 * one host, each rank's part after the one before (MPI's contiguous
 * default); Win_shared_query gives any rank's part, which the others then
 * load and store directly; the one-sided calls work on it as on any
 * window. Dynamic windows fail the job as "not supported" (build.sh's
 * stubs). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cmpi.h"

enum { OP_PUT = 1, OP_GET, OP_ACC, OP_GACC, OP_CAS };
enum { EP_NONE = 0, EP_FENCE = 1, EP_ACCESS = 2, EP_EXPOSURE = 4 };
enum { TAG_OPS = 1, TAG_REPLY = 2, TAG_SIZE = 3, TAG_PREQ = 4, TAG_PDATA = 5, TAG_PREPLY = 6 };

/* A passive-target command (TAG_PREQ): a header of four int64 (flags,
 * lock type, operations' length, 0), then the operations, or, above
 * PC_INLINE bytes in all, the operations alone on TAG_PDATA. Its answer
 * (TAG_PREPLY) carries the Gets' data, possibly none. An origin has at
 * most one command outstanding at a target (it waits for the answer), so
 * a target needs no order among one origin's commands. */
enum { PC_ACQUIRE = 1, PC_RELEASE = 2, PC_DATA = 4, PC_CLOSE = 8 };
#define PC_HEADER 32
#define PC_INLINE 65536

struct pcmd {
	struct pcmd *next;
	int origin;
	int64_t flags, type, len;
	uint8_t *data;
	struct req *dreq; /* the operations' receive (PC_DATA) until they are here */
};

/* A Get's (or Get_accumulate's, Compare_and_swap's) destination, waiting
 * for its target's reply. */
struct pget {
	int target;
	void *addr;
	int count;
	struct dtype *dt;
	size_t bytes;
};

struct win {
	int used;
	MPI_Win handle;
	MPI_Comm comm; /* a duplicate: the window's own messages */
	int rank, size;
	void *base, *allocated;
	MPI_Aint bytes;
	int disp_unit, flavor;
	MPI_Errhandler eh;
	char name[MPI_MAX_OBJECT_NAME];
	int epoch;
	int *start, nstart; /* Win_start's group: window ranks */
	int *post, npost;   /* Win_post's */
	struct buf *out;       /* per target: the operations for it */
	struct pget *gets;
	int ngets, capgets;
	/* passive target, as an origin (per target) */
	int *locked;    /* 0, or the lock type of this rank's epoch there */
	char *acquired; /* 0: not asked for yet; 1: granted; 2: MPI_MODE_NOCHECK, never asked for */
	int lock_all;
	/* … and as a target */
	struct req *svc; /* the receive commands arrive in */
	uint8_t *svcbuf;
	int excl, nshared; /* the lock: its exclusive holder (-1: none), how many share it */
	int *holds;        /* per origin: the lock type it holds here, 0: none */
	struct pcmd *pending, *pending_tail; /* commands not carried out yet, in arrival order */
	int closing;
	/* a shared-memory window's segment, and each rank's part of it */
	uint8_t *shm;
	size_t shm_len;
	int64_t *shm_off, *shm_size;
	int *shm_unit;
	/* MPI_Win_get_attr's values */
	MPI_Aint attr_size;
	int attr_disp_unit, attr_flavor, attr_model;
};

#define WIN_BASE 0xa0000000u /* MPICH's direct windows */
TABLE(struct win, wins)
static int live_wins; /* windows not freed: win_progress has work to look at */
static void svc_post(struct win *w);

static struct win *win_get(MPI_Win h)
{
	unsigned i = (unsigned)h - WIN_BASE;
	if ((unsigned)h < WIN_BASE || i >= (unsigned)n_wins || !wins[i]->used)
		return NULL;
	return wins[i];
}

static int werr(struct win *w, int cls, const char *fn, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* werr is cmpi_err for a window: its handler (MPI_ERRORS_ARE_FATAL by
 * default, as for communicators). */
static int werr(struct win *w, int cls, const char *fn, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	MPI_Win h = w ? w->handle : MPI_WIN_NULL;
	return cmpi_obj_err(w ? w->eh : MPI_ERRORS_ARE_FATAL, &h, cls, fn, detail);
}

#define WINARG(fn, h, w)                                                                           \
	NEED_INIT(fn);                                                                             \
	struct win *w = win_get(h);                                                                \
	if (!w)                                                                                    \
		return werr(NULL, MPI_ERR_WIN, fn, "window %#x", (unsigned)(h));

static int win_new(void *base, MPI_Aint size, int disp_unit, MPI_Comm comm, int flavor, MPI_Win *out, const char *fn)
{
	struct comm *c = comm_get(comm);
	if (!c)
		return cmpi_err(NULL, MPI_ERR_COMM, fn, "communicator %#x", (unsigned)comm);
	if (size < 0 || disp_unit <= 0)
		return cmpi_err(c, MPI_ERR_ARG, fn, "size %ld, disp_unit %d", (long)size, disp_unit);
	int i = slot_wins();
	struct win *w = wins[i];
	memset(w, 0, sizeof *w);
	w->used = 1;
	w->handle = (MPI_Win)(WIN_BASE + (unsigned)i);
	MPI_Comm_dup(comm, &w->comm);
	w->rank = c->rank;
	w->size = c->size;
	w->base = base;
	w->bytes = size;
	w->disp_unit = disp_unit;
	w->flavor = flavor;
	w->eh = MPI_ERRORS_ARE_FATAL;
	w->out = calloc((size_t)w->size, sizeof *w->out);
	w->locked = calloc((size_t)w->size, sizeof *w->locked);
	w->acquired = calloc((size_t)w->size, 1);
	w->holds = calloc((size_t)w->size, sizeof *w->holds);
	w->svcbuf = malloc(PC_INLINE);
	if (!w->out || !w->locked || !w->acquired || !w->holds || !w->svcbuf)
		cmpi_die(1, "out of memory");
	w->excl = -1;
	svc_post(w);
	live_wins++;
	*out = w->handle;
	return MPI_SUCCESS;
}

int MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
	NEED_INIT("MPI_Win_create");
	(void)info;
	return win_new(base, size, disp_unit, comm, MPI_WIN_FLAVOR_CREATE, win, "MPI_Win_create");
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)
{
	NEED_INIT("MPI_Win_allocate");
	(void)info;
	void *p = calloc(1, size > 0 ? (size_t)size : 1);
	if (!p)
		return cmpi_err(comm_get(comm), MPI_ERR_NO_MEM, "MPI_Win_allocate", "%ld bytes", (long)size);
	int rc = win_new(p, size, disp_unit, comm, MPI_WIN_FLAVOR_ALLOCATE, win, "MPI_Win_allocate");
	if (rc != MPI_SUCCESS) {
		free(p);
		return rc;
	}
	win_get(*win)->allocated = p;
	*(void **)baseptr = p;
	return MPI_SUCCESS;
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win)
{
	static const char fn[] = "MPI_Win_allocate_shared";
	static unsigned segments; /* this rank's, for a name no other call uses */
	(void)info;
	COMMARG(fn, comm, c);
	if (size < 0 || disp_unit <= 0)
		return cmpi_err(c, MPI_ERR_ARG, fn, "size %ld, disp_unit %d", (long)size, disp_unit);
	int n = c->size;
	int64_t mine[3] = {size, disp_unit, host_hash()}, *all = malloc(sizeof *all * 3 * (size_t)n);
	if (!all)
		cmpi_die(1, "out of memory");
	MPI_Allgather(mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, comm);
	int64_t total = 0;
	int apart = 0;
	for (int r = 0; r < n; r++) {
		total += all[3 * r];
		apart |= all[3 * r + 2] != mine[2];
	}
	if (apart) {
		free(all);
		return cmpi_err(c, MPI_ERR_RMA_SHARED, fn, "the communicator's ranks are on more than one host (make it with MPI_Comm_split_type(MPI_COMM_TYPE_SHARED))");
	}
	/* rank 0 makes the segment and says its name; the name goes once all
	 * have it open (the memory lives as long as a mapping does) */
	char name[64] = {0};
	int fd = -1, err = 0;
	size_t len = total > 0 ? (size_t)total : 1;
	if (c->rank == 0) {
		snprintf(name, sizeof name, "/cosched-%lld-%d-%u", (long long)G.job, (int)getpid(), ++segments);
		fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)len) != 0)
			err = errno ? errno : EIO;
	}
	MPI_Bcast(&err, 1, MPI_INT, 0, comm);
	MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm);
	if (!err && c->rank != 0 && (fd = shm_open(name, O_RDWR, 0)) < 0)
		err = errno;
	void *map = MAP_FAILED;
	if (!err && (map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
		err = errno;
	if (fd >= 0)
		close(fd);
	int any = 0;
	MPI_Allreduce(&err, &any, 1, MPI_INT, MPI_MAX, comm);
	if (c->rank == 0 && name[0])
		shm_unlink(name);
	if (any) {
		if (map != MAP_FAILED)
			munmap(map, len);
		free(all);
		return cmpi_err(c, MPI_ERR_NO_MEM, fn, "shared memory of %lld bytes (%s): %s", (long long)total, name, strerror(any));
	}
	int64_t *off = malloc(sizeof *off * (size_t)n), *sz = malloc(sizeof *sz * (size_t)n);
	int *unit = malloc(sizeof *unit * (size_t)n);
	if (!off || !sz || !unit)
		cmpi_die(1, "out of memory");
	int64_t at = 0;
	for (int r = 0; r < n; at += all[3 * r], r++) {
		off[r] = at;
		sz[r] = all[3 * r];
		unit[r] = (int)all[3 * r + 1];
	}
	free(all);
	uint8_t *base = (uint8_t *)map + off[c->rank];
	int rc = win_new(base, size, disp_unit, comm, MPI_WIN_FLAVOR_SHARED, win, fn);
	if (rc != MPI_SUCCESS) {
		munmap(map, len);
		free(off), free(sz), free(unit);
		return rc;
	}
	struct win *w = win_get(*win);
	w->shm = map;
	w->shm_len = len;
	w->shm_off = off;
	w->shm_size = sz;
	w->shm_unit = unit;
	*(void **)baseptr = base;
	return MPI_SUCCESS;
}

int MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
	static const char fn[] = "MPI_Win_shared_query";
	WINARG(fn, win, w);
	if (!w->shm)
		return werr(w, MPI_ERR_RMA_FLAVOR, fn, "window %#x is not a shared-memory one (MPI_Win_allocate_shared)", (unsigned)win);
	if (rank == MPI_PROC_NULL) /* the lowest rank with memory, else rank 0 */
		for (rank = 0; rank < w->size - 1 && w->shm_size[rank] == 0; rank++)
			;
	if (rank < 0 || rank >= w->size)
		return werr(w, MPI_ERR_RANK, fn, "rank %d of a window of %d", rank, w->size);
	*size = (MPI_Aint)w->shm_size[rank];
	*disp_unit = w->shm_unit[rank];
	*(void **)baseptr = w->shm + w->shm_off[rank];
	return MPI_SUCCESS;
}

int MPI_Win_free(MPI_Win *win)
{
	WINARG("MPI_Win_free", *win, w);
	if (w->epoch & (EP_ACCESS | EP_EXPOSURE))
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_free", "an access or exposure epoch is open");
	for (int t = 0; t < w->size; t++)
		if (w->locked[t])
			return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_free", "rank %d of the window is still locked", t);
	MPI_Barrier(w->comm); /* no rank accesses it any more: every command to this one is served */
	/* the command receive taken back: a Close from this rank to itself */
	w->closing = 1;
	int64_t close[4] = {PC_CLOSE, 0, 0, 0};
	struct comm *c = comm_get(w->comm);
	p2p_send_bytes(c, w->rank, TAG_PREQ, 2 + 2 * c->k, close, sizeof close);
	wait_reqs(&w->svc, 1, 0);
	req_free(w->svc);
	live_wins--;
	MPI_Comm_free(&w->comm);
	for (int i = 0; i < w->size; i++)
		free(w->out[i].p);
	free(w->out);
	free(w->gets);
	free(w->start);
	free(w->post);
	free(w->allocated);
	if (w->shm)
		munmap(w->shm, w->shm_len);
	free(w->shm_off);
	free(w->shm_size);
	free(w->shm_unit);
	free(w->locked);
	free(w->acquired);
	free(w->holds);
	free(w->svcbuf);
	w->used = 0;
	*win = MPI_WIN_NULL;
	return MPI_SUCCESS;
}

/* ---- recording at the origin ---- */

static void put8(struct buf *b, int64_t v)
{
	buf_reserve(b, 8);
	memcpy(b->p + b->len, &v, 8);
	b->len += 8;
}

static void putbytes(struct buf *b, const void *p, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* record appends one operation for target: kind, op, where (disp), the
 * target datatype's layout (count of it: its size, extent, basic element
 * type and blocks) and data (n bytes, packed). */
static void record(struct win *w, int target, int kind, MPI_Op op, MPI_Aint disp, int count, struct dtype *td,
		   const void *data, size_t n, const void *data2, size_t n2)
{
	struct buf *b = &w->out[target];
	put8(b, kind);
	put8(b, op);
	put8(b, disp);
	put8(b, count);
	put8(b, td->size);
	put8(b, td->ub - td->lb);
	put8(b, td->basic);
	put8(b, td->nblk);
	for (int i = 0; i < td->nblk; i++) {
		put8(b, td->blk[i].off);
		put8(b, td->blk[i].len);
	}
	put8(b, (int64_t)(n + n2));
	if (n)
		putbytes(b, data, n);
	if (n2)
		putbytes(b, data2, n2);
}

static void want_reply(struct win *w, int target, void *addr, int count, struct dtype *dt)
{
	if (w->ngets == w->capgets) {
		w->capgets = w->capgets ? 2 * w->capgets : 16;
		struct pget *g = realloc(w->gets, (size_t)w->capgets * sizeof *g);
		if (!g)
			cmpi_die(1, "out of memory");
		w->gets = g;
	}
	dt_ref(dt);
	w->gets[w->ngets++] = (struct pget){target, addr, count, dt, (size_t)count * dt->size};
}

/* rma_args checks what every call gives and packs its origin data. */
static int rma_args(const char *fn, struct win *w, int target, const void *oaddr, int ocount, MPI_Datatype odt,
		    int tcount, MPI_Datatype tdt, struct dtype **otd, struct dtype **ttd, uint8_t **packed)
{
	if (target < 0 || target >= w->size)
		return werr(w, MPI_ERR_RANK, fn, "target rank %d of a window of %d", target, w->size);
	if (!(w->epoch & (EP_FENCE | EP_ACCESS)) && !w->locked[target])
		return werr(w, MPI_ERR_RMA_SYNC, fn, "no access epoch for rank %d: call MPI_Win_fence, MPI_Win_start or MPI_Win_lock first", target);
	struct dtype *o = dt_get(odt), *t = dt_get(tdt);
	if (!o || !t)
		return werr(w, MPI_ERR_TYPE, fn, "datatype %#x or %#x", (unsigned)odt, (unsigned)tdt);
	if (ocount < 0 || tcount < 0 || (MPI_Aint)ocount * o->size != (MPI_Aint)tcount * t->size)
		return werr(w, MPI_ERR_COUNT, fn, "%d of the origin's type is not %d of the target's", ocount, tcount);
	*otd = o;
	*ttd = t;
	if (packed) {
		size_t n = (size_t)ocount * o->size;
		if (!(*packed = malloc(n ? n : 1)))
			cmpi_die(1, "out of memory");
		dt_pack(oaddr, ocount, o, *packed);
	}
	return MPI_SUCCESS;
}

int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
	    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
	WINARG("MPI_Put", win, w);
	if (target_rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	struct dtype *o, *t;
	uint8_t *p;
	int rc = rma_args("MPI_Put", w, target_rank, origin_addr, origin_count, origin_datatype, target_count,
			  target_datatype, &o, &t, &p);
	if (rc != MPI_SUCCESS)
		return rc;
	record(w, target_rank, OP_PUT, MPI_OP_NULL, target_disp, target_count, t, p, (size_t)origin_count * o->size, NULL, 0);
	free(p);
	return MPI_SUCCESS;
}

int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
	    int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
	WINARG("MPI_Get", win, w);
	if (target_rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	struct dtype *o, *t;
	int rc = rma_args("MPI_Get", w, target_rank, origin_addr, origin_count, origin_datatype, target_count,
			  target_datatype, &o, &t, NULL);
	if (rc != MPI_SUCCESS)
		return rc;
	record(w, target_rank, OP_GET, MPI_OP_NULL, target_disp, target_count, t, NULL, 0, NULL, 0);
	want_reply(w, target_rank, origin_addr, origin_count, o);
	return MPI_SUCCESS;
}

/* acc_op checks an accumulate's operation: a predefined one, on the
 * target type's elements. */
static int acc_op(const char *fn, struct win *w, MPI_Op op, struct dtype *t)
{
	if (op_get(op) || (op != MPI_REPLACE && op != MPI_NO_OP && op_check(op, t) != MPI_SUCCESS))
		return werr(w, MPI_ERR_OP, fn, "op %#x on datatype %#x (a predefined op on a predefined element type)",
			    (unsigned)op, (unsigned)t->handle);
	if (t->size > 0 && !t->basic)
		return werr(w, MPI_ERR_TYPE, fn, "datatype %#x mixes element types", (unsigned)t->handle);
	return MPI_SUCCESS;
}

int MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
		   MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
	WINARG("MPI_Accumulate", win, w);
	if (target_rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	struct dtype *o, *t;
	uint8_t *p;
	int rc = rma_args("MPI_Accumulate", w, target_rank, origin_addr, origin_count, origin_datatype, target_count,
			  target_datatype, &o, &t, &p);
	if (rc == MPI_SUCCESS && (rc = acc_op("MPI_Accumulate", w, op, t)) == MPI_SUCCESS)
		record(w, target_rank, OP_ACC, op, target_disp, target_count, t, p, (size_t)origin_count * o->size, NULL, 0);
	free(p);
	return rc;
}

int MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr,
		       int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
		       int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win)
{
	static const char fn[] = "MPI_Get_accumulate";
	WINARG(fn, win, w);
	if (target_rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	struct dtype *o = NULL, *t, *r;
	uint8_t *p = NULL;
	int rc;
	if (op == MPI_NO_OP) /* the origin buffer is ignored */
		rc = rma_args(fn, w, target_rank, NULL, result_count, result_datatype, target_count, target_datatype, &r, &t, NULL);
	else
		rc = rma_args(fn, w, target_rank, origin_addr, origin_count, origin_datatype, target_count, target_datatype, &o,
			      &t, &p);
	if (rc == MPI_SUCCESS && !(r = dt_get(result_datatype)))
		rc = werr(w, MPI_ERR_TYPE, fn, "result datatype %#x", (unsigned)result_datatype);
	if (rc == MPI_SUCCESS && (MPI_Aint)result_count * r->size != (MPI_Aint)target_count * t->size)
		rc = werr(w, MPI_ERR_COUNT, fn, "%d of the result's type is not %d of the target's", result_count, target_count);
	if (rc == MPI_SUCCESS)
		rc = acc_op(fn, w, op, t);
	if (rc == MPI_SUCCESS) {
		record(w, target_rank, OP_GACC, op, target_disp, target_count, t, p, p ? (size_t)origin_count * o->size : 0,
		       NULL, 0);
		want_reply(w, target_rank, result_addr, result_count, r);
	}
	free(p);
	return rc;
}

int MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
		     MPI_Aint target_disp, MPI_Op op, MPI_Win win)
{
	return MPI_Get_accumulate(origin_addr, 1, datatype, result_addr, 1, datatype, target_rank, target_disp, 1, datatype,
				  op, win);
}

int MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr, MPI_Datatype datatype,
			 int target_rank, MPI_Aint target_disp, MPI_Win win)
{
	static const char fn[] = "MPI_Compare_and_swap";
	WINARG(fn, win, w);
	if (target_rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	struct dtype *o, *t;
	int rc = rma_args(fn, w, target_rank, origin_addr, 1, datatype, 1, datatype, &o, &t, NULL);
	if (rc != MPI_SUCCESS)
		return rc;
	if (!o->predefined || o->nblk != 1)
		return werr(w, MPI_ERR_TYPE, fn, "datatype %#x: want a predefined one", (unsigned)datatype);
	record(w, target_rank, OP_CAS, MPI_OP_NULL, target_disp, 1, t, compare_addr, (size_t)o->size, origin_addr,
	       (size_t)o->size);
	want_reply(w, target_rank, result_addr, 1, o);
	return MPI_SUCCESS;
}

/* ---- carrying out at the target ---- */

static int64_t get8(const uint8_t **p)
{
	int64_t v;
	memcpy(&v, *p, 8);
	*p += 8;
	return v;
}

/* region walks a target layout: the i-th block run of count instances
 * at addr; every run must lie inside the window. */
struct layout {
	uint8_t *addr;
	int64_t count, size, ext, nblk;
	const uint8_t *blks; /* nblk (off, len) pairs */
};

/* contiguous folds a layout whose instances follow each other without a
 * gap (one block filling its extent) into one block: count bytes-long
 * runs, not count one-element ones (a million-element MPI_CHAR
 * accumulate was a million memcpy calls, three times). */
static void contiguous(struct layout *l, int64_t *whole)
{
	*whole = -1;
	if (l->nblk != 1)
		return;
	const uint8_t *q = l->blks;
	int64_t off = get8(&q), len = get8(&q);
	if (off == 0 && len == l->ext)
		*whole = l->count * len;
}

static int inside(struct win *w, struct layout *l)
{
	uint8_t *lo = w->base, *hi = (uint8_t *)w->base + w->bytes;
	int64_t whole;
	contiguous(l, &whole);
	if (whole >= 0)
		return whole == 0 || (l->addr >= lo && whole <= hi - l->addr);
	for (int64_t i = 0; i < l->count; i++) {
		const uint8_t *q = l->blks;
		for (int64_t b = 0; b < l->nblk; b++) {
			int64_t off = get8(&q), len = get8(&q);
			uint8_t *a = l->addr + i * l->ext + off;
			if (len > 0 && (a < lo || a + len > hi))
				return 0;
		}
	}
	return 1;
}

/* move gathers the layout's bytes into p (in 0) or scatters p into it. */
static void move(struct layout *l, uint8_t *p, int in)
{
	int64_t whole;
	contiguous(l, &whole);
	if (whole >= 0) {
		if (in)
			memmove(l->addr, p, (size_t)whole);
		else
			memmove(p, l->addr, (size_t)whole);
		return;
	}
	for (int64_t i = 0; i < l->count; i++) {
		const uint8_t *q = l->blks;
		for (int64_t b = 0; b < l->nblk; b++) {
			int64_t off = get8(&q), len = get8(&q);
			uint8_t *a = l->addr + i * l->ext + off;
			if (in)
				memcpy(a, p, (size_t)len);
			else
				memcpy(p, a, (size_t)len);
			p += len;
		}
	}
}

/* apply carries out origin's operations (ops, n bytes) on this window
 * and appends the Gets' data to reply. */
static void apply(struct win *w, int origin, const uint8_t *ops, size_t n, struct buf *reply)
{
	const uint8_t *p = ops, *end = ops + n;
	while (p < end) {
		int kind = (int)get8(&p);
		MPI_Op op = (MPI_Op)get8(&p);
		int64_t disp = get8(&p);
		struct layout l = {0};
		l.count = get8(&p);
		l.size = get8(&p);
		l.ext = get8(&p);
		MPI_Datatype basic = (MPI_Datatype)get8(&p);
		l.nblk = get8(&p);
		l.blks = p;
		p += 16 * l.nblk;
		int64_t dlen = get8(&p);
		const uint8_t *data = p;
		p += dlen;
		l.addr = (uint8_t *)w->base + disp * w->disp_unit;
		size_t bytes = (size_t)(l.count * l.size);
		if (!inside(w, &l))
			cmpi_die(1, "MPI one-sided operation from rank %d reaches outside rank %d's window (displacement %lld, %zu bytes, window of %ld)",
				 origin, w->rank, (long long)disp, bytes, (long)w->bytes);
		uint8_t *cur = NULL;
		if (kind != OP_PUT) {
			buf_reserve(reply, bytes);
			cur = reply->p + reply->len;
			move(&l, cur, 0); /* the target's data, before */
		}
		switch (kind) {
		case OP_PUT:
			move(&l, (uint8_t *)data, 1);
			break;
		case OP_GET:
			reply->len += bytes;
			break;
		case OP_ACC:
		case OP_GACC: {
			if (kind == OP_GACC)
				reply->len += bytes; /* the old contents go back */
			if (op == MPI_NO_OP || bytes == 0)
				break;
			uint8_t *acc = malloc(bytes);
			if (!acc)
				cmpi_die(1, "out of memory");
			memcpy(acc, cur, bytes);
			struct dtype *bd = dt_any(basic);
			op_apply(op, bd, (int)(bytes / (size_t)bd->size), data, acc);
			move(&l, acc, 1);
			free(acc);
			break;
		}
		case OP_CAS:
			reply->len += bytes;
			if (memcmp(cur, data, bytes) == 0) /* data: compare, then the origin's */
				move(&l, (uint8_t *)data + bytes, 1);
			break;
		}
	}
}

/* ---- epochs ---- */

static void wait_all(int n, MPI_Request *rq)
{
	for (int i = 0; i < n; i++)
		MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
}

/* exchange carries out the operations recorded for the targets in
 * targets[] (window ranks; NULL: every rank) and those the origins in
 * origins[] have for this one. Each origin first says how many bytes it
 * sends (nothing when the sizes are known: fences exchange them all at
 * once). */
static int exchange(struct win *w, int nt, const int *targets, int no, const int *origins, const int64_t *insize)
{
	int nreq = 0;
	MPI_Request *rq = malloc(sizeof *rq * (size_t)(2 * (nt + no) + 2));
	uint8_t **in = calloc((size_t)w->size, sizeof *in);
	int64_t *sizes = calloc((size_t)w->size, sizeof *sizes);
	if (!rq || !in || !sizes)
		cmpi_die(1, "out of memory");
	if (!insize) { /* post/start: each origin says its size first */
		for (int i = 0; i < no; i++)
			MPI_Irecv(&sizes[origins[i]], 1, MPI_INT64_T, origins[i], TAG_SIZE, w->comm, &rq[nreq++]);
		for (int i = 0; i < nt; i++)
			MPI_Isend(&w->out[targets[i]].len, 1, MPI_INT64_T, targets[i], TAG_SIZE, w->comm, &rq[nreq++]);
		wait_all(nreq, rq);
		nreq = 0;
	} else {
		memcpy(sizes, insize, sizeof *sizes * (size_t)w->size);
	}
	for (int i = 0; i < no; i++) {
		int o = origins[i];
		if (sizes[o] > 0) {
			if (!(in[o] = malloc((size_t)sizes[o])))
				cmpi_die(1, "out of memory");
			MPI_Irecv(in[o], (int)sizes[o], MPI_BYTE, o, TAG_OPS, w->comm, &rq[nreq++]);
		}
	}
	for (int i = 0; i < nt; i++) {
		int t = targets[i];
		if (w->out[t].len > 0)
			MPI_Isend(w->out[t].p, (int)w->out[t].len, MPI_BYTE, t, TAG_OPS, w->comm, &rq[nreq++]);
	}
	wait_all(nreq, rq);
	nreq = 0;
	/* in origin rank order: one origin's accumulates before the next's */
	struct buf *reply = calloc((size_t)w->size, sizeof *reply);
	if (!reply)
		cmpi_die(1, "out of memory");
	for (int o = 0; o < w->size; o++)
		if (in[o])
			apply(w, o, in[o], (size_t)sizes[o], &reply[o]);
	/* the replies: each origin knows what it waits for */
	size_t *expect = calloc((size_t)w->size, sizeof *expect);
	uint8_t **got = calloc((size_t)w->size, sizeof *got);
	if (!expect || !got)
		cmpi_die(1, "out of memory");
	for (int g = 0; g < w->ngets; g++)
		expect[w->gets[g].target] += w->gets[g].bytes;
	for (int t = 0; t < w->size; t++) {
		if (expect[t] > 0) {
			if (!(got[t] = malloc(expect[t])))
				cmpi_die(1, "out of memory");
			MPI_Irecv(got[t], (int)expect[t], MPI_BYTE, t, TAG_REPLY, w->comm, &rq[nreq++]);
		}
	}
	for (int o = 0; o < w->size; o++)
		if (reply[o].len > 0)
			MPI_Isend(reply[o].p, (int)reply[o].len, MPI_BYTE, o, TAG_REPLY, w->comm, &rq[nreq++]);
	wait_all(nreq, rq);
	size_t *at = calloc((size_t)w->size, sizeof *at);
	if (!at)
		cmpi_die(1, "out of memory");
	for (int g = 0; g < w->ngets; g++) {
		struct pget *pg = &w->gets[g];
		dt_unpack(got[pg->target] + at[pg->target], pg->count, pg->dt, pg->addr);
		at[pg->target] += pg->bytes;
		dt_unref(pg->dt);
	}
	w->ngets = 0;
	for (int i = 0; i < nt; i++)
		w->out[targets[i]].len = 0;
	for (int r = 0; r < w->size; r++) {
		free(in[r]);
		free(reply[r].p);
		free(got[r]);
	}
	free(in);
	free(reply);
	free(got);
	free(expect);
	free(at);
	free(sizes);
	free(rq);
	return MPI_SUCCESS;
}

int MPI_Win_fence(int assert, MPI_Win win)
{
	WINARG("MPI_Win_fence", win, w);
	if (w->epoch & (EP_ACCESS | EP_EXPOSURE))
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_fence", "a post/start epoch is open");
	int64_t *out = malloc(sizeof *out * (size_t)w->size), *in = malloc(sizeof *in * (size_t)w->size);
	int *all = malloc(sizeof *all * (size_t)w->size);
	if (!out || !in || !all)
		cmpi_die(1, "out of memory");
	for (int r = 0; r < w->size; r++) {
		out[r] = (int64_t)w->out[r].len;
		all[r] = r;
	}
	MPI_Alltoall(out, 1, MPI_INT64_T, in, 1, MPI_INT64_T, w->comm);
	int rc = exchange(w, w->size, all, w->size, all, in);
	free(out);
	free(in);
	free(all);
	w->epoch = assert & MPI_MODE_NOSUCCEED ? EP_NONE : EP_FENCE;
	return rc;
}

/* group_ranks translates group's members into window ranks (*n of them). */
static int *group_ranks(struct win *w, MPI_Group group, int *n)
{
	MPI_Group wg;
	MPI_Comm_group(w->comm, &wg);
	MPI_Group_size(group, n);
	int *from = malloc(sizeof *from * (size_t)(*n + 1)), *to = malloc(sizeof *to * (size_t)(*n + 1));
	if (!from || !to)
		cmpi_die(1, "out of memory");
	for (int i = 0; i < *n; i++)
		from[i] = i;
	MPI_Group_translate_ranks(group, *n, from, wg, to);
	MPI_Group_free(&wg);
	free(from);
	return to;
}

int MPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
	(void)assert;
	WINARG("MPI_Win_post", win, w);
	if (w->epoch & (EP_EXPOSURE | EP_FENCE))
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_post", "an exposure or fence epoch is open");
	w->post = group_ranks(w, group, &w->npost); /* now: the caller may free the group */
	w->epoch |= EP_EXPOSURE;
	return MPI_SUCCESS;
}

int MPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
	(void)assert;
	WINARG("MPI_Win_start", win, w);
	if (w->epoch & (EP_ACCESS | EP_FENCE))
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_start", "an access or fence epoch is open");
	w->start = group_ranks(w, group, &w->nstart);
	w->epoch |= EP_ACCESS;
	return MPI_SUCCESS;
}

int MPI_Win_complete(MPI_Win win)
{
	WINARG("MPI_Win_complete", win, w);
	if (!(w->epoch & EP_ACCESS))
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_complete", "no MPI_Win_start before it");
	int rc = exchange(w, w->nstart, w->start, 0, NULL, NULL);
	free(w->start);
	w->start = NULL;
	w->epoch &= ~EP_ACCESS;
	return rc;
}

int MPI_Win_wait(MPI_Win win)
{
	WINARG("MPI_Win_wait", win, w);
	if (!(w->epoch & EP_EXPOSURE))
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_wait", "no MPI_Win_post before it");
	int rc = exchange(w, 0, NULL, w->npost, w->post, NULL);
	free(w->post);
	w->post = NULL;
	w->epoch &= ~EP_EXPOSURE;
	return rc;
}

int MPI_Win_test(MPI_Win win, int *flag)
{
	WINARG("MPI_Win_test", win, w);
	if (!(w->epoch & EP_EXPOSURE))
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_test", "no MPI_Win_post before it");
	/* done once every origin has said what it sends */
	int ready = 1;
	for (int i = 0; i < w->npost && ready; i++) {
		int f = 0;
		MPI_Iprobe(w->post[i], TAG_SIZE, w->comm, &f, MPI_STATUS_IGNORE);
		ready = f;
	}
	*flag = ready;
	return ready ? MPI_Win_wait(win) : MPI_SUCCESS;
}

/* ---- passive target ---- */

#define PCTX(c) (2 + 2 * (c)->k)

/* svc_post posts the receive a window's commands arrive in. */
static void svc_post(struct win *w)
{
	struct comm *c = comm_get(w->comm);
	w->svc = p2p_irecv(c, MPI_ANY_SOURCE, TAG_PREQ, PCTX(c), w->svcbuf, PC_INLINE, dt_get(MPI_BYTE));
}

static int grantable(struct win *w, int64_t type)
{
	return w->excl < 0 && (type == MPI_LOCK_SHARED || w->nshared == 0);
}

/* carry_out grants p's lock if it asks for one, applies its operations,
 * answers it and gives the lock back if it says so. */
static void carry_out(struct win *w, struct pcmd *p)
{
	if (p->flags & PC_ACQUIRE) {
		w->holds[p->origin] = (int)p->type;
		if (p->type == MPI_LOCK_EXCLUSIVE)
			w->excl = p->origin;
		else
			w->nshared++;
	}
	struct buf reply = {0};
	if (p->len > 0)
		apply(w, p->origin, p->data, (size_t)p->len, &reply);
	struct comm *c = comm_get(w->comm);
	p2p_send_bytes(c, p->origin, TAG_PREPLY, PCTX(c), reply.p, reply.len);
	free(reply.p);
	if ((p->flags & PC_RELEASE) && w->holds[p->origin]) {
		if (w->holds[p->origin] == MPI_LOCK_EXCLUSIVE)
			w->excl = -1;
		else
			w->nshared--;
		w->holds[p->origin] = 0;
	}
}

/* serve takes in the commands that arrived and carries out those it can:
 * in arrival order, except that a command of a holder goes past a lock
 * request waiting for it; a lock request goes past no other. It returns
 * how many it took in or carried out. */
static int serve(struct win *w)
{
	int did = 0;
	struct comm *c = comm_get(w->comm);
	while (w->svc->complete) {
		struct req *r = w->svc;
		int64_t h[4];
		if (r->total < PC_HEADER || r->trunc)
			cmpi_die(1, "MPI one-sided: a malformed command (%llu bytes) from rank %d", (unsigned long long)r->total,
				 r->st.MPI_SOURCE);
		memcpy(h, w->svcbuf, sizeof h);
		struct pcmd *p = calloc(1, sizeof *p);
		if (!p)
			cmpi_die(1, "out of memory");
		p->origin = r->st.MPI_SOURCE;
		p->flags = h[0];
		p->type = h[1];
		p->len = h[2];
		if (p->len < 0 || p->len > INT32_MAX || (!(p->flags & PC_DATA) && (uint64_t)p->len != r->total - PC_HEADER) ||
		    ((p->flags & PC_ACQUIRE) && p->type != MPI_LOCK_SHARED && p->type != MPI_LOCK_EXCLUSIVE))
			cmpi_die(1, "MPI one-sided: a malformed command from rank %d", p->origin);
		if (p->len > 0 && !(p->data = malloc((size_t)p->len)))
			cmpi_die(1, "out of memory");
		if (p->flags & PC_DATA)
			p->dreq = p2p_irecv(c, p->origin, TAG_PDATA, PCTX(c), p->data, (int)p->len, dt_get(MPI_BYTE));
		else if (p->len > 0)
			memcpy(p->data, w->svcbuf + PC_HEADER, (size_t)p->len);
		if (w->pending_tail)
			w->pending_tail->next = p;
		else
			w->pending = p;
		w->pending_tail = p;
		req_free(r);
		svc_post(w);
		did++;
	}
	for (int again = 1; again;) {
		again = 0;
		int lock_waits = 0;
		struct pcmd *prev = NULL, *p = w->pending;
		while (p) {
			if (p->dreq && p->dreq->complete) {
				req_free(p->dreq);
				p->dreq = NULL;
			}
			int acquire = (p->flags & PC_ACQUIRE) != 0;
			if (p->dreq || (acquire && (lock_waits || !grantable(w, p->type)))) {
				lock_waits |= acquire;
				prev = p;
				p = p->next;
				continue;
			}
			carry_out(w, p);
			did++;
			again |= (p->flags & PC_RELEASE) != 0; /* a waiting request may be granted now */
			struct pcmd *next = p->next;
			if (prev)
				prev->next = next;
			else
				w->pending = next;
			if (w->pending_tail == p)
				w->pending_tail = prev;
			free(p->data);
			free(p);
			p = next;
		}
	}
	return did;
}

/* win_progress serves every window's passive-target commands (pump calls
 * it, outside the frames' handling: it sends) and says whether it did
 * anything: a message to the rank itself may have been delivered at
 * once, and then there is nothing to wait for. */
int win_progress(void)
{
	static int busy;
	if (busy || !live_wins)
		return 0;
	busy = 1;
	int did = 0;
	for (int i = 0; i < n_wins; i++)
		if (wins[i]->used && wins[i]->svc && !wins[i]->closing) /* svc: not while it is made */
			did += serve(wins[i]);
	busy = 0;
	return did;
}

/* take_gets unpacks target t's answer (data) into the Gets waiting for
 * it, in the order they were made, and forgets them. */
static void take_gets(struct win *w, int t, const uint8_t *data)
{
	int k = 0;
	for (int g = 0; g < w->ngets; g++) {
		struct pget *pg = &w->gets[g];
		if (pg->target != t) {
			w->gets[k++] = *pg;
			continue;
		}
		dt_unpack(data, pg->count, pg->dt, pg->addr);
		data += pg->bytes;
		dt_unref(pg->dt);
	}
	w->ngets = k;
}

/* sync_targets sends each of the n targets ts[] the operations recorded
 * for it, with a lock request where the lock is not granted yet and there
 * is something to do (or force: Win_lock on the origin itself), giving
 * the lock back with release; then waits for every answer and completes
 * the Gets. */
static int sync_targets(struct win *w, const int *ts, int n, int release, int force)
{
	struct comm *c = comm_get(w->comm);
	MPI_Request *rq = malloc(sizeof *rq * (size_t)(n + 1));
	uint8_t **got = calloc((size_t)n + 1, sizeof *got);
	if (!rq || !got)
		cmpi_die(1, "out of memory");
	for (int i = 0; i < n; i++) {
		int t = ts[i];
		struct buf *ops = &w->out[t];
		rq[i] = MPI_REQUEST_NULL;
		int64_t flags = 0;
		if (w->acquired[t] == 0 && (ops->len > 0 || force))
			flags |= PC_ACQUIRE;
		if (release && (w->acquired[t] == 1 || (flags & PC_ACQUIRE)))
			flags |= PC_RELEASE;
		if (ops->len == 0 && !flags) { /* nothing recorded, no lock held there */
			if (release)
				w->acquired[t] = 0;
			continue;
		}
		size_t expect = 0;
		for (int g = 0; g < w->ngets; g++)
			if (w->gets[g].target == t)
				expect += w->gets[g].bytes;
		if (!(got[i] = malloc(expect ? expect : 1)))
			cmpi_die(1, "out of memory");
		MPI_Irecv(got[i], (int)expect, MPI_BYTE, t, TAG_PREPLY, w->comm, &rq[i]);
		int64_t h[4] = {flags, w->locked[t], (int64_t)ops->len, 0};
		if (PC_HEADER + ops->len <= PC_INLINE) {
			buf_reserve(ops, PC_HEADER);
			memmove(ops->p + PC_HEADER, ops->p, ops->len);
			memcpy(ops->p, h, PC_HEADER);
			p2p_send_bytes(c, t, TAG_PREQ, PCTX(c), ops->p, PC_HEADER + ops->len);
		} else {
			h[0] |= PC_DATA;
			p2p_send_bytes(c, t, TAG_PREQ, PCTX(c), h, PC_HEADER);
			p2p_send_bytes(c, t, TAG_PDATA, PCTX(c), ops->p, ops->len);
		}
		ops->len = 0;
		if (release)
			w->acquired[t] = 0;
		else if (flags & PC_ACQUIRE)
			w->acquired[t] = 1;
	}
	wait_all(n, rq);
	for (int i = 0; i < n; i++)
		if (got[i])
			take_gets(w, ts[i], got[i]);
	for (int i = 0; i < n; i++)
		free(got[i]);
	free(got);
	free(rq);
	return MPI_SUCCESS;
}

static int lock_type_ok(int type) { return type == MPI_LOCK_SHARED || type == MPI_LOCK_EXCLUSIVE; }

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
	static const char fn[] = "MPI_Win_lock";
	WINARG(fn, win, w);
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (!lock_type_ok(lock_type))
		return werr(w, MPI_ERR_LOCKTYPE, fn, "lock type %d", lock_type);
	if (rank < 0 || rank >= w->size)
		return werr(w, MPI_ERR_RANK, fn, "rank %d of a window of %d", rank, w->size);
	if (w->locked[rank] || (w->epoch & EP_ACCESS))
		return werr(w, MPI_ERR_RMA_SYNC, fn, "rank %d: an access epoch is open there already", rank);
	w->locked[rank] = lock_type;
	w->acquired[rank] = assert & MPI_MODE_NOCHECK ? 2 : 0;
	if (rank == w->rank && !(assert & MPI_MODE_NOCHECK)) /* its own loads and stores: the lock now */
		return sync_targets(w, &rank, 1, 0, 1);
	return MPI_SUCCESS;
}

int MPI_Win_unlock(int rank, MPI_Win win)
{
	WINARG("MPI_Win_unlock", win, w);
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rank < 0 || rank >= w->size || !w->locked[rank] || w->lock_all)
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_unlock", "rank %d is not locked by MPI_Win_lock", rank);
	int rc = sync_targets(w, &rank, 1, 1, 0);
	w->locked[rank] = 0;
	return rc;
}

int MPI_Win_lock_all(int assert, MPI_Win win)
{
	WINARG("MPI_Win_lock_all", win, w);
	for (int t = 0; t < w->size; t++)
		if (w->locked[t])
			return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_lock_all", "rank %d is locked already", t);
	if (w->epoch & EP_ACCESS)
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_lock_all", "an access epoch is open");
	for (int t = 0; t < w->size; t++) {
		w->locked[t] = MPI_LOCK_SHARED;
		w->acquired[t] = assert & MPI_MODE_NOCHECK ? 2 : 0;
	}
	w->lock_all = 1;
	if (!(assert & MPI_MODE_NOCHECK))
		return sync_targets(w, &w->rank, 1, 0, 1);
	return MPI_SUCCESS;
}

/* locked_targets lists the targets this rank has an epoch at. */
static int *locked_targets(struct win *w, int *n)
{
	int *ts = malloc(sizeof *ts * (size_t)(w->size + 1));
	if (!ts)
		cmpi_die(1, "out of memory");
	*n = 0;
	for (int t = 0; t < w->size; t++)
		if (w->locked[t])
			ts[(*n)++] = t;
	return ts;
}

int MPI_Win_unlock_all(MPI_Win win)
{
	WINARG("MPI_Win_unlock_all", win, w);
	if (!w->lock_all)
		return werr(w, MPI_ERR_RMA_SYNC, "MPI_Win_unlock_all", "no MPI_Win_lock_all before it");
	int n, *ts = locked_targets(w, &n);
	int rc = sync_targets(w, ts, n, 1, 0);
	free(ts);
	memset(w->locked, 0, sizeof *w->locked * (size_t)w->size);
	w->lock_all = 0;
	return rc;
}

static int flush(const char *fn, int rank, MPI_Win win)
{
	WINARG(fn, win, w);
	if (rank == MPI_PROC_NULL)
		return MPI_SUCCESS;
	if (rank < 0 || rank >= w->size || !w->locked[rank])
		return werr(w, MPI_ERR_RMA_SYNC, fn, "rank %d is not locked", rank);
	return sync_targets(w, &rank, 1, 0, 0);
}

static int flush_all(const char *fn, MPI_Win win)
{
	WINARG(fn, win, w);
	int n, *ts = locked_targets(w, &n);
	int rc = sync_targets(w, ts, n, 0, 0);
	free(ts);
	return rc;
}

/* A flush completes the operations at the target too; the local ones are
 * the same calls (the origin's data was copied when recorded: only the
 * Gets wait, and they wait for their target). */
int MPI_Win_flush(int rank, MPI_Win win) { return flush("MPI_Win_flush", rank, win); }
int MPI_Win_flush_local(int rank, MPI_Win win) { return flush("MPI_Win_flush_local", rank, win); }
int MPI_Win_flush_all(MPI_Win win) { return flush_all("MPI_Win_flush_all", win); }
int MPI_Win_flush_local_all(MPI_Win win) { return flush_all("MPI_Win_flush_local_all", win); }

/* The window is the program's own memory (MPI_WIN_UNIFIED): only the
 * processor's view to make agree with the other ranks' on a shared-memory
 * window, a full memory barrier. */
int MPI_Win_sync(MPI_Win win)
{
	WINARG("MPI_Win_sync", win, w);
	(void)w;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return MPI_SUCCESS;
}

/* done_request returns a request complete at once (the request-based
 * calls'). */
static int done_request(MPI_Request *request)
{
	struct req *r = req_new(RQ_SEND);
	r->complete = 1;
	r->st.MPI_SOURCE = MPI_ANY_SOURCE;
	r->st.MPI_TAG = MPI_ANY_TAG;
	*request = r->handle;
	return MPI_SUCCESS;
}

/* passive_only: the request-based calls are for passive-target epochs. */
static int passive_only(const char *fn, MPI_Win win, int target)
{
	WINARG(fn, win, w);
	if (target != MPI_PROC_NULL && (target < 0 || target >= w->size || !w->locked[target]))
		return werr(w, MPI_ERR_RMA_SYNC, fn, "rank %d is not locked (a request-based call needs a passive-target epoch)", target);
	return MPI_SUCCESS;
}

int MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
	     MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
	int rc = passive_only("MPI_Rput", win, target_rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
			     target_datatype, win);
	return rc == MPI_SUCCESS ? done_request(request) : rc;
}

int MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
		    MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
		    MPI_Request *request)
{
	int rc = passive_only("MPI_Raccumulate", win, target_rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
				    target_datatype, op, win);
	return rc == MPI_SUCCESS ? done_request(request) : rc;
}

int MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
	     int target_count, MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request)
{
	int rc = passive_only("MPI_Rget", win, target_rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
			     target_datatype, win);
	if (rc == MPI_SUCCESS)
		rc = flush("MPI_Rget", target_rank, win);
	return rc == MPI_SUCCESS ? done_request(request) : rc;
}

int MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, void *result_addr,
			int result_count, MPI_Datatype result_datatype, int target_rank, MPI_Aint target_disp,
			int target_count, MPI_Datatype target_datatype, MPI_Op op, MPI_Win win, MPI_Request *request)
{
	int rc = passive_only("MPI_Rget_accumulate", win, target_rank);
	if (rc == MPI_SUCCESS)
		rc = MPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
					result_datatype, target_rank, target_disp, target_count, target_datatype, op, win);
	if (rc == MPI_SUCCESS)
		rc = flush("MPI_Rget_accumulate", target_rank, win);
	return rc == MPI_SUCCESS ? done_request(request) : rc;
}

/* ---- queries ---- */

int MPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
	WINARG("MPI_Win_get_group", win, w);
	return MPI_Comm_group(w->comm, group);
}

int MPI_Win_set_name(MPI_Win win, const char *win_name)
{
	WINARG("MPI_Win_set_name", win, w);
	snprintf(w->name, sizeof w->name, "%s", win_name);
	return MPI_SUCCESS;
}

int MPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
	WINARG("MPI_Win_get_name", win, w);
	strcpy(win_name, w->name);
	*resultlen = (int)strlen(w->name);
	return MPI_SUCCESS;
}

int MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
	WINARG("MPI_Win_get_attr", win, w);
	*flag = 1;
	w->attr_size = w->bytes;
	w->attr_disp_unit = w->disp_unit;
	w->attr_flavor = w->flavor;
	w->attr_model = MPI_WIN_UNIFIED; /* the window is the program's own memory */
	switch (win_keyval) {
	case MPI_WIN_BASE: *(void **)attribute_val = w->base; break;
	case MPI_WIN_SIZE: *(MPI_Aint **)attribute_val = &w->attr_size; break;
	case MPI_WIN_DISP_UNIT: *(int **)attribute_val = &w->attr_disp_unit; break;
	case MPI_WIN_CREATE_FLAVOR: *(int **)attribute_val = &w->attr_flavor; break;
	case MPI_WIN_MODEL: *(int **)attribute_val = &w->attr_model; break;
	default: *flag = 0;
	}
	return MPI_SUCCESS;
}

int MPI_Win_create_errhandler(MPI_Win_errhandler_function *win_errhandler_fn, MPI_Errhandler *errhandler)
{
	return MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)(void *)win_errhandler_fn, errhandler);
}

int MPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
	WINARG("MPI_Win_set_errhandler", win, w);
	w->eh = errhandler;
	return MPI_SUCCESS;
}

int MPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
	WINARG("MPI_Win_get_errhandler", win, w);
	*errhandler = w->eh;
	return MPI_SUCCESS;
}

int MPI_Win_call_errhandler(MPI_Win win, int errorcode)
{
	WINARG("MPI_Win_call_errhandler", win, w);
	werr(w, errorcode, "MPI_Win_call_errhandler", "error code %d", errorcode);
	return MPI_SUCCESS;
}

/* MPII_Win_get_attr is MPI_Win_get_attr for MPICH's Fortran bindings
 * (attr.c's MPII_Comm_get_attr): a Fortran caller (type not 0) names the
 * keyvals C's + 1 and gets each value itself, an integer. */
int MPII_Win_get_attr(MPI_Win win, int keyval, void *attribute_val, int *flag, int type)
{
	if (type == 0)
		return MPI_Win_get_attr(win, keyval, attribute_val, flag);
	if ((keyval & 1) == 0)
		keyval--;
	void *p = NULL;
	int rc = MPI_Win_get_attr(win, keyval, &p, flag);
	if (rc != MPI_SUCCESS || !*flag)
		return rc;
	switch (keyval) {
	case MPI_WIN_BASE: *(void **)attribute_val = p; break;
	case MPI_WIN_SIZE: *(void **)attribute_val = (void *)*(MPI_Aint *)p; break;
	default: *(void **)attribute_val = (void *)(MPI_Aint) * (int *)p; break;
	}
	return MPI_SUCCESS;
}
