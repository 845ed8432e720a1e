/* Bad input gets MPI's error class, never a crash: with ERRORS_RETURN,
 * forged handles (communicator, datatype, request, group, op), a freed or
 * uncommitted datatype, negative counts, tags out of range, ranks and
 * roots out of range, an op on a type it does not apply to. With an
 * argument "fatal", the same forged communicator under
 * ERRORS_ARE_FATAL: the job fails with the reason (exit 1). */
#include "check.h"

#define EXPECT(call, cls)                                                                          \
	do {                                                                                       \
		int rc_ = (call), c_;                                                              \
		MPI_Error_class(rc_, &c_);                                                         \
		CHECK(c_ == (cls), "%s returned %d, want class %d", #call, rc_, cls);              \
	} while (0)

int main(int argc, char **argv)
{
	int size, v = 1, w;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc > 1 && !strcmp(argv[1], "fatal")) {
		MPI_Send(&v, 1, MPI_INT, 0, 0, (MPI_Comm)0x7badc0de);
		printf("FAIL rank %d: a forged communicator under ERRORS_ARE_FATAL returned\n", me);
		return 0;
	}
	OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	MPI_Comm forged = (MPI_Comm)0x7badc0de;
	EXPECT(MPI_Send(&v, 1, MPI_INT, 0, 0, forged), MPI_ERR_COMM);
	EXPECT(MPI_Send(&v, 1, MPI_INT, 0, 0, (MPI_Comm)0x84000077), MPI_ERR_COMM); /* well-formed, never made */
	EXPECT(MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM);
	EXPECT(MPI_Barrier(forged), MPI_ERR_COMM);
	EXPECT(MPI_Comm_rank(forged, &w), MPI_ERR_COMM);
	EXPECT(MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
	EXPECT(MPI_Recv(&v, -3, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_COUNT);
	EXPECT(MPI_Send(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG);
	EXPECT(MPI_Send(&v, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG);
	EXPECT(MPI_Recv(&v, 1, MPI_INT, 0, -7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_TAG);
	EXPECT(MPI_Send(&v, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
	EXPECT(MPI_Send(&v, 1, MPI_INT, -4, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
	EXPECT(MPI_Send(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
	EXPECT(MPI_Recv(&v, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPI_ERR_RANK);
	EXPECT(MPI_Send(&v, 1, (MPI_Datatype)0x12345678, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
	EXPECT(MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
	EXPECT(MPI_Send(&v, 1, (MPI_Datatype)0x4c000499, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE); /* a builtin-looking one */
	MPI_Datatype t, kept;
	OK(MPI_Type_contiguous(2, MPI_INT, &t));
	EXPECT(MPI_Send(&v, 1, t, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE); /* not committed */
	OK(MPI_Type_commit(&t));
	kept = t;
	OK(MPI_Type_free(&t));
	EXPECT(MPI_Send(&v, 1, kept, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE); /* freed */
	EXPECT(MPI_Type_free(&kept), MPI_ERR_TYPE);
	MPI_Datatype pre = MPI_INT;
	EXPECT(MPI_Type_free(&pre), MPI_ERR_TYPE);
	EXPECT(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
	EXPECT(MPI_Bcast(&v, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
	EXPECT(MPI_Reduce(&v, &w, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD), MPI_ERR_ROOT);
	EXPECT(MPI_Allreduce(&v, &w, 1, MPI_INT, (MPI_Op)0x12345678, MPI_COMM_WORLD), MPI_ERR_OP);
	double d = 1, e;
	EXPECT(MPI_Allreduce(&d, &e, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
	EXPECT(MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD), MPI_ERR_OP);
	EXPECT(MPI_Allreduce(&v, &w, -2, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT);
	MPI_Request r = (MPI_Request)0x2badbeef;
	EXPECT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
	r = (MPI_Request)0xac000fff;
	EXPECT(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
	r = MPI_REQUEST_NULL;
	OK(MPI_Wait(&r, MPI_STATUS_IGNORE)); /* a null request is fine */
	MPI_Group g;
	EXPECT(MPI_Group_size((MPI_Group)0x1badbad1, &w), MPI_ERR_GROUP);
	OK(MPI_Comm_group(MPI_COMM_WORLD, &g));
	int bad = size + 3;
	MPI_Group g2;
	EXPECT(MPI_Group_incl(g, 1, &bad, &g2), MPI_ERR_RANK);
	EXPECT(MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)0x77), MPI_ERR_ARG);
	MPI_Group_free(&g);
	/* after all that, the library still works */
	int sum;
	OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	CHECK(sum == size * (size - 1) / 2, "Allreduce after bad input: %d", sum);
	DONE();
}
