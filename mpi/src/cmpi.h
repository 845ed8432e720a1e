/* cosched's MPI library: internal declarations.
 *
 * The library is compiled against MPICH's own mpi.h, so every function it
 * defines is checked by the compiler against the prototype programs were
 * compiled with, and the handles, constants and MPI_Status layout are
 * MPICH's by construction. Everything here is internal (the version script
 * exports only MPI_*, PMPI_* and the few MPIR_* names mpi.h refers to).
 *
 * One thread (MPI_THREAD_SERIALIZED at most): no locks, no helper thread.
 * Progress happens inside MPI calls: pump() reads what the relay sent and
 * completes requests. */
#ifndef CMPI_H
#define CMPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- wire (wire.c, msgpack.c) ---- */

enum {
	FR_HELLO = 1, FR_WELCOME = 2, FR_SEND = 3, FR_POST = 4, FR_WAIT = 5,
	FR_DELIVER = 6, FR_ARRIVE = 7, FR_RELEASE = 8, FR_STATS = 9,
	FR_FINALIZE = 10, FR_BYE = 11, FR_FATAL = 12, FR_UNWAIT = 13,
	FR_PROBE = 14, FR_PROBED = 15, FR_COLL = 16, FR_ABORT = 18,
	FR_ACKED = 19, FR_RESEND = 20, /* protocol 3 (resume.c) */
	FR_REVOKE = 21, FR_DRAINED = 22, /* channels taken back (chan.c) */
	FR_BROKEN = 23,                  /* a channel's connection broke (chan.c) */
	FR_CANCEL = 24, FR_CANCELLED = 25, /* protocol 4: MPI_Cancel of a posted receive */
};

#define CMPI_MAX_MESSAGE (4 << 20)              /* comm.MaxMessage */
#define CMPI_MAX_FRAME (CMPI_MAX_MESSAGE + 1024) /* comm.MaxFrame */

/* Library contexts (MPI-WIRE.md): communicator k uses 2+2k (point to
 * point) and 3+2k (collectives); k = 0 is the library's own: 2 carries the
 * fragments after a large message's first, 3 the synchronous sends' acks. */
#define CTX_FRAG 2
#define CTX_ACK 3
#define CTX_LIMIT (1 << 30)

/* Payload header, at the start of every message's x. */
#define PH_SYNC 1 /* the sender waits for an ack (tag msgid, CTX_ACK) */
#define PH_FRAG 2 /* total length follows; the rest comes on CTX_FRAG, tag msgid */
#define PH_MAX 13

struct phdr {
	unsigned flags;
	uint32_t msgid;
	uint64_t total; /* payload bytes over all fragments (PH_FRAG), else this one's */
};

/* A decoded frame from the relay. Pointers point into the frame. */
struct inframe {
	int type;
	uint64_t r;
	int64_t s, t, n, v;
	int f;
	const uint8_t *x;
	size_t xlen;
	const char *str; /* Welcome mode, Fatal e */
	size_t strlen;
	uint64_t q;         /* Deliver's message number (0: unnumbered) */
	const uint8_t *arr; /* Acked q, Resend d: narr checked integers */
	size_t arrlen;
	uint32_t narr;
};

struct buf {
	uint8_t *p;
	size_t len, cap;
};

void buf_reserve(struct buf *b, size_t more);
void mp_map(struct buf *b, uint32_t n);
void mp_array(struct buf *b, uint32_t n);
void mp_str(struct buf *b, const char *s);
void mp_strn(struct buf *b, const char *s, size_t n);
void mp_int(struct buf *b, int64_t v);
void mp_uint(struct buf *b, uint64_t v);
void mp_bool(struct buf *b, int v);
void mp_bin_header(struct buf *b, uint32_t n);

/* Pure decoders (fuzzed): each returns 0 or -1 on malformed input. */
ssize_t cmpi_frame_split(const uint8_t *p, size_t n, int *type, const uint8_t **body, size_t *bodylen);
int cmpi_decode(int type, const uint8_t *body, size_t n, struct inframe *out);
int cmpi_phdr_parse(const uint8_t *x, size_t n, struct phdr *h);
size_t cmpi_phdr_put(uint8_t *p, const struct phdr *h);
uint64_t cmpi_uint_next(const uint8_t **p, size_t *n);
int cmpi_parse_duration_ms(const char *s, int64_t *ms);

/* ---- objects ---- */

struct blk {
	MPI_Aint off;
	MPI_Aint len;
};

struct attrs; /* attr.c */

struct dtype {
	int used, released, refs, committed, predefined;
	struct attrs *attrs;
	MPI_Datatype handle;
	MPI_Aint lb, ub, true_lb, true_ub;
	MPI_Aint size;
	int nblk;
	struct blk *blk;
	MPI_Datatype basic; /* every element is of this predefined type, else 0 */
	int contig;         /* one block, size == extent, lb == 0 */
};

struct group {
	int used;
	int size, rank; /* rank: mine or MPI_UNDEFINED */
	int *w;         /* group rank → world rank */
};

/* A communicator's topology (topo.c): kind is MPI_CART, MPI_GRAPH or
 * MPI_DIST_GRAPH. */
struct topo {
	int kind;
	int ndims, *dims, *periods;       /* Cartesian */
	int nnodes, nedges, *index, *edges; /* graph, as MPI_Graph_create took them */
	int indeg, outdeg, weighted;      /* distributed graph */
	int *in, *inw, *out, *outw;
};

struct comm {
	int used;
	MPI_Comm handle;
	int k;
	int size, rank;
	int *w;   /* comm rank → world rank */
	int *w2c; /* world rank → comm rank or -1 */
	uint64_t coll_seq;
	MPI_Errhandler eh;
	char name[MPI_MAX_OBJECT_NAME];
	struct topo *topo; /* NULL: none */
	struct attrs *attrs;
};

struct op {
	int used, commute;
	int holds, released; /* pending non-blocking reductions using it; MPI_Op_free called */
	MPI_User_function *fn;
};

enum rqkind { RQ_SEND, RQ_RECV, RQ_SSEND, RQ_NBC };

struct req {
	int used, kind, complete, released, persistent_null;
	MPI_Request handle;
	MPI_Status st;
	struct comm *comm;
	/* receive */
	void *buf;
	int count;
	struct dtype *dt;
	int ctx, src, tag; /* world src or -1 */
	MPI_Aint cap;      /* count * dt->size */
	uint8_t *stage;    /* packed bytes when dt is not contiguous */
	uint64_t total, got;
	int outstanding; /* posts not yet delivered */
	int trunc;
	int err;
	/* persistent (Send_init, Recv_init): the arguments, and the request
	 * of the current Start (inner, whose parent this is) */
	int persistent, active, psync;
	const void *pbuf;
	int pcount, ppeer, ptag;
	struct dtype *pdt;
	struct req *inner, *parent;
	/* non-blocking collectives (nbc.c): a receive's collective, and a
	 * collective's state */
	struct req *nbc;
	struct nbc *nbcst;
};

struct errh {
	int used;
	MPI_Comm_errhandler_function *fn;
};

/* ---- state (state.c) ---- */

struct stash; /* probed messages, taken by the next matching receive */

struct cmpi {
	int inited, finalized;
	int fd;
	int64_t job;
	int rank, size;
	int relay_v;
	char mode[16];
	int coll_direct; /* one-round collectives (bcs, or COSCHED_MPI_COLL=direct): coll.c */
	struct buf in;
	size_t in_off;
	struct buf out;
	struct buf pend; /* frames not written yet (conn.c) */
	int cork;        /* >0: frames wait in pend for conn_flush or pump */
	uint32_t msgid;
	int next_k;
	uint64_t barrier_seq, released;
	int bye;
	int blocking; /* a Wait was sent for the current blocking call */
	void *bsend_buf;
	int bsend_size;
	struct stash *stash_head, *stash_tail;
	double t0;
	/* Resumed connections (protocol 3, resume.c): with a grace
	 * (COSCHED_RELAY_GRACE) and a relay of protocol 3 the rank numbers
	 * its messages and keeps each until it is acknowledged; when the
	 * connection breaks it dials the relay again for up to grace_ms. */
	int64_t grace_ms;   /* 0: no resuming (the old behaviour) */
	int numbered;       /* messages carry numbers (Send q) */
	int broken;         /* the connection failed: writes are dropped until conn_recover */
	int in_parse;       /* handling frames: conn_recover waits for the top */
	int finalizing;     /* Finalize was written: a resumed connection says it again */
	struct buf lost;    /* Coll frames a failed write lost, said again on resume */
	uint64_t kept_bytes, kept_msgs, kept_peak; /* unacknowledged messages held */
	uint64_t resumes;   /* connections resumed */
};

extern struct cmpi G;

/* handles */
/* TABLE(T, name) is a table of T (which has a used field), grown on
 * demand: an object stays where it is (name[i]), and slot_name() returns
 * the index of a free one, as its last user left it, or of a new one,
 * zeroed. */
#define TABLE(T, name)                                                                             \
	static T **name;                                                                           \
	static int n_##name, cap_##name;                                                           \
	static int slot_##name(void)                                                               \
	{                                                                                          \
		for (int i = 0; i < n_##name; i++)                                                 \
			if (!name[i]->used)                                                        \
				return i;                                                          \
		if (n_##name == cap_##name) {                                                      \
			cap_##name = cap_##name ? 2 * cap_##name : 16;                             \
			name = realloc(name, cap_##name * sizeof *name);                           \
			if (!name)                                                                 \
				cmpi_die(1, "out of memory");                                      \
		}                                                                                  \
		name[n_##name] = calloc(1, sizeof(T));                                             \
		if (!name[n_##name])                                                               \
			cmpi_die(1, "out of memory");                                              \
		return n_##name++;                                                                 \
	}

struct comm *comm_get(MPI_Comm h);
struct comm *comm_new(int size, const int *w);
void comm_release(struct comm *c);
struct group *group_get(MPI_Group h);
MPI_Group group_new(int size, const int *w);
struct dtype *dt_get(MPI_Datatype h);  /* committed or predefined, live */
struct dtype *dt_any(MPI_Datatype h);  /* live, committed or not */
void dt_ref(struct dtype *d);
void dt_unref(struct dtype *d);
struct op *op_get(MPI_Op h);
struct req *req_new(int kind);
struct req *req_get(MPI_Request h);
void req_free(struct req *r);
struct errh *errh_get(MPI_Errhandler h);

/* collectives (coll.c, nbc.c) */
int coll_begin(struct comm *c, const char *kind, int root, int64_t bytes);
void coll_reduce_local(const uint8_t *all, int k, size_t n, uint8_t *out, int count, struct dtype *d, MPI_Op op);
void nbc_kid_done(struct req *kid);
void nbc_free(struct req *r);

/* attributes (attr.c) */
int comm_attrs_copy(struct comm *from, struct comm *to);
int comm_attrs_clear(struct comm *c);
int type_attrs_copy(struct dtype *from, struct dtype *to);
int type_attrs_clear(struct dtype *d);
int *predefined_attr(int keyval);

/* communicators (comm.c) */
int comm_dup(struct comm *c, int copy_attrs, MPI_Comm *newcomm);
int host_hash(void); /* this rank's host, as MPI_COMM_TYPE_SHARED tells them apart */

/* topologies (topo.c) */
void topo_free(struct topo *t);
struct topo *topo_dup(const struct topo *t);
int topo_neighbors(struct comm *c, int *nin, int **in, int *nout, int **out, int **recv_order);

/* errors (err.c) */
int cmpi_err(struct comm *c, int cls, const char *fn, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void cmpi_die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
int cmpi_obj_err(MPI_Errhandler eh, void *handle, int cls, const char *fn, const char *detail);
void cmpi_unsupported(const char *name) __attribute__((noreturn));
void cmpi_need_init(const char *fn);

/* transport (conn.c) */
int conn_open(void);
void conn_write(int type, struct buf *b);
void conn_writev2(int type, const uint8_t *head, size_t hlen, const void *tail, size_t tlen);
void conn_flush(void);
void pump(int block);
int win_progress(void); /* passive-target commands served (win.c) */
uint64_t post(int kind, struct req *r, int src, int tag, int ctx, MPI_Aint off);
void post_cancel_for(struct req *r);
int post_take_back(struct req *r);
void send_frame_wait(struct req **rs, int n);
void send_frame_unwait(struct req **rs, int n);
void send_coll(struct comm *c, const char *kind, int root, int64_t bytes);
void send_abort(int code, const char *msg);
void conn_recover(void);

/* protocol 3 (resume.c) */
void resume_init(void);
uint64_t sent_keep(int dst, int tag, int ctx, const uint8_t *hdr, size_t hl, const void *data, size_t dl);
void sent_ack(int dst, uint64_t seq);
void sent_resend(struct buf *b, int dst); /* appends Send frames (dst -1: every destination) */
int got_record(int src, uint64_t seq);   /* 0: delivered before */
void got_hello(struct buf *b);           /* Hello's got: the array */
void frame_append(struct buf *b, int type, const uint8_t *body, size_t n, const void *tail, size_t tn);

int slot_pending(uint64_t id);
void deliver_slot(uint64_t id, int wsrc, int tag, const uint8_t *x, size_t n, int keep);

/* channels to same-node peers (chan.c) */
#define CHAN_MAX_FDS 250 /* below the kernel's SCM_MAX_FD */
void chan_setup(const int *fds, int nfds, const uint8_t *ranks, size_t rlen, int64_t slot);
int chan_active(void);
int chan_is_peer(int wrank);
int chan_local(int wrank);
int chan_all(void);
void chan_send(int wdst, int tag, int ctx, const uint8_t *hdr, size_t hl, const void *data, size_t dl);
int chan_post(uint64_t id, int src, int tag, int ctx);
unsigned chan_step(void);
void chan_wait(void);
void chan_drain(void);
void chan_close(void);
int chan_counter_fd(void);
int chan_sends(int wrank);
void chan_revoke(void);
void chan_broken(int wrank, uint64_t read, int reply);
void chan_resay(void);
int chan_hello_keys(void);
void chan_hello(struct buf *b);
void relay_send(int wdst, int tag, int ctx, const uint8_t *x, size_t n);
void post_relay(uint64_t id, int src, int tag, int ctx);
int stash_deliver(uint64_t id, int wsrc, int tag, int ctx);
int stash_has(int ctx, int wsrc, int tag);
int stash_swap(struct req *r, int wsrc, int tag, const uint8_t *x, size_t n);
int probe_relay_chan(int src, int tag, int ctx, int *wsrc, int *wtag);

/* post kinds */
enum { P_NONE, P_RECV, P_FRAG, P_ACK, P_PROBE, P_STASH, P_DEAD };
int probe_relay(int src, int tag, int ctx, int block, int *wsrc, int *wtag);

/* point to point (p2p.c) */
int p2p_send(struct comm *c, int dst, int tag, int ctx, const void *buf, int count, struct dtype *dt, int sync, struct req **out);
int p2p_send_bytes(struct comm *c, int dst, int tag, int ctx, const void *p, size_t n);
struct req *p2p_irecv(struct comm *c, int src, int tag, int ctx, void *buf, int count, struct dtype *dt);
void wait_reqs(struct req **rs, int n, int any);
void req_fill_status(struct req *r, MPI_Status *st);
void req_done(struct req *r);
void deliver_first(struct req *r, int wsrc, int tag, const uint8_t *x, size_t n);
void deliver_frag(struct req *r, MPI_Aint off, const uint8_t *x, size_t n);
void deliver_probed(uint64_t req, int found, int src, int tag);
void stash_add(int ctx, int wsrc, int tag, const uint8_t *x, size_t n);

/* datatypes (type.c) */
void dt_pack(const void *in, int count, struct dtype *d, uint8_t *out);
void dt_unpack(const uint8_t *in, int count, struct dtype *d, void *out);
void dt_init_predefined(void);
int dt_valid_count(int count);

/* reductions (op.c) */
int op_apply(MPI_Op op, struct dtype *d, int count, const uint8_t *in, uint8_t *inout);
int op_check(MPI_Op op, struct dtype *d);
void op_hold(MPI_Op op);    /* a pending operation uses op: MPI_Op_free leaves it */
void op_release(MPI_Op op); /* … no longer */

/* collectives helpers (coll.c) */
void coll_init(void);
int coll_barrier(struct comm *c);
int coll_allgather_ints(struct comm *c, const int *mine, int n, int *all);

void group_release(MPI_Group h);
MPI_Op op_new(MPI_User_function *fn, int commute);
MPI_Errhandler errh_new(MPI_Comm_errhandler_function *fn);
int errh_valid(MPI_Errhandler h);

/* misc */
double cmpi_now(void);

#define NEED_INIT(fn)                                                                              \
	do {                                                                                           \
		if (!G.inited || G.finalized)                                                          \
			cmpi_need_init(fn);                                                            \
	} while (0)

/* Argument checks shared by the calls: each declares its variable or
 * returns the call's error. */
#define COMMARG(fn, h, c)                                                                          \
	NEED_INIT(fn);                                                                             \
	struct comm *c = comm_get(h);                                                              \
	if (!c)                                                                                    \
		return cmpi_err(NULL, MPI_ERR_COMM, fn, "communicator %#x", (unsigned)(h));

#define TYPEARG(fn, c, h, d, count)                                                                \
	struct dtype *d = dt_get(h);                                                               \
	if (!d)                                                                                    \
		return cmpi_err(c, MPI_ERR_TYPE, fn, "datatype %#x", (unsigned)(h));               \
	if ((count) < 0)                                                                           \
		return cmpi_err(c, MPI_ERR_COUNT, fn, "count %d", (int)(count));

#define ROOTARG(fn, c, root)                                                                       \
	if ((root) < 0 || (root) >= (c)->size)                                                     \
		return cmpi_err(c, MPI_ERR_ROOT, fn, "root %d of a communicator of %d", root, (c)->size);

#define ST_IGNORED(st) ((st) == MPI_STATUS_IGNORE || (st) == NULL)

#endif
