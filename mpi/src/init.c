/* Start and end: MPI_Init connects to the agent's relay (COSCHED_RELAY)
 * and says hello; MPI_Finalize says Finalize and waits for Bye. Also the
 * environment queries (time, processor name, version, attributes). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmpi.h"

double cmpi_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int do_init(const char *fn)
{
	if (G.inited)
		return cmpi_err(NULL, MPI_ERR_OTHER, fn, "MPI is already initialized");
	G.t0 = cmpi_now();
	dt_init_predefined();
	conn_open();
	coll_init();
	int *w = malloc(G.size * sizeof(int));
	if (!w)
		cmpi_die(1, "out of memory");
	for (int i = 0; i < G.size; i++)
		w[i] = i;
	struct comm *world = comm_new(G.size, w);
	world->k = 1;
	snprintf(world->name, sizeof world->name, "MPI_COMM_WORLD");
	struct comm *self = comm_new(1, &G.rank);
	self->k = 2;
	snprintf(self->name, sizeof self->name, "MPI_COMM_SELF");
	free(w);
	G.next_k = 3;
	G.inited = 1;
	return MPI_SUCCESS;
}

int MPI_Init(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return do_init("MPI_Init");
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	(void)argc;
	(void)argv;
	int rc = do_init("MPI_Init_thread");
	/* one thread at a time is all the library supports: calls are made
	 * by one thread (FUNNELED) or serialized by the program (SERIALIZED) */
	if (provided)
		*provided = required < MPI_THREAD_SERIALIZED ? required : MPI_THREAD_SERIALIZED;
	return rc;
}

int MPI_Initialized(int *flag)
{
	*flag = G.inited;
	return MPI_SUCCESS;
}

int MPI_Finalized(int *flag)
{
	*flag = G.finalized;
	return MPI_SUCCESS;
}

int MPI_Query_thread(int *provided)
{
	*provided = MPI_THREAD_SERIALIZED;
	return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag)
{
	*flag = 1;
	return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
	NEED_INIT("MPI_Finalize");
	/* MPI: as if MPI_COMM_SELF were freed first (libraries hang their
	 * clean-up on its delete callbacks), while MPI still works; then
	 * MPI_COMM_WORLD's, as MPICH does */
	comm_attrs_clear(comm_get(MPI_COMM_SELF));
	comm_attrs_clear(comm_get(MPI_COMM_WORLD));
	chan_drain(); /* completed sends must arrive: cross-node peers acknowledge them (chan.c) */
	struct buf b = {0};
	mp_map(&b, 0);
	G.finalizing = 1; /* before writing: a resumed connection says it again */
	conn_write(FR_FINALIZE, &b);
	free(b.p);
	while (!G.bye)
		pump(1);
	if (G.numbered && getenv("COSCHED_MPI_DEBUG"))
		fprintf(stderr, "cosched MPI: rank %d: %llu connection(s) resumed; unacknowledged messages kept: peak %llu bytes, %llu at the end\n",
			G.rank, (unsigned long long)G.resumes, (unsigned long long)G.kept_peak, (unsigned long long)G.kept_msgs);
	chan_close();
	close(G.fd);
	G.fd = -1;
	G.finalized = 1;
	return MPI_SUCCESS;
}

double MPI_Wtime(void) { return cmpi_now() - G.t0; }

double MPI_Wtick(void)
{
	struct timespec ts;
	clock_getres(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int MPI_Get_processor_name(char *name, int *resultlen)
{
	char h[MPI_MAX_PROCESSOR_NAME];
	if (gethostname(h, sizeof h) != 0)
		snprintf(h, sizeof h, "localhost");
	h[sizeof h - 1] = 0;
	snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", h);
	*resultlen = (int)strlen(name);
	return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion)
{
	*version = MPI_VERSION;
	*subversion = MPI_SUBVERSION;
	return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *resultlen)
{
	snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
		 "cosched MPI (MPICH 4 ABI): every message through the agent's relay");
	*resultlen = (int)strlen(version);
	return MPI_SUCCESS;
}

static int attr_tag_ub = 0x7fffffff; /* the relay takes tags in [0, 2^31) */
static int attr_host = MPI_PROC_NULL;
static int attr_io = MPI_ANY_SOURCE;
static int attr_wtime_global = 0;
static int attr_universe;
static int attr_appnum = 0;
static int attr_lastcode = MPI_ERR_LASTCODE;

/* predefined_attr is the value of a predefined keyval (MPI_TAG_UB, …),
 * or NULL for any other keyval (attr.c answers those). */
int *predefined_attr(int keyval)
{
	attr_universe = G.size;
	switch (keyval) {
	case MPI_TAG_UB: return &attr_tag_ub;
	case MPI_HOST: return &attr_host;
	case MPI_IO: return &attr_io;
	case MPI_WTIME_IS_GLOBAL: return &attr_wtime_global;
	case MPI_UNIVERSE_SIZE: return &attr_universe;
	case MPI_APPNUM: return &attr_appnum;
	case MPI_LASTUSEDCODE: return &attr_lastcode;
	}
	return NULL;
}

int MPI_Pcontrol(const int level, ...)
{
	(void)level;
	return MPI_SUCCESS;
}

int MPI_Buffer_attach(void *buffer, int size)
{
	G.bsend_buf = buffer;
	G.bsend_size = size;
	return MPI_SUCCESS;
}

int MPI_Buffer_detach(void *buffer_addr, int *size)
{
	*(void **)buffer_addr = G.bsend_buf;
	*size = G.bsend_size;
	G.bsend_buf = NULL;
	G.bsend_size = 0;
	return MPI_SUCCESS;
}

int MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
	(void)info;
	void *p = malloc(size > 0 ? size : 1);
	if (!p)
		return cmpi_err(NULL, MPI_ERR_NO_MEM, "MPI_Alloc_mem", "%ld bytes", (long)size);
	*(void **)baseptr = p;
	return MPI_SUCCESS;
}

int MPI_Free_mem(void *base)
{
	free(base);
	return MPI_SUCCESS;
}

/* Data objects mpi.h declares (Fortran's and graph topology's sentinels):
 * defined so that a program referring to them links; their values only
 * need to be distinct addresses. */
static int unweighted_, weights_empty_;
int *const MPI_UNWEIGHTED = &unweighted_;
int *const MPI_WEIGHTS_EMPTY = &weights_empty_;
MPI_Fint *MPI_F_STATUS_IGNORE = 0;
MPI_Fint *MPI_F_STATUSES_IGNORE = 0;
MPI_F08_status MPIR_F08_MPI_STATUS_IGNORE_OBJ;
MPI_F08_status MPIR_F08_MPI_STATUSES_IGNORE_OBJ[1];
int MPIR_F08_MPI_IN_PLACE;
int MPIR_F08_MPI_BOTTOM;
MPI_F08_status *MPI_F08_STATUS_IGNORE = &MPIR_F08_MPI_STATUS_IGNORE_OBJ;
MPI_F08_status *MPI_F08_STATUSES_IGNORE = &MPIR_F08_MPI_STATUSES_IGNORE_OBJ[0];
int MPIR_C_MPI_UNWEIGHTED;
int MPIR_C_MPI_WEIGHTS_EMPTY;
struct MPIR_T_pvar_handle_s *const MPI_T_PVAR_ALL_HANDLES = (struct MPIR_T_pvar_handle_s *)1;
