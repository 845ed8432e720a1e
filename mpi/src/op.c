/* Reductions. Predefined ops work on packed elements of the type's one
 * predefined element type (loads and stores by memcpy: packed pairs are
 * unaligned); user ops get the data in the type's own layout. */
#include <complex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

enum cls { C_NONE, C_INT, C_UINT, C_FLOAT, C_COMPLEX, C_BOOL, C_BYTE, C_PAIR };

/* elem describes a predefined type for reductions. */
struct elem {
	enum cls cls;
	int size; /* of one value (a pair: of its value part) */
	int ival; /* pair: the index part's size (int) */
};

static struct elem elem_of(MPI_Datatype t)
{
	struct elem e = {C_NONE, 0, 0};
	switch (t) {
	case MPI_CHAR: case MPI_SIGNED_CHAR: case MPI_INT8_T: case MPI_INTEGER1:
		e.cls = C_INT, e.size = 1; break;
	case MPI_SHORT: case MPI_INT16_T: case MPI_INTEGER2:
		e.cls = C_INT, e.size = 2; break;
	case MPI_INT: case MPI_INT32_T: case MPI_INTEGER: case MPI_INTEGER4: case MPI_WCHAR: case MPI_LOGICAL:
		e.cls = C_INT, e.size = 4; break;
	case MPI_LONG: case MPI_LONG_LONG_INT: case MPI_INT64_T: case MPI_AINT: case MPI_OFFSET: case MPI_COUNT:
	case MPI_INTEGER8:
		e.cls = C_INT, e.size = 8; break;
	case MPI_UNSIGNED_CHAR: case MPI_UINT8_T:
		e.cls = C_UINT, e.size = 1; break;
	case MPI_UNSIGNED_SHORT: case MPI_UINT16_T:
		e.cls = C_UINT, e.size = 2; break;
	case MPI_UNSIGNED: case MPI_UINT32_T:
		e.cls = C_UINT, e.size = 4; break;
	case MPI_UNSIGNED_LONG: case MPI_UNSIGNED_LONG_LONG: case MPI_UINT64_T:
		e.cls = C_UINT, e.size = 8; break;
	case MPI_FLOAT: case MPI_REAL: case MPI_REAL4:
		e.cls = C_FLOAT, e.size = 4; break;
	case MPI_DOUBLE: case MPI_DOUBLE_PRECISION: case MPI_REAL8:
		e.cls = C_FLOAT, e.size = 8; break;
	case MPI_LONG_DOUBLE:
		e.cls = C_FLOAT, e.size = 16; break;
	case MPI_C_FLOAT_COMPLEX: case MPI_COMPLEX: case MPI_COMPLEX8: case MPI_CXX_FLOAT_COMPLEX:
		e.cls = C_COMPLEX, e.size = 8; break;
	case MPI_C_DOUBLE_COMPLEX: case MPI_DOUBLE_COMPLEX: case MPI_COMPLEX16: case MPI_CXX_DOUBLE_COMPLEX:
		e.cls = C_COMPLEX, e.size = 16; break;
	case MPI_C_BOOL: case MPI_CXX_BOOL:
		e.cls = C_BOOL, e.size = 1; break;
	case MPI_BYTE:
		e.cls = C_BYTE, e.size = 1; break;
	case MPI_FLOAT_INT: e.cls = C_PAIR, e.size = 4, e.ival = 'f'; break;
	case MPI_DOUBLE_INT: e.cls = C_PAIR, e.size = 8, e.ival = 'd'; break;
	case MPI_LONG_INT: e.cls = C_PAIR, e.size = 8, e.ival = 'l'; break;
	case MPI_SHORT_INT: e.cls = C_PAIR, e.size = 2, e.ival = 's'; break;
	case MPI_2INT: e.cls = C_PAIR, e.size = 4, e.ival = 'i'; break;
	case MPI_LONG_DOUBLE_INT: e.cls = C_PAIR, e.size = 16, e.ival = 'D'; break;
	/* Fortran's pairs: the index is of the value's type */
	case MPI_2INTEGER: e.cls = C_PAIR, e.size = 4, e.ival = 'I'; break;
	case MPI_2REAL: e.cls = C_PAIR, e.size = 4, e.ival = 'R'; break;
	case MPI_2DOUBLE_PRECISION: e.cls = C_PAIR, e.size = 8, e.ival = 'P'; break;
	}
	return e;
}

static int allowed(MPI_Op op, enum cls c)
{
	switch (op) {
	case MPI_MAX: case MPI_MIN:
		return c == C_INT || c == C_UINT || c == C_FLOAT;
	case MPI_SUM: case MPI_PROD:
		return c == C_INT || c == C_UINT || c == C_FLOAT || c == C_COMPLEX;
	case MPI_LAND: case MPI_LOR: case MPI_LXOR:
		return c == C_INT || c == C_UINT || c == C_BOOL;
	case MPI_BAND: case MPI_BOR: case MPI_BXOR:
		return c == C_INT || c == C_UINT || c == C_BYTE;
	case MPI_MINLOC: case MPI_MAXLOC:
		return c == C_PAIR;
	case MPI_REPLACE: case MPI_NO_OP:
		return 1;
	}
	return 0;
}

int op_check(MPI_Op op, struct dtype *d)
{
	if (op_get(op))
		return MPI_SUCCESS;
	if ((unsigned)op < (unsigned)MPI_MAX || (unsigned)op > (unsigned)MPI_NO_OP)
		return MPI_ERR_OP;
	if (d->size == 0)
		return MPI_SUCCESS;
	if (!d->basic)
		return MPI_ERR_OP;
	struct elem e = elem_of(d->basic);
	if (e.cls == C_NONE || !allowed(op, e.cls))
		return MPI_ERR_OP;
	return MPI_SUCCESS;
}

#define ARITH(T)                                                                                   \
	static void arith_##T(MPI_Op op, size_t n, const uint8_t *in, uint8_t *io)                 \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			T a, b;                                                                    \
			memcpy(&a, in + i * sizeof(T), sizeof(T));                                 \
			memcpy(&b, io + i * sizeof(T), sizeof(T));                                 \
			switch (op) {                                                              \
			case MPI_MAX: b = a > b ? a : b; break;                                    \
			case MPI_MIN: b = a < b ? a : b; break;                                    \
			case MPI_SUM: b = a + b; break;                                            \
			case MPI_PROD: b = a * b; break;                                           \
			case MPI_LAND: b = (a != 0) && (b != 0); break;                            \
			case MPI_LOR: b = (a != 0) || (b != 0); break;                             \
			case MPI_LXOR: b = (a != 0) != (b != 0); break;                            \
			case MPI_REPLACE: b = a; break;                                            \
			}                                                                          \
			memcpy(io + i * sizeof(T), &b, sizeof(T));                                 \
		}                                                                                  \
	}

#define BITS(T)                                                                                    \
	static void bits_##T(MPI_Op op, size_t n, const uint8_t *in, uint8_t *io)                  \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			T a, b;                                                                    \
			memcpy(&a, in + i * sizeof(T), sizeof(T));                                 \
			memcpy(&b, io + i * sizeof(T), sizeof(T));                                 \
			switch (op) {                                                              \
			case MPI_BAND: b = a & b; break;                                           \
			case MPI_BOR: b = a | b; break;                                            \
			case MPI_BXOR: b = a ^ b; break;                                           \
			}                                                                          \
			memcpy(io + i * sizeof(T), &b, sizeof(T));                                 \
		}                                                                                  \
	}

#define CPLX(T)                                                                                    \
	static void cplx_##T(MPI_Op op, size_t n, const uint8_t *in, uint8_t *io)                  \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			_Complex T a, b;                                                           \
			memcpy(&a, in + i * sizeof a, sizeof a);                                   \
			memcpy(&b, io + i * sizeof a, sizeof a);                                   \
			b = op == MPI_SUM ? a + b : op == MPI_PROD ? a * b : a;                    \
			memcpy(io + i * sizeof a, &b, sizeof a);                                   \
		}                                                                                  \
	}

#define LOC(T, name)                                                                               \
	static void loc_##name(MPI_Op op, size_t n, size_t stride, const uint8_t *in, uint8_t *io)  \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			T a, b;                                                                    \
			int ia, ib;                                                                \
			memcpy(&a, in + i * stride, sizeof(T));                                    \
			memcpy(&b, io + i * stride, sizeof(T));                                    \
			memcpy(&ia, in + i * stride + sizeof(T), sizeof(int));                     \
			memcpy(&ib, io + i * stride + sizeof(T), sizeof(int));                     \
			int take = op == MPI_MINLOC ? (a < b || (a == b && ia < ib))               \
						    : (a > b || (a == b && ia < ib));              \
			if (take) {                                                                \
				memcpy(io + i * stride, &a, sizeof(T));                            \
				memcpy(io + i * stride + sizeof(T), &ia, sizeof(int));             \
			}                                                                          \
		}                                                                                  \
	}

/* LOC2 is LOC for Fortran's pairs (MPI_2INTEGER, MPI_2REAL,
 * MPI_2DOUBLE_PRECISION), whose index is of the value's type. */
#define LOC2(T, name)                                                                              \
	static void loc2_##name(MPI_Op op, size_t n, const uint8_t *in, uint8_t *io)               \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			T a[2], b[2];                                                              \
			memcpy(a, in + i * sizeof a, sizeof a);                                    \
			memcpy(b, io + i * sizeof a, sizeof a);                                    \
			int take = op == MPI_MINLOC ? (a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]))  \
						    : (a[0] > b[0] || (a[0] == b[0] && a[1] < b[1])); \
			if (take)                                                                  \
				memcpy(io + i * sizeof a, a, sizeof a);                            \
		}                                                                                  \
	}

typedef long double ldouble;
ARITH(int8_t)
ARITH(int16_t)
ARITH(int32_t)
ARITH(int64_t)
ARITH(uint8_t)
ARITH(uint16_t)
ARITH(uint32_t)
ARITH(uint64_t)
ARITH(float)
ARITH(double)
ARITH(ldouble)
static void arith_bool(MPI_Op op, size_t n, const uint8_t *in, uint8_t *io)
{
	for (size_t i = 0; i < n; i++) {
		bool a = in[i] != 0, b = io[i] != 0;
		io[i] = op == MPI_LAND ? a && b : op == MPI_LOR ? a || b : op == MPI_LXOR ? a != b : a;
	}
}
BITS(uint8_t)
BITS(uint16_t)
BITS(uint32_t)
BITS(uint64_t)
CPLX(float)
CPLX(double)
LOC(float, f)
LOC(double, d)
LOC(long, l)
LOC(short, s)
LOC(int, i)
LOC(ldouble, D)
LOC2(int32_t, I)
LOC2(float, R)
LOC2(double, P)

/* op_apply computes inout = in op inout over count elements of d, both
 * packed. */
int op_apply(MPI_Op op, struct dtype *d, int count, const uint8_t *in, uint8_t *inout)
{
	struct op *u = op_get(op);
	if (u) {
		MPI_Datatype h = d->handle;
		int n = count;
		if (d->contig) {
			u->fn((void *)in, inout, &n, &h);
			return MPI_SUCCESS;
		}
		/* the user function sees the type's layout */
		MPI_Aint ext = d->ub - d->lb, span = (MPI_Aint)count * ext + (d->true_ub - d->lb);
		uint8_t *a = calloc(span > 0 ? span : 1, 1), *b = calloc(span > 0 ? span : 1, 1);
		if (!a || !b)
			cmpi_die(1, "out of memory");
		dt_unpack(in, count, d, a - d->lb);
		dt_unpack(inout, count, d, b - d->lb);
		u->fn(a - d->lb, b - d->lb, &n, &h);
		dt_pack(b - d->lb, count, d, inout);
		free(a);
		free(b);
		return MPI_SUCCESS;
	}
	if (op == MPI_NO_OP)
		return MPI_SUCCESS;
	if (d->size == 0 || count == 0)
		return MPI_SUCCESS;
	struct dtype *bd = dt_any(d->basic);
	struct elem e = elem_of(d->basic);
	size_t n = (size_t)count * d->size / bd->size;
	if (op == MPI_REPLACE) {
		memcpy(inout, in, (size_t)count * d->size);
		return MPI_SUCCESS;
	}
	switch (e.cls) {
	case C_INT:
	case C_UINT:
		if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) {
			switch (e.size) {
			case 1: bits_uint8_t(op, n, in, inout); break;
			case 2: bits_uint16_t(op, n, in, inout); break;
			case 4: bits_uint32_t(op, n, in, inout); break;
			case 8: bits_uint64_t(op, n, in, inout); break;
			}
		} else if (e.cls == C_INT) {
			switch (e.size) {
			case 1: arith_int8_t(op, n, in, inout); break;
			case 2: arith_int16_t(op, n, in, inout); break;
			case 4: arith_int32_t(op, n, in, inout); break;
			case 8: arith_int64_t(op, n, in, inout); break;
			}
		} else {
			switch (e.size) {
			case 1: arith_uint8_t(op, n, in, inout); break;
			case 2: arith_uint16_t(op, n, in, inout); break;
			case 4: arith_uint32_t(op, n, in, inout); break;
			case 8: arith_uint64_t(op, n, in, inout); break;
			}
		}
		break;
	case C_BYTE:
		bits_uint8_t(op, n, in, inout);
		break;
	case C_BOOL:
		arith_bool(op, n, in, inout);
		break;
	case C_FLOAT:
		if (e.size == 4)
			arith_float(op, n, in, inout);
		else if (e.size == 8)
			arith_double(op, n, in, inout);
		else
			arith_ldouble(op, n, in, inout);
		break;
	case C_COMPLEX:
		if (e.size == 8)
			cplx_float(op, n, in, inout);
		else
			cplx_double(op, n, in, inout);
		break;
	case C_PAIR: {
		size_t stride = bd->size;
		switch (e.ival) {
		case 'f': loc_f(op, n, stride, in, inout); break;
		case 'd': loc_d(op, n, stride, in, inout); break;
		case 'l': loc_l(op, n, stride, in, inout); break;
		case 's': loc_s(op, n, stride, in, inout); break;
		case 'i': loc_i(op, n, stride, in, inout); break;
		case 'D': loc_D(op, n, stride, in, inout); break;
		case 'I': loc2_I(op, n, in, inout); break;
		case 'R': loc2_R(op, n, in, inout); break;
		case 'P': loc2_P(op, n, in, inout); break;
		}
		break;
	}
	default:
		return MPI_ERR_OP;
	}
	return MPI_SUCCESS;
}

int MPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
	if (!user_fn || !op)
		return cmpi_err(NULL, MPI_ERR_ARG, "MPI_Op_create", "null argument");
	*op = op_new(user_fn, commute);
	return MPI_SUCCESS;
}

int MPI_Op_free(MPI_Op *op)
{
	struct op *o = op_get(*op);
	if (!o || o->released)
		return cmpi_err(NULL, MPI_ERR_OP, "MPI_Op_free", "op %#x is not a user op", (unsigned)*op);
	/* MPI: an op freed while a non-blocking reduction uses it lives on
	 * until that completes */
	if (o->holds > 0)
		o->released = 1;
	else
		o->used = 0;
	*op = MPI_OP_NULL;
	return MPI_SUCCESS;
}

void op_hold(MPI_Op op)
{
	struct op *o = op_get(op);
	if (o)
		o->holds++;
}

void op_release(MPI_Op op)
{
	struct op *o = op_get(op);
	if (o && --o->holds == 0 && o->released)
		o->used = 0;
}

int MPI_Op_commutative(MPI_Op op, int *commute)
{
	struct op *o = op_get(op);
	*commute = o ? o->commute : 1;
	return MPI_SUCCESS;
}

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op)
{
	struct dtype *d = dt_get(datatype);
	if (!d)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Reduce_local", "datatype %#x", (unsigned)datatype);
	if (op_check(op, d))
		return cmpi_err(NULL, MPI_ERR_OP, "MPI_Reduce_local", "op %#x on datatype %#x", (unsigned)op, (unsigned)datatype);
	size_t n = (size_t)count * d->size;
	uint8_t *a = malloc(n + 1), *b = malloc(n + 1);
	dt_pack(inbuf, count, d, a);
	dt_pack(inoutbuf, count, d, b);
	op_apply(op, d, count, a, b);
	dt_unpack(b, count, d, inoutbuf);
	free(a);
	free(b);
	return MPI_SUCCESS;
}
