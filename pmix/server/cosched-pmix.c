/*
 * cosched-pmix: one job's PMIx server on one node, built on OpenPMIx's
 * server library (the wire protocol, the shared-memory data store and the
 * client handshake are the library's). The agent starts one per job and
 * node, before the job's ranks, and talks to it over stdin/stdout with
 * frames (docs/mpi.md, package pmix):
 *
 *   frame = type (1 byte) | length (4 bytes, big-endian) | payload
 *
 * helper -> agent
 *   'E' rank (u32) | NUL-terminated env strings   a rank's environment (setup_fork)
 *   'R'                                           every local rank registered: ranks may start
 *   'F' data                                      the node's part of a fence (its ranks' blobs)
 *   'A' rank (u32) | status (i32) | message       a rank called PMIx_Abort
 *   'C' rank (u32)                                a rank connected (PMIx_Init)
 *   'X' rank (u32)                                a rank finalized (PMIx_Finalize)
 *   'L' text                                      a fatal error; the helper exits next
 * agent -> helper
 *   'D' status (i32) | data                       the fence's end: every node's part, concatenated
 *   'P'                                           a ping, answered with 'P' after every frame before
 *   end of file                                   the job is over: finalize and exit
 *
 * Usage: cosched-pmix NSPACE TMPDIR UID GID NODE NODE-OF-RANK-0 NODE-OF-RANK-1 ...
 *
 * The helper is a separate process so that a crash in C (the library, or
 * a hostile client driving it) ends this job only, never the agent.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

/* The fence the agent is gathering (one at a time: every fence cosched
 * serves spans the whole job, so every local rank is in it). */
static pthread_mutex_t fence_mu = PTHREAD_MUTEX_INITIALIZER;
static pmix_modex_cbfunc_t fence_cb;
static void *fence_cbdata;

static char nspace[PMIX_MAX_NSLEN + 1];

static void write_all(const void *p, size_t n)
{
	const char *b = p;
	while (n > 0) {
		ssize_t w = write(1, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(3); /* the agent is gone */
		b += w;
		n -= (size_t)w;
	}
}

static void send_frame(char type, const void *a, size_t na, const void *b, size_t nb)
{
	uint32_t n = (uint32_t)(na + nb);
	unsigned char h[5] = {(unsigned char)type, n >> 24, n >> 16, n >> 8, n};
	pthread_mutex_lock(&out_mu);
	write_all(h, sizeof h);
	if (na)
		write_all(a, na);
	if (nb)
		write_all(b, nb);
	pthread_mutex_unlock(&out_mu);
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void send_rank(char type, uint32_t rank)
{
	unsigned char b[4];
	put32(b, rank);
	send_frame(type, b, 4, NULL, 0);
}

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "cosched-pmix: %s\n", msg);
	send_frame('L', msg, strlen(msg), NULL, 0);
	_exit(1);
}

static pmix_status_t client_connected(const pmix_proc_t *proc, void *server_object, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	send_rank('C', proc->rank);
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

static pmix_status_t client_finalized(const pmix_proc_t *proc, void *server_object, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	send_rank('X', proc->rank);
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

static pmix_status_t abort_fn(const pmix_proc_t *proc, void *server_object, int status, const char msg[],
			      pmix_proc_t procs[], size_t nprocs, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	unsigned char b[8];
	put32(b, proc->rank);
	put32(b + 4, (uint32_t)status);
	send_frame('A', b, 8, msg, msg ? strnlen(msg, 4096) : 0);
	/* The agent kills the job's ranks; the caller returns meanwhile. */
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, cbdata);
	return PMIX_SUCCESS;
}

static pmix_status_t fence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo,
			      char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	/* Only fences of the whole job: the agents gather one part per node. */
	if (nprocs != 1 || strcmp(procs[0].nspace, nspace) != 0 || procs[0].rank != PMIX_RANK_WILDCARD) {
		fprintf(stderr, "cosched-pmix: a fence over %zu processes, not the whole job: not served\n", nprocs);
		return PMIX_ERR_NOT_SUPPORTED;
	}
	pthread_mutex_lock(&fence_mu);
	if (fence_cb != NULL) {
		pthread_mutex_unlock(&fence_mu);
		return PMIX_ERR_BAD_PARAM;
	}
	fence_cb = cbfunc;
	fence_cbdata = cbdata;
	pthread_mutex_unlock(&fence_mu);
	send_frame('F', data, ndata, NULL, 0);
	return PMIX_SUCCESS;
}

static pmix_status_t direct_modex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
				  pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	/* Every fence collects the job's data: there is none to fetch. */
	return PMIX_ERR_NOT_SUPPORTED;
}

static pmix_server_module_t module = {
	.client_connected = client_connected,
	.client_finalized = client_finalized,
	.abort = abort_fn,
	.fence_nb = fence_nb,
	.direct_modex = direct_modex,
};

static void release_data(void *p) { free(p); }

static void registered(pmix_status_t status, void *cbdata)
{
	volatile int *done = cbdata;
	*done = status == PMIX_SUCCESS ? 1 : -1;
}

static void wait_registered(volatile int *done, const char *what)
{
	for (int i = 0; *done == 0; i++) {
		if (i > 20000)
			die("%s: no answer from the PMIx library in 20 s", what);
		usleep(1000);
	}
	if (*done < 0)
		die("%s failed", what);
}

static int read_full(void *p, size_t n)
{
	char *b = p;
	while (n > 0) {
		ssize_t r = read(0, b, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		b += r;
		n -= (size_t)r;
	}
	return 0;
}

/* the job's attributes: one per rank (PMIX_PROC_DATA) and a few more */
static pmix_info_t *infos;
static size_t ninfos, maxinfos;

static pmix_info_t *next_info(void)
{
	if (ninfos == maxinfos)
		die("too many job attributes");
	return &infos[ninfos++];
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr, "usage: cosched-pmix NSPACE TMPDIR UID GID NODE NODE-OF-RANK-0 ...\n");
		return 2;
	}
	/* An agent at a real-time policy passes it on to its children: the
	 * library's threads, born from this one, must not run at it. */
	struct sched_param sp = {0};
	sched_setscheduler(0, SCHED_OTHER, &sp);
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* the agent's death ends the job's server */
	snprintf(nspace, sizeof nspace, "%s", argv[1]);
	const char *tmpdir = argv[2];
	uid_t uid = (uid_t)strtoul(argv[3], NULL, 10);
	gid_t gid = (gid_t)strtoul(argv[4], NULL, 10);
	const char *me = argv[5];
	char **rank_node = argv + 6;
	uint32_t size = (uint32_t)(argc - 6);

	/* nodes in order of first appearance; each rank's node id, local rank */
	char **nodes = calloc(size, sizeof *nodes);
	uint32_t *nodeid = calloc(size, sizeof *nodeid), *lrank = calloc(size, sizeof *lrank), *nper = NULL;
	uint32_t nnodes = 0, myid = UINT32_MAX;
	for (uint32_t r = 0; r < size; r++) {
		uint32_t n = 0;
		while (n < nnodes && strcmp(nodes[n], rank_node[r]) != 0)
			n++;
		if (n == nnodes)
			nodes[nnodes++] = rank_node[r];
		nodeid[r] = n;
		if (strcmp(rank_node[r], me) == 0)
			myid = n;
	}
	if (myid == UINT32_MAX)
		die("node %s hosts no rank of job %s", me, nspace);
	nper = calloc(nnodes, sizeof *nper);
	for (uint32_t r = 0; r < size; r++)
		lrank[r] = nper[nodeid[r]]++;
	uint32_t nlocal = nper[myid];

	/* strings: node list, ranks per node, local peers */
	size_t cap = 64 + (size_t)size * 16;
	for (uint32_t n = 0; n < nnodes; n++)
		cap += strlen(nodes[n]) + 1;
	char *nodelist = calloc(1, cap), *procmap = calloc(1, cap), *peers = calloc(1, cap);
	for (uint32_t n = 0; n < nnodes; n++) {
		if (n)
			strcat(nodelist, ",");
		strcat(nodelist, nodes[n]);
		if (n)
			strcat(procmap, ";");
		int first = 1;
		for (uint32_t r = 0; r < size; r++) {
			if (nodeid[r] != n)
				continue;
			sprintf(procmap + strlen(procmap), first ? "%u" : ",%u", r);
			if (n == myid)
				sprintf(peers + strlen(peers), first ? "%u" : ",%u", r);
			first = 0;
		}
	}
	pmix_rank_t leader = PMIX_RANK_UNDEF;
	for (uint32_t r = 0; r < size && leader == PMIX_RANK_UNDEF; r++)
		if (nodeid[r] == myid)
			leader = r;

	maxinfos = (size_t)size + 32;
	infos = calloc(maxinfos, sizeof *infos);
	pmix_info_t init[3];
	PMIX_INFO_LOAD(&init[0], PMIX_SERVER_TMPDIR, tmpdir, PMIX_STRING);
	PMIX_INFO_LOAD(&init[1], PMIX_SYSTEM_TMPDIR, tmpdir, PMIX_STRING);
	PMIX_INFO_LOAD(&init[2], PMIX_HOSTNAME, me, PMIX_STRING);
	pmix_status_t rc = PMIx_server_init(&module, init, 3);
	if (rc != PMIX_SUCCESS)
		die("PMIx_server_init: %s", PMIx_Error_string(rc));

	uint32_t u;
	u = size;
	PMIX_INFO_LOAD(next_info(), PMIX_UNIV_SIZE, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(next_info(), PMIX_JOB_SIZE, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(next_info(), PMIX_MAX_PROCS, &u, PMIX_UINT32);
	u = nlocal;
	PMIX_INFO_LOAD(next_info(), PMIX_LOCAL_SIZE, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(next_info(), PMIX_NODE_SIZE, &u, PMIX_UINT32);
	u = nnodes;
	PMIX_INFO_LOAD(next_info(), PMIX_NUM_NODES, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(next_info(), PMIX_JOBID, nspace, PMIX_STRING);
	u = myid;
	PMIX_INFO_LOAD(next_info(), PMIX_NODEID, &u, PMIX_UINT32);
	u = 0;
	PMIX_INFO_LOAD(next_info(), PMIX_APPNUM, &u, PMIX_UINT32);
	PMIX_INFO_LOAD(next_info(), PMIX_NODE_MAP_RAW, nodelist, PMIX_STRING);
	PMIX_INFO_LOAD(next_info(), PMIX_PROC_MAP_RAW, procmap, PMIX_STRING);
	char *regex = NULL, *ppn = NULL;
	if (PMIx_generate_regex(nodelist, &regex) == PMIX_SUCCESS && PMIx_generate_ppn(procmap, &ppn) == PMIX_SUCCESS) {
		PMIX_INFO_LOAD(next_info(), PMIX_NODE_MAP, regex, PMIX_STRING);
		PMIX_INFO_LOAD(next_info(), PMIX_PROC_MAP, ppn, PMIX_STRING);
	}
	PMIX_INFO_LOAD(next_info(), PMIX_LOCAL_PEERS, peers, PMIX_STRING);
	PMIX_INFO_LOAD(next_info(), PMIX_LOCALLDR, &leader, PMIX_PROC_RANK);
	PMIX_INFO_LOAD(next_info(), PMIX_TMPDIR, tmpdir, PMIX_STRING);
	PMIX_INFO_LOAD(next_info(), PMIX_NSDIR, tmpdir, PMIX_STRING);

	/* per-rank data, for every rank of the job */
	for (uint32_t r = 0; r < size; r++) {
		pmix_data_array_t *da;
		PMIX_DATA_ARRAY_CREATE(da, 9, PMIX_INFO);
		pmix_info_t *pi = da->array;
		pmix_rank_t pr = r, zero = 0;
		uint32_t app = 0, nid = nodeid[r];
		uint16_t lr = (uint16_t)lrank[r];
		PMIX_INFO_LOAD(&pi[0], PMIX_RANK, &pr, PMIX_PROC_RANK);
		PMIX_INFO_LOAD(&pi[1], PMIX_APPNUM, &app, PMIX_UINT32);
		PMIX_INFO_LOAD(&pi[2], PMIX_APPLDR, &zero, PMIX_PROC_RANK);
		PMIX_INFO_LOAD(&pi[3], PMIX_GLOBAL_RANK, &pr, PMIX_PROC_RANK);
		PMIX_INFO_LOAD(&pi[4], PMIX_APP_RANK, &pr, PMIX_PROC_RANK);
		PMIX_INFO_LOAD(&pi[5], PMIX_LOCAL_RANK, &lr, PMIX_UINT16);
		PMIX_INFO_LOAD(&pi[6], PMIX_NODE_RANK, &lr, PMIX_UINT16);
		PMIX_INFO_LOAD(&pi[7], PMIX_NODEID, &nid, PMIX_UINT32);
		PMIX_INFO_LOAD(&pi[8], PMIX_HOSTNAME, rank_node[r], PMIX_STRING);
		PMIX_INFO_LOAD(next_info(), PMIX_PROC_DATA, da, PMIX_DATA_ARRAY);
	}

	volatile int done = 0;
	rc = PMIx_server_register_nspace(nspace, (int)nlocal, infos, ninfos, registered, (void *)&done);
	if (rc != PMIX_SUCCESS)
		die("PMIx_server_register_nspace: %s", PMIx_Error_string(rc));
	wait_registered(&done, "PMIx_server_register_nspace");

	for (uint32_t r = 0; r < size; r++) {
		if (nodeid[r] != myid)
			continue;
		pmix_proc_t proc;
		PMIX_PROC_LOAD(&proc, nspace, r);
		done = 0;
		rc = PMIx_server_register_client(&proc, uid, gid, NULL, registered, (void *)&done);
		if (rc != PMIX_SUCCESS)
			die("PMIx_server_register_client %u: %s", r, PMIx_Error_string(rc));
		wait_registered(&done, "PMIx_server_register_client");
		char **env = NULL;
		rc = PMIx_server_setup_fork(&proc, &env);
		if (rc != PMIX_SUCCESS)
			die("PMIx_server_setup_fork %u: %s", r, PMIx_Error_string(rc));
		size_t n = 0;
		for (char **e = env; e && *e; e++)
			n += strlen(*e) + 1;
		char *buf = malloc(n + 1), *p = buf;
		for (char **e = env; e && *e; e++) {
			size_t l = strlen(*e) + 1;
			memcpy(p, *e, l);
			p += l;
		}
		unsigned char rb[4];
		put32(rb, r);
		send_frame('E', rb, 4, buf, n);
		free(buf);
	}
	send_frame('R', NULL, 0, NULL, 0);

	/* the agent's frames until it closes the pipe */
	for (;;) {
		unsigned char h[5];
		if (read_full(h, 5) < 0)
			break;
		uint32_t n = get32(h + 1);
		if (n > (64u << 20))
			die("a frame of %u bytes from the agent", n);
		char *p = malloc(n ? n : 1);
		if (read_full(p, n) < 0)
			break;
		if (h[0] == 'P') {
			free(p);
			send_frame('P', NULL, 0, NULL, 0);
			continue;
		}
		if (h[0] != 'D' || n < 4)
			die("unexpected frame %c from the agent", h[0]);
		pthread_mutex_lock(&fence_mu);
		pmix_modex_cbfunc_t cb = fence_cb;
		void *cbd = fence_cbdata;
		fence_cb = NULL;
		pthread_mutex_unlock(&fence_mu);
		if (cb == NULL)
			die("the end of a fence no rank is in");
		pmix_status_t st = (pmix_status_t)(int32_t)get32((unsigned char *)p);
		size_t nd = n - 4;
		char *d = malloc(nd ? nd : 1);
		memcpy(d, p + 4, nd);
		free(p);
		cb(st, d, nd, cbd, release_data, d);
	}
	PMIx_server_finalize();
	return 0;
}
