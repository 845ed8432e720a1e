/* Errors: MPI's error handlers (ERRORS_ARE_FATAL, ERRORS_ABORT,
 * ERRORS_RETURN, user handlers), the library's own fatal errors, and the
 * stub every function outside the subset calls. A fatal error tells the
 * relay (Abort, frame 18) so that the job fails with the reason, then
 * exits. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmpi.h"

static const char *class_text(int cls)
{
	switch (cls) {
	case MPI_SUCCESS: return "no error";
	case MPI_ERR_BUFFER: return "invalid buffer pointer";
	case MPI_ERR_COUNT: return "invalid count argument";
	case MPI_ERR_TYPE: return "invalid datatype";
	case MPI_ERR_TAG: return "invalid tag";
	case MPI_ERR_COMM: return "invalid communicator";
	case MPI_ERR_RANK: return "invalid rank";
	case MPI_ERR_ROOT: return "invalid root";
	case MPI_ERR_GROUP: return "invalid group";
	case MPI_ERR_OP: return "invalid reduction operation";
	case MPI_ERR_TOPOLOGY: return "invalid topology";
	case MPI_ERR_DIMS: return "invalid dimension argument";
	case MPI_ERR_ARG: return "invalid argument";
	case MPI_ERR_UNKNOWN: return "unknown error";
	case MPI_ERR_TRUNCATE: return "message truncated";
	case MPI_ERR_OTHER: return "other error";
	case MPI_ERR_INTERN: return "internal error";
	case MPI_ERR_IN_STATUS: return "error code is in status";
	case MPI_ERR_PENDING: return "pending request";
	case MPI_ERR_REQUEST: return "invalid request";
	case MPI_ERR_KEYVAL: return "invalid keyval";
	case MPI_ERR_NO_MEM: return "out of memory";
	case MPI_ERR_UNSUPPORTED_OPERATION: return "unsupported operation";
	case MPI_ERR_FILE: return "invalid file handle";
	case MPI_ERR_NO_SUCH_FILE: return "file does not exist";
	case MPI_ERR_FILE_EXISTS: return "file exists";
	case MPI_ERR_AMODE: return "invalid access mode";
	case MPI_ERR_ACCESS: return "permission denied";
	case MPI_ERR_IO: return "I/O error";
	case MPI_ERR_NO_SPACE: return "no space left";
	case MPI_ERR_READ_ONLY: return "read-only file or file system";
	case MPI_ERR_BAD_FILE: return "invalid file name";
	case MPI_ERR_UNSUPPORTED_DATAREP: return "unsupported data representation";
	case MPI_ERR_WIN: return "invalid window";
	case MPI_ERR_RMA_SYNC: return "wrong synchronization of one-sided calls";
	}
	return NULL;
}

static const char *class_name(int cls)
{
	switch (cls) {
	case MPI_ERR_BUFFER: return "MPI_ERR_BUFFER";
	case MPI_ERR_COUNT: return "MPI_ERR_COUNT";
	case MPI_ERR_TYPE: return "MPI_ERR_TYPE";
	case MPI_ERR_TAG: return "MPI_ERR_TAG";
	case MPI_ERR_COMM: return "MPI_ERR_COMM";
	case MPI_ERR_RANK: return "MPI_ERR_RANK";
	case MPI_ERR_ROOT: return "MPI_ERR_ROOT";
	case MPI_ERR_GROUP: return "MPI_ERR_GROUP";
	case MPI_ERR_OP: return "MPI_ERR_OP";
	case MPI_ERR_ARG: return "MPI_ERR_ARG";
	case MPI_ERR_TRUNCATE: return "MPI_ERR_TRUNCATE";
	case MPI_ERR_REQUEST: return "MPI_ERR_REQUEST";
	case MPI_ERR_OTHER: return "MPI_ERR_OTHER";
	case MPI_ERR_INTERN: return "MPI_ERR_INTERN";
	case MPI_ERR_KEYVAL: return "MPI_ERR_KEYVAL";
	case MPI_ERR_FILE: return "MPI_ERR_FILE";
	case MPI_ERR_NO_SUCH_FILE: return "MPI_ERR_NO_SUCH_FILE";
	case MPI_ERR_FILE_EXISTS: return "MPI_ERR_FILE_EXISTS";
	case MPI_ERR_AMODE: return "MPI_ERR_AMODE";
	case MPI_ERR_ACCESS: return "MPI_ERR_ACCESS";
	case MPI_ERR_IO: return "MPI_ERR_IO";
	case MPI_ERR_NO_SPACE: return "MPI_ERR_NO_SPACE";
	case MPI_ERR_READ_ONLY: return "MPI_ERR_READ_ONLY";
	case MPI_ERR_BAD_FILE: return "MPI_ERR_BAD_FILE";
	case MPI_ERR_UNSUPPORTED_DATAREP: return "MPI_ERR_UNSUPPORTED_DATAREP";
	case MPI_ERR_WIN: return "MPI_ERR_WIN";
	case MPI_ERR_RMA_SYNC: return "MPI_ERR_RMA_SYNC";
	}
	return "MPI error";
}

void cmpi_die(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fprintf(stderr, "cosched MPI: rank %d: %s\n", G.rank, msg);
	fflush(stderr);
	send_abort(code, msg);
	_exit(code);
}

void cmpi_unsupported(const char *name)
{
	char msg[256];
	if (name[0] == 'P')
		name++; /* PMPI_X is MPI_X to the user */
	snprintf(msg, sizeof msg, "%s is not supported by cosched's MPI", name);
	fprintf(stderr, "cosched MPI: rank %d: %s\n", G.rank, msg);
	fflush(stderr);
	send_abort(1, msg);
	_exit(1);
}

void cmpi_need_init(const char *fn)
{
	if (G.finalized)
		cmpi_die(1, "%s called after MPI_Finalize", fn);
	fprintf(stderr, "cosched MPI: %s called before MPI_Init\n", fn);
	_exit(1);
}

int cmpi_err(struct comm *c, int cls, const char *fn, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	if (!c)
		c = comm_get(MPI_COMM_WORLD);
	MPI_Errhandler eh = c ? c->eh : MPI_ERRORS_ARE_FATAL;
	if (eh == MPI_ERRORS_RETURN)
		return cls;
	struct errh *u = errh_get(eh);
	if (u) {
		MPI_Comm h = c->handle;
		int code = cls;
		u->fn(&h, &code);
		return cls;
	}
	cmpi_die(1, "%s: %s (%s): %s", fn, class_text(cls), class_name(cls), detail);
}

/* cmpi_obj_err is cmpi_err for a file or a window whose error handler is
 * eh (handle: a pointer to its handle, which a user handler gets). */
int cmpi_obj_err(MPI_Errhandler eh, void *handle, int cls, const char *fn, const char *detail)
{
	if (eh == MPI_ERRORS_RETURN)
		return cls;
	struct errh *u = errh_get(eh);
	if (u) {
		int code = cls;
		((void (*)(void *, int *, ...))(void *)u->fn)(handle, &code);
		return cls;
	}
	cmpi_die(1, "%s: %s (%s): %s", fn, class_text(cls), class_name(cls), detail);
}

int MPI_Error_class(int errorcode, int *errorclass)
{
	if (!errorclass)
		return MPI_ERR_ARG;
	*errorclass = errorcode;
	return MPI_SUCCESS;
}

int MPI_Error_string(int errorcode, char *string, int *resultlen)
{
	if (!string || !resultlen)
		return MPI_ERR_ARG;
	const char *t = class_text(errorcode);
	char tmp[64];
	if (!t) {
		snprintf(tmp, sizeof tmp, "MPI error %d", errorcode);
		t = tmp;
	}
	snprintf(string, MPI_MAX_ERROR_STRING, "%s", t);
	*resultlen = (int)strlen(string);
	return MPI_SUCCESS;
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
	NEED_INIT("MPI_Comm_set_errhandler");
	struct comm *c = comm_get(comm);
	if (!c)
		return cmpi_err(NULL, MPI_ERR_COMM, "MPI_Comm_set_errhandler", "communicator %#x", (unsigned)comm);
	if (!errh_valid(errhandler))
		return cmpi_err(c, MPI_ERR_ARG, "MPI_Comm_set_errhandler", "error handler %#x", (unsigned)errhandler);
	c->eh = errhandler;
	return MPI_SUCCESS;
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
	NEED_INIT("MPI_Comm_get_errhandler");
	struct comm *c = comm_get(comm);
	if (!c)
		return cmpi_err(NULL, MPI_ERR_COMM, "MPI_Comm_get_errhandler", "communicator %#x", (unsigned)comm);
	*errhandler = c->eh;
	return MPI_SUCCESS;
}

int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler) { return MPI_Comm_set_errhandler(comm, errhandler); }
int MPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler) { return MPI_Comm_get_errhandler(comm, errhandler); }

int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler)
{
	if (!fn || !errhandler)
		return cmpi_err(NULL, MPI_ERR_ARG, "MPI_Comm_create_errhandler", "null argument");
	*errhandler = errh_new(fn);
	return MPI_SUCCESS;
}

int MPI_Errhandler_free(MPI_Errhandler *errhandler)
{
	if (!errhandler)
		return cmpi_err(NULL, MPI_ERR_ARG, "MPI_Errhandler_free", "null argument");
	struct errh *e = errh_get(*errhandler);
	if (e)
		e->used = 0;
	*errhandler = MPI_ERRHANDLER_NULL;
	return MPI_SUCCESS;
}

int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
	struct comm *c = comm_get(comm);
	if (!c)
		return cmpi_err(NULL, MPI_ERR_COMM, "MPI_Comm_call_errhandler", "communicator %#x", (unsigned)comm);
	cmpi_err(c, errorcode, "MPI_Comm_call_errhandler", "error code %d", errorcode);
	return MPI_SUCCESS;
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
	(void)comm;
	char msg[256];
	snprintf(msg, sizeof msg, "application called MPI_Abort(comm=%#x, %d) - process %d", (unsigned)comm, errorcode,
		 G.rank);
	fprintf(stderr, "cosched MPI: %s\n", msg);
	fflush(stdout);
	fflush(stderr);
	send_abort(errorcode, msg);
	_exit(errorcode);
}
