/* MPI-IO: open (missing, created, exclusive, read-only, with ROMIO's
 * "ufs:" prefix), writes and reads at explicit offsets and at the file
 * pointer, independent and collective, a strided file view (each rank
 * every size-th int: the ranks' writes interleave in the file), a
 * non-contiguous memory type, seek (SET, CUR, END through the view),
 * byte offsets, sizes, preallocation, sync, errors returned by default
 * and through a user file error handler, DELETE_ON_CLOSE and
 * File_delete, Fortran handles, non-blocking calls, split collectives,
 * and the shared file pointer (write_shared, write_ordered and
 * read_ordered, seek_shared; its hidden file gone after the close).
 * argv[1] is a directory every rank sees. */
#include <dirent.h>

#include "check.h"

static int handler_calls, handler_code;

static void on_file_error(MPI_File *fh, int *code, ...)
{
	(void)fh;
	handler_calls++;
	handler_code = *code;
}

static int class_of(int rc)
{
	int cls;
	MPI_Error_class(rc, &cls);
	return cls;
}

int main(int argc, char **argv)
{
	int size, buf[100], got[100];
	char name[512], name2[512], prefixed[520];
	MPI_File fh, fh2;
	MPI_Status st;
	MPI_Offset off;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 2) {
		printf("FAIL usage: io DIR\n");
		DONE();
	}
	snprintf(name, sizeof name, "%s/data", argv[1]);
	snprintf(name2, sizeof name2, "%s/scratch", argv[1]);
	snprintf(prefixed, sizeof prefixed, "ufs:%s", name);

	/* a missing file: an error returned (files' default handler) */
	int rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE, "open of a missing file: class %d", class_of(rc));
	rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
	CHECK(class_of(rc) == MPI_ERR_AMODE, "RDONLY with CREATE: class %d", class_of(rc));

	OK(MPI_File_open(MPI_COMM_WORLD, prefixed, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
	int amode;
	OK(MPI_File_get_amode(fh, &amode));
	CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "amode %d", amode);
	MPI_File back = MPI_File_f2c(MPI_File_c2f(fh));
	CHECK(back == fh, "File_f2c(File_c2f(fh)) is another handle");

	/* each rank's block at its byte offset, collectively; the neighbour's
	 * read back */
	for (int i = 0; i < 100; i++)
		buf[i] = me * 1000 + i;
	OK(MPI_File_write_at_all(fh, (MPI_Offset)me * 400, buf, 100, MPI_INT, &st));
	int n;
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(n == 100, "write_at_all status: %d ints", n);
	OK(MPI_File_sync(fh));
	int right = (me + 1) % size;
	OK(MPI_File_read_at(fh, (MPI_Offset)right * 400, got, 100, MPI_INT, &st));
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(n == 100 && got[0] == right * 1000 && got[99] == right * 1000 + 99, "read_at: %d ints, %d..%d", n,
	      got[0], got[99]);
	OK(MPI_File_get_size(fh, &off));
	CHECK(off == (MPI_Offset)size * 400, "size %lld", (long long)off);
	/* at the end of the file: nothing, and no error */
	OK(MPI_File_read_at(fh, (MPI_Offset)size * 400, got, 10, MPI_INT, &st));
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(n == 0, "a read at the end: %d ints", n);

	/* every other int of memory (a vector) written contiguously */
	MPI_Datatype every2;
	MPI_Type_vector(50, 1, 2, MPI_INT, &every2);
	MPI_Type_commit(&every2);
	OK(MPI_File_write_at(fh, (MPI_Offset)me * 400, buf, 1, every2, MPI_STATUS_IGNORE));
	MPI_Barrier(MPI_COMM_WORLD);
	OK(MPI_File_read_at(fh, (MPI_Offset)me * 400, got, 50, MPI_INT, MPI_STATUS_IGNORE));
	CHECK(got[0] == buf[0] && got[1] == buf[2] && got[49] == buf[98], "a vector from memory: %d %d %d", got[0],
	      got[1], got[49]);
	/* and read back into a vector: the even ints of got */
	memset(got, 0, sizeof got);
	OK(MPI_File_read_at(fh, (MPI_Offset)me * 400, got, 1, every2, &st));
	MPI_Get_count(&st, every2, &n);
	CHECK(n == 1 && got[0] == buf[0] && got[2] == buf[2] && got[1] == 0, "a vector read: count %d, %d %d %d", n,
	      got[0], got[1], got[2]);
	MPI_Type_free(&every2);

	/* a strided view: rank r sees every size-th int from int r */
	MPI_Datatype strided;
	MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)size * sizeof(int), &strided);
	MPI_Type_commit(&strided);
	OK(MPI_File_set_view(fh, (MPI_Offset)me * sizeof(int), MPI_INT, strided, "native", MPI_INFO_NULL));
	for (int i = 0; i < 50; i++)
		buf[i] = me + i * 100;
	OK(MPI_File_write_all(fh, buf, 50, MPI_INT, MPI_STATUS_IGNORE));
	OK(MPI_File_get_position(fh, &off));
	CHECK(off == 50, "position after 50 ints: %lld", (long long)off);
	OK(MPI_File_get_byte_offset(fh, 3, &off));
	CHECK(off == (MPI_Offset)(me + 3 * size) * 4, "byte offset of etype 3: %lld", (long long)off);
	OK(MPI_File_seek(fh, 10, MPI_SEEK_SET));
	OK(MPI_File_read(fh, got, 5, MPI_INT, MPI_STATUS_IGNORE));
	CHECK(got[0] == me + 1000 && got[4] == me + 1400, "read through the view: %d %d", got[0], got[4]);
	OK(MPI_File_seek(fh, -3, MPI_SEEK_CUR));
	OK(MPI_File_get_position(fh, &off));
	CHECK(off == 12, "SEEK_CUR: %lld", (long long)off);
	OK(MPI_File_seek(fh, 0, MPI_SEEK_END));
	OK(MPI_File_get_position(fh, &off));
	CHECK(off == 100, "SEEK_END through the view: %lld etypes", (long long)off);
	rc = MPI_File_seek(fh, -1, MPI_SEEK_SET);
	CHECK(class_of(rc) == MPI_ERR_ARG, "a seek below 0: class %d", class_of(rc));
	MPI_Offset disp;
	MPI_Datatype et, ft;
	char rep[MPI_MAX_DATAREP_STRING];
	OK(MPI_File_get_view(fh, &disp, &et, &ft, rep));
	CHECK(disp == (MPI_Offset)me * 4 && et == MPI_INT && strcmp(rep, "native") == 0, "get_view: %lld %#x %s",
	      (long long)disp, (unsigned)et, rep);
	MPI_Aint lb, ext;
	MPI_Type_get_extent(ft, &lb, &ext);
	CHECK(ext == (MPI_Aint)size * 4, "the view's filetype: extent %ld", (long)ext);
	MPI_Type_free(&ft);
	rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL);
	CHECK(class_of(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "external32: class %d", class_of(rc));
	MPI_Type_free(&strided);

	/* the interleaving, read whole through the default view */
	OK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
	OK(MPI_File_read_at_all(fh, 0, got, 100, MPI_INT, MPI_STATUS_IGNORE));
	int interleaved = 1;
	for (int i = 0; i < 100; i++)
		if (i / size < 50 && got[i] != i % size + (i / size) * 100)
			interleaved = 0;
	CHECK(interleaved, "the ranks' strided writes do not interleave: %d %d %d", got[0], got[1], got[2]);
	OK(MPI_File_close(&fh));
	CHECK(fh == MPI_FILE_NULL, "close leaves MPI_FILE_NULL");

	/* exclusive creation of an existing file; read-only writes */
	rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
	CHECK(class_of(rc) == MPI_ERR_FILE_EXISTS, "EXCL on an existing file: class %d", class_of(rc));
	OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
	rc = MPI_File_write(fh, buf, 1, MPI_INT, MPI_STATUS_IGNORE);
	CHECK(class_of(rc) == MPI_ERR_ACCESS, "a write to a read-only file: class %d", class_of(rc));
	OK(MPI_File_read(fh, got, 2, MPI_INT, MPI_STATUS_IGNORE));
	CHECK(got[0] == 0 && got[1] == 1 % size + (1 / size) * 100, "read at the file pointer: %d %d", got[0], got[1]);
	OK(MPI_File_close(&fh));

	/* sizes */
	OK(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
	OK(MPI_File_set_size(fh, 0));
	OK(MPI_File_get_size(fh, &off));
	CHECK(off == 0, "set_size 0: %lld", (long long)off);
	MPI_Barrier(MPI_COMM_WORLD); /* every rank has looked before the size changes again */
	OK(MPI_File_preallocate(fh, 4096));
	OK(MPI_File_get_size(fh, &off));
	CHECK(off >= 4096, "preallocate 4096: %lld", (long long)off);
	OK(MPI_File_close(&fh));
	OK(MPI_Barrier(MPI_COMM_WORLD));
	if (me == 0)
		OK(MPI_File_delete(name, MPI_INFO_NULL));
	MPI_Barrier(MPI_COMM_WORLD);
	rc = MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE, "open after File_delete: class %d", class_of(rc));

	/* DELETE_ON_CLOSE */
	OK(MPI_File_open(MPI_COMM_WORLD, name2, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
			 MPI_INFO_NULL, &fh2));
	OK(MPI_File_write_at(fh2, me, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE));
	OK(MPI_File_close(&fh2));
	rc = MPI_File_open(MPI_COMM_WORLD, name2, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh2);
	CHECK(class_of(rc) == MPI_ERR_NO_SUCH_FILE, "DELETE_ON_CLOSE left the file: class %d", class_of(rc));

	/* non-blocking calls and split collectives */
	char name3[512];
	snprintf(name3, sizeof name3, "%s/shared", argv[1]);
	OK(MPI_File_open(MPI_COMM_WORLD, name3, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
	MPI_Request rq;
	buf[0] = me + 7;
	OK(MPI_File_iwrite_at(fh, (MPI_Offset)me * 4, buf, 1, MPI_INT, &rq));
	OK(MPI_Wait(&rq, &st));
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(n == 1 && rq == MPI_REQUEST_NULL, "iwrite_at: count %d", n);
	OK(MPI_File_sync(fh));
	MPI_Barrier(MPI_COMM_WORLD);
	OK(MPI_File_iread_at(fh, (MPI_Offset)right * 4, got, 1, MPI_INT, &rq));
	OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	CHECK(got[0] == right + 7, "iread_at: %d", got[0]);
	OK(MPI_File_write_at_all_begin(fh, (MPI_Offset)me * 4, buf, 1, MPI_INT));
	rc = MPI_File_read_all_begin(fh, got, 1, MPI_INT);
	CHECK(class_of(rc) != MPI_SUCCESS, "a second split collective began on one file");
	OK(MPI_File_write_at_all_end(fh, buf, &st));
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(n == 1, "write_at_all_end: count %d", n);

	/* the shared file pointer: one int each in some order, then the
	 * ranks' runs in rank order */
	OK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
	OK(MPI_File_write_shared(fh, &me, 1, MPI_INT, MPI_STATUS_IGNORE));
	MPI_Barrier(MPI_COMM_WORLD);
	OK(MPI_File_get_position_shared(fh, &off));
	CHECK(off == size, "the shared pointer after %d write_shared: %lld", size, (long long)off);
	MPI_Barrier(MPI_COMM_WORLD); /* every rank has read it before it moves on */
	for (int i = 0; i <= me; i++)
		buf[i] = me;
	OK(MPI_File_write_ordered(fh, buf, me + 1, MPI_INT, MPI_STATUS_IGNORE));
	OK(MPI_File_sync(fh));
	OK(MPI_File_read_at(fh, 0, got, size + size * (size + 1) / 2, MPI_INT, MPI_STATUS_IGNORE));
	int seen = 0;
	for (int i = 0; i < size; i++)
		seen |= 1 << got[i];
	CHECK(seen == (1 << size) - 1, "write_shared: the ranks' ints are not each there once (%#x)", seen);
	int k = size, inorder = 1;
	for (int r = 0; r < size; r++)
		for (int i = 0; i <= r; i++)
			if (got[k++] != r)
				inorder = 0;
	CHECK(inorder, "write_ordered: the runs are not in rank order");
	OK(MPI_File_seek_shared(fh, size, MPI_SEEK_SET));
	memset(got, 0xff, sizeof got);
	OK(MPI_File_read_ordered(fh, got, me + 1, MPI_INT, &st));
	MPI_Get_count(&st, MPI_INT, &n);
	CHECK(n == me + 1 && got[0] == me && got[me] == me, "read_ordered: %d ints, %d..%d", n, got[0], got[me]);
	OK(MPI_File_close(&fh));
	if (me == 0) {
		DIR *d = opendir(argv[1]);
		struct dirent *e;
		while (d && (e = readdir(d)))
			CHECK(!strstr(e->d_name, "cosched-shfp"), "the shared file pointer's file is left: %s", e->d_name);
		if (d)
			closedir(d);
	}

	/* a user error handler on MPI_FILE_NULL: what opens get */
	MPI_Errhandler eh, old;
	OK(MPI_File_create_errhandler(on_file_error, &eh));
	OK(MPI_File_get_errhandler(MPI_FILE_NULL, &old));
	CHECK(old == MPI_ERRORS_RETURN, "files' default handler is not MPI_ERRORS_RETURN");
	OK(MPI_File_set_errhandler(MPI_FILE_NULL, eh));
	MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
	CHECK(handler_calls == 1 && handler_code == MPI_ERR_NO_SUCH_FILE, "the file handler: %d calls, code %d",
	      handler_calls, handler_code);
	OK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
	MPI_Errhandler_free(&eh);
	DONE();
}
