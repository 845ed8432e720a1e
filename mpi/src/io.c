/* MPI-IO (MPI 4.0, 14) over POSIX, as ROMIO's "ufs" driver does it:
 * every rank opens the file itself, so it must be one they all see (one
 * host, or a shared file system). Reads and writes at explicit offsets
 * and at each rank's file pointer, independent and collective, through
 * any file view: the view's filetype is walked as runs of bytes, each
 * one pread or pwrite. A collective is its independent call (no
 * two-phase aggregation: correct, not tuned); a non-blocking call is done
 * at once and returns a complete request; a split collective is done at
 * its _begin. The shared file pointer lives in a hidden file beside the
 * data file (".<name>.cosched-shfp.<id>", as ROMIO keeps one), made at
 * its first use, read and advanced under an fcntl lock (so ranks on
 * several hosts of a shared file system share it too) and removed at
 * the close. Not done, each failing the job as "not supported"
 * (build.sh's stubs): the large-count _c variants; data representations
 * other than "native" are refused (MPI_ERR_UNSUPPORTED_DATAREP). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmpi.h"

struct ADIOI_FileD {
	int used;
	int fd;
	MPI_Comm comm; /* a duplicate of the opening one: the file's collectives */
	int amode;
	MPI_Offset disp; /* the view */
	struct dtype *et, *ft; /* referenced */
	MPI_Offset pos; /* the individual file pointer: etypes into the view */
	MPI_Errhandler eh;
	int atomic;
	int fint;   /* its Fortran handle (MPI_File_c2f): index in files + 1 */
	char *path;   /* for MPI_MODE_DELETE_ON_CLOSE */
	char *shname; /* the shared file pointer's file */
	int shfp;   /* the shared file pointer's file, once used (-1: not yet) */
	MPI_Offset shstart; /* the shared file pointer until its file is made */
	int split;  /* a split collective is under way: its result is splitst */
	MPI_Status splitst;
	int splitrc;
};

/* files: the files, by Fortran handle - 1. An MPI_File is the object's
 * address, as ROMIO's; a closed one's slot is reused. */
TABLE(struct ADIOI_FileD, files)
/* MPI_FILE_NULL's error handler, a new file's: files return errors by
 * default (MPI 4.0, 9.3), unlike communicators. */
static MPI_Errhandler default_eh = MPI_ERRORS_RETURN;

static int ferr(MPI_File f, int cls, const char *fn, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ferr is cmpi_err for a file (or MPI_FILE_NULL's handler when f is
 * NULL). */
static int ferr(MPI_File f, int cls, const char *fn, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	MPI_File h = f;
	return cmpi_obj_err(f ? f->eh : default_eh, &h, cls, fn, detail);
}

static int errno_class(int e)
{
	switch (e) {
	case ENOENT: return MPI_ERR_NO_SUCH_FILE;
	case EEXIST: return MPI_ERR_FILE_EXISTS;
	case EACCES: case EPERM: return MPI_ERR_ACCESS;
	case EROFS: return MPI_ERR_READ_ONLY;
	case ENOSPC: case EDQUOT: return MPI_ERR_NO_SPACE;
	case EISDIR: case ENOTDIR: case ENAMETOOLONG: case ELOOP: return MPI_ERR_BAD_FILE;
	}
	return MPI_ERR_IO;
}

/* path strips ROMIO's file system prefix ("ufs:", "nfs:", "lustre:"…),
 * which names a driver, not part of the path. */
static const char *path(const char *name)
{
	const char *c = strchr(name, ':');
	if (c && c - name >= 2 && !memchr(name, '/', (size_t)(c - name)))
		return c + 1;
	return name;
}

#define FILEARG(fn, fh)                                                                            \
	NEED_INIT(fn);                                                                             \
	if (!(fh) || (fh)->fint < 1 || (fh)->fint > n_files || files[(fh)->fint - 1] != (fh) || !(fh)->used) \
		return ferr(NULL, MPI_ERR_FILE, fn, "file handle %p", (void *)(fh));

/* shfp_lock takes (F_WRLCK) or lets go of (F_UNLCK) the shared file
 * pointer's lock. */
static int shfp_lock(int fd, short type)
{
	struct flock l = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = sizeof(MPI_Offset)};
	while (fcntl(fd, F_SETLKW, &l) != 0)
		if (errno != EINTR)
			return errno_class(errno);
	return MPI_SUCCESS;
}

/* shfp_add reads the shared file pointer and advances it by n etypes
 * (set: sets it to n), under the lock: what it was is *at. Its file is
 * made at the first use: an empty one holds shstart (0, or the file's
 * end at an MPI_MODE_APPEND open). */
static int shfp_add(MPI_File f, MPI_Offset n, MPI_Offset *at, int set)
{
	if (f->shfp < 0) {
		f->shfp = open(f->shname, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		if (f->shfp < 0)
			return errno_class(errno);
	}
	int rc = shfp_lock(f->shfp, F_WRLCK);
	if (rc != MPI_SUCCESS)
		return rc;
	MPI_Offset v = 0;
	ssize_t got = pread(f->shfp, &v, sizeof v, 0);
	if (got == 0)
		v = f->shstart;
	else if (got != (ssize_t)sizeof v)
		rc = MPI_ERR_IO;
	*at = v;
	MPI_Offset to = set ? n : v + n;
	if (rc == MPI_SUCCESS && (to != v || got == 0) && pwrite(f->shfp, &to, sizeof to, 0) != (ssize_t)sizeof to)
		rc = MPI_ERR_IO;
	shfp_lock(f->shfp, F_UNLCK);
	return rc;
}

/* shfp_reset sets the shared file pointer to 0 if its file exists (the
 * first rank's, at a new view: every rank's start is 0 from then on). */
static void shfp_reset(MPI_File f)
{
	int fd = f->shfp;
	if (fd < 0) {
		fd = open(f->shname, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			return; /* none made yet */
	}
	if (shfp_lock(fd, F_WRLCK) == MPI_SUCCESS) {
		MPI_Offset zero = 0;
		if (pwrite(fd, &zero, sizeof zero, 0) != (ssize_t)sizeof zero)
			cmpi_die(1, "resetting the shared file pointer of %s: %s", f->path, strerror(errno));
		shfp_lock(fd, F_UNLCK);
	}
	if (fd != f->shfp)
		close(fd);
}

int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh)
{
	static const char fn[] = "MPI_File_open";
	NEED_INIT(fn);
	(void)info;
	struct comm *c = comm_get(comm);
	if (!c)
		return cmpi_err(NULL, MPI_ERR_COMM, fn, "communicator %#x", (unsigned)comm);
	if (!filename || !fh)
		return ferr(NULL, MPI_ERR_ARG, fn, "null argument");
	int access = amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
	if ((access != MPI_MODE_RDONLY && access != MPI_MODE_WRONLY && access != MPI_MODE_RDWR) ||
	    (access == MPI_MODE_RDONLY && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL))) ||
	    (access == MPI_MODE_RDWR && (amode & MPI_MODE_SEQUENTIAL)))
		return ferr(NULL, MPI_ERR_AMODE, fn, "amode %#x: want exactly one of RDONLY, WRONLY and RDWR, and no CREATE or EXCL with RDONLY", (unsigned)amode);
	int flags = O_CLOEXEC | (access == MPI_MODE_RDONLY ? O_RDONLY : access == MPI_MODE_WRONLY ? O_WRONLY : O_RDWR);
	const char *p = path(filename);
	/* The first rank creates it (EXCL: only it can), then the others open
	 * what it made; every rank then learns whether all succeeded. */
	int fd = -1, cls = MPI_SUCCESS, worst, oerr = 0; /* oerr: this rank's open's errno */
	if (c->rank == 0) {
		int cf = amode & MPI_MODE_CREATE ? O_CREAT | (amode & MPI_MODE_EXCL ? O_EXCL : 0) : 0;
		fd = open(p, flags | cf, 0666);
		if (fd < 0)
			cls = errno_class(oerr = errno);
	}
	/* the first rank's outcome, and the name of the shared file pointer's
	 * file: one of its own per open (as ROMIO's), hidden beside the file */
	static unsigned opens;
	long long said[2] = {cls, ((long long)getpid() << 20) | (opens++ & 0xfffff)};
	MPI_Bcast(said, 2, MPI_LONG_LONG, 0, comm);
	int first = (int)said[0];
	if (c->rank != 0 && first == MPI_SUCCESS) {
		fd = open(p, flags);
		if (fd < 0)
			cls = errno_class(oerr = errno);
	}
	if (c->rank != 0 && first != MPI_SUCCESS)
		cls = first;
	MPI_Allreduce(&cls, &worst, 1, MPI_INT, MPI_MAX, comm);
	if (worst != MPI_SUCCESS) {
		if (fd >= 0)
			close(fd);
		return ferr(NULL, cls != MPI_SUCCESS ? cls : worst, fn, "%s: %s", filename,
			    oerr ? strerror(oerr) : cls != MPI_SUCCESS ? "the first rank could not open it" : "another rank could not open it");
	}
	int i = slot_files();
	MPI_File f = files[i];
	memset(f, 0, sizeof *f);
	f->used = 1;
	f->fint = i + 1;
	f->fd = fd;
	f->amode = amode;
	if (!(f->path = strdup(p)))
		cmpi_die(1, "out of memory");
	const char *slash = strrchr(p, '/');
	int dirlen = slash ? (int)(slash - p + 1) : 0;
	if (asprintf(&f->shname, "%.*s.%s.cosched-shfp.%llx", dirlen, p, p + dirlen, (unsigned long long)said[1]) < 0)
		cmpi_die(1, "out of memory");
	f->et = f->ft = dt_get(MPI_BYTE);
	f->eh = default_eh;
	MPI_Comm_dup(comm, &f->comm);
	if (amode & MPI_MODE_APPEND) {
		struct stat st;
		if (fstat(fd, &st) == 0)
			f->pos = st.st_size;
	}
	f->shfp = -1;
	f->shstart = f->pos;
	*fh = f;
	return MPI_SUCCESS;
}

int MPI_File_close(MPI_File *fh)
{
	static const char fn[] = "MPI_File_close";
	FILEARG(fn, fh ? *fh : NULL);
	MPI_File f = *fh;
	int e = close(f->fd) == 0 ? 0 : errno;
	MPI_Barrier(f->comm); /* every rank has closed it */
	int rank;
	MPI_Comm_rank(f->comm, &rank);
	if ((f->amode & MPI_MODE_DELETE_ON_CLOSE) && rank == 0 && unlink(f->path) != 0 && !e)
		e = errno;
	if (f->shfp >= 0)
		close(f->shfp);
	if (rank == 0)
		unlink(f->shname); /* if it was made */
	free(f->shname);
	free(f->path);
	dt_unref(f->et);
	dt_unref(f->ft);
	MPI_Comm_free(&f->comm);
	f->used = 0;
	*fh = MPI_FILE_NULL;
	if (e)
		return ferr(NULL, errno_class(e), fn, "close: %s", strerror(e));
	return MPI_SUCCESS;
}

int MPI_File_delete(const char *filename, MPI_Info info)
{
	static const char fn[] = "MPI_File_delete";
	NEED_INIT(fn);
	(void)info;
	if (!filename)
		return ferr(NULL, MPI_ERR_ARG, fn, "null file name");
	if (unlink(path(filename)) != 0)
		return ferr(NULL, errno_class(errno), fn, "%s: %s", filename, strerror(errno));
	return MPI_SUCCESS;
}

/* collective_rc is the first rank's rc, which every rank of f returns. */
static int collective_rc(MPI_File f, int rc)
{
	MPI_Bcast(&rc, 1, MPI_INT, 0, f->comm);
	return rc;
}

/* resize is set_size and preallocate: the first rank changes the file
 * (op returns 0 or an errno), every rank returns what it got. */
static int resize(const char *fn, MPI_File f, MPI_Offset size, int (*op)(int fd, MPI_Offset size))
{
	int rank, rc = MPI_SUCCESS;
	MPI_Comm_rank(f->comm, &rank);
	if (size < 0)
		rc = MPI_ERR_ARG;
	else if (rank == 0) {
		int e = op(f->fd, size);
		if (e != 0)
			rc = errno_class(e);
	}
	if ((rc = collective_rc(f, rc)) != MPI_SUCCESS)
		return ferr(f, rc, fn, "size %lld", (long long)size);
	return MPI_SUCCESS;
}

static int truncate_to(int fd, MPI_Offset size) { return ftruncate(fd, size) == 0 ? 0 : errno; }

static int allocate_to(int fd, MPI_Offset size) { return size > 0 ? posix_fallocate(fd, 0, size) : 0; }

int MPI_File_set_size(MPI_File fh, MPI_Offset size)
{
	FILEARG("MPI_File_set_size", fh);
	return resize("MPI_File_set_size", fh, size, truncate_to);
}

int MPI_File_preallocate(MPI_File fh, MPI_Offset size)
{
	FILEARG("MPI_File_preallocate", fh);
	return resize("MPI_File_preallocate", fh, size, allocate_to);
}

int MPI_File_get_size(MPI_File fh, MPI_Offset *size)
{
	static const char fn[] = "MPI_File_get_size";
	FILEARG(fn, fh);
	struct stat st;
	if (fstat(fh->fd, &st) != 0)
		return ferr(fh, errno_class(errno), fn, "%s", strerror(errno));
	*size = st.st_size;
	return MPI_SUCCESS;
}

int MPI_File_get_group(MPI_File fh, MPI_Group *group)
{
	FILEARG("MPI_File_get_group", fh);
	return MPI_Comm_group(fh->comm, group);
}

int MPI_File_get_amode(MPI_File fh, int *amode)
{
	FILEARG("MPI_File_get_amode", fh);
	*amode = fh->amode;
	return MPI_SUCCESS;
}

int MPI_File_set_info(MPI_File fh, MPI_Info info)
{
	FILEARG("MPI_File_set_info", fh);
	(void)info; /* hints: none is acted on */
	return MPI_SUCCESS;
}

int MPI_File_get_info(MPI_File fh, MPI_Info *info_used)
{
	FILEARG("MPI_File_get_info", fh);
	return MPI_Info_create(info_used);
}

int MPI_File_set_atomicity(MPI_File fh, int flag)
{
	FILEARG("MPI_File_set_atomicity", fh);
	fh->atomic = flag != 0; /* each run is one pread or pwrite: atomic on one host's file */
	return MPI_SUCCESS;
}

int MPI_File_get_atomicity(MPI_File fh, int *flag)
{
	FILEARG("MPI_File_get_atomicity", fh);
	*flag = fh->atomic;
	return MPI_SUCCESS;
}

int MPI_File_sync(MPI_File fh)
{
	static const char fn[] = "MPI_File_sync";
	FILEARG(fn, fh);
	int rc = fsync(fh->fd) == 0 ? MPI_SUCCESS : errno_class(errno), worst;
	MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, fh->comm);
	if (worst != MPI_SUCCESS)
		return ferr(fh, worst, fn, "fsync failed");
	return MPI_SUCCESS;
}

int MPI_File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint *extent)
{
	FILEARG("MPI_File_get_type_extent", fh);
	MPI_Aint lb;
	return MPI_Type_get_extent(datatype, &lb, extent);
}

int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype, const char *datarep,
		      MPI_Info info)
{
	static const char fn[] = "MPI_File_set_view";
	FILEARG(fn, fh);
	(void)info;
	struct dtype *et = dt_get(etype), *ft = dt_get(filetype);
	int rc = MPI_SUCCESS;
	const char *why = "";
	if (!datarep || strcasecmp(datarep, "native") != 0)
		rc = MPI_ERR_UNSUPPORTED_DATAREP, why = "only \"native\" is";
	else if (!et || !ft)
		rc = MPI_ERR_TYPE, why = "etype or filetype is not a committed datatype";
	else if (et->size == 0 || ft->size == 0 || ft->size % et->size != 0)
		rc = MPI_ERR_TYPE, why = "the etype or filetype holds no data, or the filetype is not made of etypes";
	else if (disp < 0)
		rc = MPI_ERR_ARG, why = "displacement below 0 (MPI_DISPLACEMENT_CURRENT needs MPI_MODE_SEQUENTIAL, not done)";
	else if (ft->true_lb < 0)
		rc = MPI_ERR_TYPE, why = "the filetype reaches below its displacement";
	if (rc != MPI_SUCCESS)
		return ferr(fh, rc, fn, "%s", why);
	MPI_Barrier(fh->comm);
	dt_ref(et);
	dt_ref(ft);
	dt_unref(fh->et);
	dt_unref(fh->ft);
	fh->et = et;
	fh->ft = ft;
	fh->disp = disp;
	fh->pos = 0;
	int rank;
	MPI_Comm_rank(fh->comm, &rank);
	fh->shstart = 0;
	if (rank == 0)
		shfp_reset(fh); /* a new view: the shared pointer at 0 too */
	MPI_Barrier(fh->comm);
	return MPI_SUCCESS;
}

int MPI_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype, char *datarep)
{
	FILEARG("MPI_File_get_view", fh);
	*disp = fh->disp;
	/* a derived type is the caller's to free: a duplicate of the view's */
	MPI_Datatype *out[2] = {etype, filetype};
	struct dtype *d[2] = {fh->et, fh->ft};
	for (int i = 0; i < 2; i++) {
		if (d[i]->predefined) {
			*out[i] = d[i]->handle;
		} else {
			MPI_Type_dup(d[i]->handle, out[i]);
			MPI_Type_commit(out[i]);
		}
	}
	strcpy(datarep, "native");
	return MPI_SUCCESS;
}

/* ---- the view: data bytes to file bytes ---- */

/* view_extent is the filetype's extent, the stride of its tiling. */
static MPI_Offset view_extent(MPI_File f) { return f->ft->ub - f->ft->lb; }

/* file_offset is where byte k of the view's data lies in the file, and
 * how many data bytes from there are contiguous in it (*run). */
static MPI_Offset file_offset(MPI_File f, MPI_Offset k, MPI_Offset *run)
{
	struct dtype *ft = f->ft;
	MPI_Offset inst = k / ft->size, within = k % ft->size;
	for (int b = 0; b < ft->nblk; b++) {
		if (within < ft->blk[b].len) {
			*run = ft->blk[b].len - within;
			return f->disp + inst * view_extent(f) + ft->blk[b].off + within;
		}
		within -= ft->blk[b].len;
	}
	*run = 0; /* unreachable: the blocks hold size bytes */
	return f->disp;
}

/* view_bytes is how many data bytes of the view lie below file byte end. */
static MPI_Offset view_bytes(MPI_File f, MPI_Offset end)
{
	if (end <= f->disp)
		return 0;
	MPI_Offset ext = view_extent(f), span = end - f->disp;
	MPI_Offset n = ext > 0 ? span / ext * f->ft->size : 0, rest = ext > 0 ? span % ext : span;
	for (int b = 0; b < f->ft->nblk; b++) {
		MPI_Offset lo = f->ft->blk[b].off, hi = lo + f->ft->blk[b].len;
		if (rest > lo)
			n += (rest < hi ? rest : hi) - lo;
	}
	return n;
}

/* transfer reads (write 0) or writes n bytes of p at byte k of the view,
 * a pread or pwrite per contiguous run; it returns the bytes moved (a read
 * stops at the end of the file) or -1 with errno. */
static MPI_Offset transfer(MPI_File f, int write, MPI_Offset k, uint8_t *p, MPI_Offset n)
{
	MPI_Offset done = 0;
	while (done < n) {
		MPI_Offset run, off = file_offset(f, k + done, &run);
		if (run <= 0)
			break;
		if (run > n - done)
			run = n - done;
		while (run > 0) {
			ssize_t m = write ? pwrite(f->fd, p + done, (size_t)run, off) : pread(f->fd, p + done, (size_t)run, off);
			if (m < 0 && errno == EINTR)
				continue;
			if (m < 0)
				return -1;
			if (m == 0) /* a read at the end of the file */
				return done;
			done += m, off += m, run -= m;
		}
	}
	return done;
}

static void file_status(MPI_Status *st, MPI_Offset bytes)
{
	if (st == MPI_STATUS_IGNORE || !st)
		return;
	st->MPI_SOURCE = MPI_PROC_NULL;
	st->MPI_TAG = MPI_ANY_TAG;
	st->count_lo = (int)(bytes & 0xffffffff);
	st->count_hi_and_cancelled = (int)((bytes >> 32) << 1);
}

/* io is every read and write: count of datatype at etype offset of the
 * view (at == 0: at the file pointer, which moves past what was moved). */
static int io(const char *fn, MPI_File f, int write, int at, MPI_Offset offset, const void *buf, int count,
	      MPI_Datatype datatype, MPI_Status *status)
{
	int access = f->amode & (MPI_MODE_RDONLY | MPI_MODE_WRONLY | MPI_MODE_RDWR);
	if (write ? access == MPI_MODE_RDONLY : access == MPI_MODE_WRONLY)
		return ferr(f, MPI_ERR_ACCESS, fn, "the file was opened %s", write ? "read-only" : "write-only");
	struct dtype *d = dt_get(datatype);
	if (!d)
		return ferr(f, MPI_ERR_TYPE, fn, "datatype %#x", (unsigned)datatype);
	if (count < 0)
		return ferr(f, MPI_ERR_COUNT, fn, "count %d", count);
	if (!at)
		offset = f->pos;
	if (offset < 0)
		return ferr(f, MPI_ERR_ARG, fn, "offset %lld", (long long)offset);
	if (d->size % f->et->size != 0)
		return ferr(f, MPI_ERR_TYPE, fn, "datatype %#x is not made of the view's etype", (unsigned)datatype);
	MPI_Offset n = (MPI_Offset)count * d->size;
	uint8_t *stage = (uint8_t *)buf;
	if (!d->contig && n > 0) {
		if (!(stage = malloc((size_t)n)))
			cmpi_die(1, "out of memory");
		if (write)
			dt_pack(buf, count, d, stage);
	} else if (d->contig) {
		stage = (uint8_t *)buf + d->lb;
	}
	MPI_Offset moved = n > 0 ? transfer(f, write, offset * f->et->size, stage, n) : 0;
	int e = errno;
	if (moved >= 0 && !write && !d->contig && n > 0)
		dt_unpack(stage, (int)(moved / (d->size ? d->size : 1)), d, (void *)buf);
	if (!d->contig && n > 0)
		free(stage);
	if (moved < 0)
		return ferr(f, errno_class(e), fn, "%s: %s", write ? "pwrite" : "pread", strerror(e));
	if (!at)
		f->pos += moved / f->et->size;
	file_status(status, moved);
	return MPI_SUCCESS;
}

#define IO(name, write, at, all, BUF)                                                              \
	int name(MPI_File fh, MPI_Offset offset, BUF buf, int count, MPI_Datatype datatype, MPI_Status *status) \
	{                                                                                          \
		FILEARG(#name, fh);                                                                \
		return io(#name, fh, write, at, offset, buf, count, datatype, status);           \
	}

IO(MPI_File_read_at, 0, 1, 0, void *)
IO(MPI_File_read_at_all, 0, 1, 1, void *)
IO(MPI_File_write_at, 1, 1, 0, const void *)
IO(MPI_File_write_at_all, 1, 1, 1, const void *)

int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
	FILEARG("MPI_File_read", fh);
	return io("MPI_File_read", fh, 0, 0, 0, buf, count, datatype, status);
}

int MPI_File_read_all(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
	FILEARG("MPI_File_read_all", fh);
	return io("MPI_File_read_all", fh, 0, 0, 0, buf, count, datatype, status);
}

int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
	FILEARG("MPI_File_write", fh);
	return io("MPI_File_write", fh, 1, 0, 0, buf, count, datatype, status);
}

int MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
	FILEARG("MPI_File_write_all", fh);
	return io("MPI_File_write_all", fh, 1, 0, 0, buf, count, datatype, status);
}

/* ---- non-blocking calls: done at once, a complete request ---- */

static int done_request(MPI_File f, int rc, MPI_Status *st, MPI_Request *request)
{
	if (rc != MPI_SUCCESS)
		return rc;
	struct req *r = req_new(RQ_SEND);
	r->comm = comm_get(f->comm);
	r->st = *st;
	r->st.MPI_ERROR = MPI_SUCCESS;
	r->complete = 1;
	*request = r->handle;
	return MPI_SUCCESS;
}

#define IIO(name, write, at, BUF)                                                                  \
	int name(MPI_File fh, MPI_Offset offset, BUF buf, int count, MPI_Datatype datatype, MPI_Request *request) \
	{                                                                                          \
		FILEARG(#name, fh);                                                                \
		MPI_Status st;                                                                     \
		return done_request(fh, io(#name, fh, write, at, offset, buf, count, datatype, &st), &st, request); \
	}
IIO(MPI_File_iread_at, 0, 1, void *)
IIO(MPI_File_iread_at_all, 0, 1, void *)
IIO(MPI_File_iwrite_at, 1, 1, const void *)
IIO(MPI_File_iwrite_at_all, 1, 1, const void *)

#define IIOP(name, write, BUF)                                                                     \
	int name(MPI_File fh, BUF buf, int count, MPI_Datatype datatype, MPI_Request *request)     \
	{                                                                                          \
		FILEARG(#name, fh);                                                                \
		MPI_Status st;                                                                     \
		return done_request(fh, io(#name, fh, write, 0, 0, buf, count, datatype, &st), &st, request); \
	}
IIOP(MPI_File_iread, 0, void *)
IIOP(MPI_File_iread_all, 0, void *)
IIOP(MPI_File_iwrite, 1, const void *)
IIOP(MPI_File_iwrite_all, 1, const void *)

/* ---- split collectives: done at _begin, their status kept for _end ---- */

static int split_begin(const char *fn, MPI_File f, int write, int at, MPI_Offset offset, const void *buf, int count,
		       MPI_Datatype datatype)
{
	if (f->split)
		return ferr(f, MPI_ERR_OTHER, fn, "a split collective is already under way on this file");
	f->split = 1;
	f->splitrc = io(fn, f, write, at, offset, buf, count, datatype, &f->splitst);
	return f->splitrc;
}

static int split_end(const char *fn, MPI_File f, MPI_Status *status)
{
	if (!f->split)
		return ferr(f, MPI_ERR_OTHER, fn, "no split collective is under way on this file");
	f->split = 0;
	if (status != MPI_STATUS_IGNORE && status)
		*status = f->splitst;
	return f->splitrc;
}

int MPI_File_read_at_all_begin(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype)
{
	FILEARG("MPI_File_read_at_all_begin", fh);
	return split_begin("MPI_File_read_at_all_begin", fh, 0, 1, offset, buf, count, datatype);
}

int MPI_File_write_at_all_begin(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype)
{
	FILEARG("MPI_File_write_at_all_begin", fh);
	return split_begin("MPI_File_write_at_all_begin", fh, 1, 1, offset, buf, count, datatype);
}

int MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype)
{
	FILEARG("MPI_File_read_all_begin", fh);
	return split_begin("MPI_File_read_all_begin", fh, 0, 0, 0, buf, count, datatype);
}

int MPI_File_write_all_begin(MPI_File fh, const void *buf, int count, MPI_Datatype datatype)
{
	FILEARG("MPI_File_write_all_begin", fh);
	return split_begin("MPI_File_write_all_begin", fh, 1, 0, 0, buf, count, datatype);
}

#define SPLIT_END(name, BUF)                                                                       \
	int name(MPI_File fh, BUF buf, MPI_Status *status)                                         \
	{                                                                                          \
		(void)buf;                                                                         \
		FILEARG(#name, fh);                                                                \
		return split_end(#name, fh, status);                                               \
	}
SPLIT_END(MPI_File_read_at_all_end, void *)
SPLIT_END(MPI_File_write_at_all_end, const void *)
SPLIT_END(MPI_File_read_all_end, void *)
SPLIT_END(MPI_File_write_all_end, const void *)
SPLIT_END(MPI_File_read_ordered_end, void *)
SPLIT_END(MPI_File_write_ordered_end, const void *)

/* ---- the shared file pointer ---- */

/* etypes is how many of the view's etypes count of datatype are. */
static MPI_Offset etypes(MPI_File f, int count, MPI_Datatype datatype)
{
	struct dtype *d = dt_get(datatype);
	return d && count > 0 ? (MPI_Offset)count * d->size / f->et->size : 0;
}

/* shared is read_shared and write_shared: the data at the shared
 * pointer, which moves past it before another rank's call can. */
static int shared(const char *fn, MPI_File f, int write, const void *buf, int count, MPI_Datatype datatype,
		  MPI_Status *status)
{
	if (!dt_get(datatype))
		return ferr(f, MPI_ERR_TYPE, fn, "datatype %#x", (unsigned)datatype);
	MPI_Offset at;
	int rc = shfp_add(f, etypes(f, count, datatype), &at, 0);
	if (rc != MPI_SUCCESS)
		return ferr(f, rc, fn, "the shared file pointer (%s) cannot be used", f->shname);
	return io(fn, f, write, 1, at, buf, count, datatype, status);
}

/* ordered is read_ordered and write_ordered: the ranks' data one after
 * another in rank order from the shared pointer, which moves past all of
 * it. Collective. */
static int ordered(const char *fn, MPI_File f, int write, const void *buf, int count, MPI_Datatype datatype,
		   MPI_Status *status)
{
	int rank;
	MPI_Comm_rank(f->comm, &rank);
	long long mine = dt_get(datatype) ? etypes(f, count, datatype) : 0, before = 0, total = 0;
	MPI_Exscan(&mine, &before, 1, MPI_LONG_LONG, MPI_SUM, f->comm);
	if (rank == 0)
		before = 0; /* Exscan leaves rank 0's undefined */
	MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, f->comm);
	MPI_Offset start = 0;
	int rc = MPI_SUCCESS;
	if (rank == 0)
		rc = shfp_add(f, total, &start, 0);
	long long sr[2] = {start, rc};
	MPI_Bcast(sr, 2, MPI_LONG_LONG, 0, f->comm);
	if (sr[1] != MPI_SUCCESS)
		return ferr(f, (int)sr[1], fn, "the shared file pointer (%s) cannot be used", f->shname);
	if (!dt_get(datatype))
		return ferr(f, MPI_ERR_TYPE, fn, "datatype %#x", (unsigned)datatype);
	return io(fn, f, write, 1, sr[0] + before, buf, count, datatype, status);
}

int MPI_File_read_shared(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
	FILEARG("MPI_File_read_shared", fh);
	return shared("MPI_File_read_shared", fh, 0, buf, count, datatype, status);
}

int MPI_File_write_shared(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
	FILEARG("MPI_File_write_shared", fh);
	return shared("MPI_File_write_shared", fh, 1, buf, count, datatype, status);
}

int MPI_File_iread_shared(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
{
	FILEARG("MPI_File_iread_shared", fh);
	MPI_Status st;
	return done_request(fh, shared("MPI_File_iread_shared", fh, 0, buf, count, datatype, &st), &st, request);
}

int MPI_File_iwrite_shared(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request)
{
	FILEARG("MPI_File_iwrite_shared", fh);
	MPI_Status st;
	return done_request(fh, shared("MPI_File_iwrite_shared", fh, 1, buf, count, datatype, &st), &st, request);
}

int MPI_File_read_ordered(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
	FILEARG("MPI_File_read_ordered", fh);
	return ordered("MPI_File_read_ordered", fh, 0, buf, count, datatype, status);
}

int MPI_File_write_ordered(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
	FILEARG("MPI_File_write_ordered", fh);
	return ordered("MPI_File_write_ordered", fh, 1, buf, count, datatype, status);
}

int MPI_File_read_ordered_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype)
{
	FILEARG("MPI_File_read_ordered_begin", fh);
	if (fh->split)
		return ferr(fh, MPI_ERR_OTHER, "MPI_File_read_ordered_begin", "a split collective is already under way");
	fh->split = 1;
	return fh->splitrc = ordered("MPI_File_read_ordered_begin", fh, 0, buf, count, datatype, &fh->splitst);
}

int MPI_File_write_ordered_begin(MPI_File fh, const void *buf, int count, MPI_Datatype datatype)
{
	FILEARG("MPI_File_write_ordered_begin", fh);
	if (fh->split)
		return ferr(fh, MPI_ERR_OTHER, "MPI_File_write_ordered_begin", "a split collective is already under way");
	fh->split = 1;
	return fh->splitrc = ordered("MPI_File_write_ordered_begin", fh, 1, buf, count, datatype, &fh->splitst);
}

int MPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence)
{
	static const char fn[] = "MPI_File_seek_shared";
	FILEARG(fn, fh);
	int rank, rc = MPI_SUCCESS;
	MPI_Comm_rank(fh->comm, &rank);
	if (rank == 0) {
		MPI_Offset cur, to = offset;
		if (whence == MPI_SEEK_CUR) {
			rc = shfp_add(fh, 0, &cur, 0);
			to = cur + offset;
		} else if (whence == MPI_SEEK_END) {
			struct stat st;
			if (fstat(fh->fd, &st) != 0)
				rc = errno_class(errno);
			else
				to = view_bytes(fh, st.st_size) / fh->et->size + offset;
		} else if (whence != MPI_SEEK_SET) {
			rc = MPI_ERR_ARG;
		}
		if (rc == MPI_SUCCESS && to < 0)
			rc = MPI_ERR_ARG;
		if (rc == MPI_SUCCESS)
			rc = shfp_add(fh, to, &cur, 1);
	}
	if ((rc = collective_rc(fh, rc)) != MPI_SUCCESS)
		return ferr(fh, rc, fn, "offset %lld, whence %d", (long long)offset, whence);
	return MPI_SUCCESS;
}

int MPI_File_get_position_shared(MPI_File fh, MPI_Offset *offset)
{
	FILEARG("MPI_File_get_position_shared", fh);
	int rc = shfp_add(fh, 0, offset, 0);
	if (rc != MPI_SUCCESS)
		return ferr(fh, rc, "MPI_File_get_position_shared", "the shared file pointer cannot be used");
	return MPI_SUCCESS;
}

int MPI_File_seek(MPI_File fh, MPI_Offset offset, int whence)
{
	static const char fn[] = "MPI_File_seek";
	FILEARG(fn, fh);
	MPI_Offset to;
	switch (whence) {
	case MPI_SEEK_SET: to = offset; break;
	case MPI_SEEK_CUR: to = fh->pos + offset; break;
	case MPI_SEEK_END: {
		struct stat st;
		if (fstat(fh->fd, &st) != 0)
			return ferr(fh, errno_class(errno), fn, "%s", strerror(errno));
		to = view_bytes(fh, st.st_size) / fh->et->size + offset;
		break;
	}
	default:
		return ferr(fh, MPI_ERR_ARG, fn, "whence %d: want MPI_SEEK_SET, _CUR or _END", whence);
	}
	if (to < 0)
		return ferr(fh, MPI_ERR_ARG, fn, "the file pointer would be at %lld", (long long)to);
	fh->pos = to;
	return MPI_SUCCESS;
}

int MPI_File_get_position(MPI_File fh, MPI_Offset *offset)
{
	FILEARG("MPI_File_get_position", fh);
	*offset = fh->pos;
	return MPI_SUCCESS;
}

int MPI_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset *disp)
{
	FILEARG("MPI_File_get_byte_offset", fh);
	if (offset < 0)
		return ferr(fh, MPI_ERR_ARG, "MPI_File_get_byte_offset", "offset %lld", (long long)offset);
	MPI_Offset run;
	*disp = file_offset(fh, offset * fh->et->size, &run);
	return MPI_SUCCESS;
}

/* ---- error handlers ---- */

int MPI_File_create_errhandler(MPI_File_errhandler_function *file_errhandler_fn, MPI_Errhandler *errhandler)
{
	return MPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)(void *)file_errhandler_fn, errhandler);
}

int MPI_File_set_errhandler(MPI_File file, MPI_Errhandler errhandler)
{
	NEED_INIT("MPI_File_set_errhandler");
	if (file == MPI_FILE_NULL) {
		default_eh = errhandler;
		return MPI_SUCCESS;
	}
	FILEARG("MPI_File_set_errhandler", file);
	file->eh = errhandler;
	return MPI_SUCCESS;
}

int MPI_File_get_errhandler(MPI_File file, MPI_Errhandler *errhandler)
{
	NEED_INIT("MPI_File_get_errhandler");
	if (file == MPI_FILE_NULL) {
		*errhandler = default_eh;
		return MPI_SUCCESS;
	}
	FILEARG("MPI_File_get_errhandler", file);
	*errhandler = file->eh;
	return MPI_SUCCESS;
}

int MPI_File_call_errhandler(MPI_File fh, int errorcode)
{
	if (fh != MPI_FILE_NULL) {
		FILEARG("MPI_File_call_errhandler", fh);
	}
	ferr(fh, errorcode, "MPI_File_call_errhandler", "error code %d", errorcode);
	return MPI_SUCCESS;
}

/* ---- Fortran's handles ---- */

MPI_Fint MPI_File_c2f(MPI_File fh) { return fh ? fh->fint : 0; }

MPI_File MPI_File_f2c(MPI_Fint fh)
{
	if (fh < 1 || fh > n_files || !files[fh - 1]->used)
		return MPI_FILE_NULL;
	return files[fh - 1];
}
