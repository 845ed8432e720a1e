/* Attributes: keyvals on communicators and datatypes, values set, read,
 * replaced and deleted through the callbacks, copied by MPI_Comm_dup and
 * MPI_Type_dup as the copy callbacks say (MPI_COMM_DUP_FN, none, a
 * callback that declines), deleted when the object is freed (the last set
 * first), a freed keyval living on while a value uses it, a failing
 * callback's error, and MPI_COMM_SELF's delete callbacks run at
 * MPI_Finalize while MPI still works. */
#include "check.h"

static int deleted[16], ndeleted;
static int copied;

static int del_fn(MPI_Comm comm, int keyval, void *val, void *extra)
{
	if (ndeleted < 16)
		deleted[ndeleted++] = (int)(intptr_t)val;
	CHECK(extra == &copied, "delete callback's extra state %p", extra);
	return MPI_SUCCESS;
}

static int copy_plus(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
	copied++;
	*(void **)out = (void *)((intptr_t)in + 100);
	*flag = 1;
	return MPI_SUCCESS;
}

static int copy_declines(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
	*flag = 0;
	return MPI_SUCCESS;
}

static int del_fails(MPI_Comm comm, int keyval, void *val, void *extra) { return MPI_ERR_OTHER; }

static int type_deleted;
static int type_del(MPI_Datatype t, int keyval, void *val, void *extra)
{
	type_deleted += (int)(intptr_t)val;
	return MPI_SUCCESS;
}

static int at_finalize;
static int finalize_hook(MPI_Comm comm, int keyval, void *val, void *extra)
{
	/* MPI still works here: a collective on MPI_COMM_WORLD */
	int one = 1, sum = 0, n = 0;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	at_finalize = comm == MPI_COMM_SELF && sum == n ? 1 : -1;
	return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

	int kplus, kdup, knone, kdecl;
	OK(MPI_Comm_create_keyval(copy_plus, del_fn, &kplus, &copied));
	OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, del_fn, &kdup, &copied));
	OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_fn, &knone, &copied));
	OK(MPI_Comm_create_keyval(copy_declines, MPI_COMM_NULL_DELETE_FN, &kdecl, NULL));
	CHECK(kplus != kdup && kdup != knone && kplus != MPI_KEYVAL_INVALID, "keyvals %x %x %x", kplus, kdup, knone);

	MPI_Comm c;
	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	void *v = NULL;
	int flag = -1;
	OK(MPI_Comm_get_attr(c, kplus, &v, &flag));
	CHECK(flag == 0, "an unset attribute found");
	OK(MPI_Comm_set_attr(c, kplus, (void *)(intptr_t)1));
	OK(MPI_Comm_set_attr(c, kdup, (void *)(intptr_t)2));
	OK(MPI_Comm_set_attr(c, knone, (void *)(intptr_t)3));
	OK(MPI_Comm_set_attr(c, kdecl, (void *)(intptr_t)4));
	OK(MPI_Comm_get_attr(c, kdup, &v, &flag));
	CHECK(flag == 1 && (intptr_t)v == 2, "get: flag %d value %ld", flag, (long)(intptr_t)v);
	/* replacing runs the delete callback on the old value */
	OK(MPI_Comm_set_attr(c, kdup, (void *)(intptr_t)5));
	CHECK(ndeleted == 1 && deleted[0] == 2, "replace deleted %d values, first %d", ndeleted, deleted[0]);

	/* a duplicate: kplus copied + 100, kdup as is, knone and kdecl not */
	MPI_Comm d;
	OK(MPI_Comm_dup(c, &d));
	CHECK(copied == 1, "copy callback called %d times", copied);
	OK(MPI_Comm_get_attr(d, kplus, &v, &flag));
	CHECK(flag && (intptr_t)v == 101, "dup's kplus: %d %ld", flag, (long)(intptr_t)v);
	OK(MPI_Comm_get_attr(d, kdup, &v, &flag));
	CHECK(flag && (intptr_t)v == 5, "dup's kdup: %d %ld", flag, (long)(intptr_t)v);
	OK(MPI_Comm_get_attr(d, knone, &v, &flag));
	CHECK(!flag, "dup has knone");
	OK(MPI_Comm_get_attr(d, kdecl, &v, &flag));
	CHECK(!flag, "dup has kdecl");
	/* predefined keyvals still answer */
	int *ub = NULL;
	OK(MPI_Comm_get_attr(d, MPI_TAG_UB, &ub, &flag));
	CHECK(flag && ub && *ub >= 32767, "MPI_TAG_UB on a duplicate");

	/* delete one, then free: the rest go, the last set first */
	ndeleted = 0;
	OK(MPI_Comm_delete_attr(c, knone));
	CHECK(ndeleted == 1 && deleted[0] == 3, "delete_attr: %d, %d", ndeleted, deleted[0]);
	OK(MPI_Comm_get_attr(c, knone, &v, &flag));
	CHECK(!flag, "a deleted attribute found");
	ndeleted = 0;
	OK(MPI_Comm_free(&c));
	CHECK(ndeleted == 2 && deleted[0] == 5 && deleted[1] == 1, "free: %d deleted: %d %d", ndeleted, deleted[0],
	      deleted[1]);

	/* a freed keyval lives on while a value uses it */
	OK(MPI_Comm_free_keyval(&kplus));
	CHECK(kplus == MPI_KEYVAL_INVALID, "a freed keyval is %x", kplus);
	ndeleted = 0;
	OK(MPI_Comm_free(&d));
	CHECK(ndeleted == 2 && deleted[0] == 5 && deleted[1] == 101, "freeing the duplicate: %d deleted: %d %d",
	      ndeleted, deleted[0], deleted[1]);
	int rc = MPI_Comm_set_attr(MPI_COMM_WORLD, kplus, NULL);
	CHECK(rc != MPI_SUCCESS, "set with a freed keyval succeeded");
	OK(MPI_Comm_free_keyval(&kdup));

	/* a failing delete callback is an error of the call */
	int kfail;
	MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del_fails, &kfail, NULL);
	MPI_Comm_set_attr(MPI_COMM_WORLD, kfail, NULL);
	rc = MPI_Comm_delete_attr(MPI_COMM_WORLD, kfail);
	CHECK(rc != MPI_SUCCESS, "a failing delete callback's error was lost");

	/* the deprecated names */
	int old;
	OK(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &old, NULL));
	OK(MPI_Attr_put(MPI_COMM_WORLD, old, (void *)(intptr_t)7));
	OK(MPI_Attr_get(MPI_COMM_WORLD, old, &v, &flag));
	CHECK(flag && (intptr_t)v == 7, "Attr_get %d %ld", flag, (long)(intptr_t)v);
	OK(MPI_Attr_delete(MPI_COMM_WORLD, old));
	OK(MPI_Keyval_free(&old));

	/* datatypes */
	int kt;
	OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, type_del, &kt, NULL));
	MPI_Datatype t, t2;
	MPI_Type_contiguous(3, MPI_INT, &t);
	OK(MPI_Type_set_attr(t, kt, (void *)(intptr_t)10));
	OK(MPI_Type_dup(t, &t2));
	OK(MPI_Type_get_attr(t2, kt, &v, &flag));
	CHECK(flag && (intptr_t)v == 10, "Type_dup's attribute: %d %ld", flag, (long)(intptr_t)v);
	OK(MPI_Type_free(&t));
	OK(MPI_Type_free(&t2));
	CHECK(type_deleted == 20, "type delete callbacks: %d, want 20", type_deleted);
	OK(MPI_Type_set_attr(MPI_INT, kt, (void *)(intptr_t)1));
	OK(MPI_Type_delete_attr(MPI_INT, kt));
	OK(MPI_Type_free_keyval(&kt));

	/* MPI_Finalize runs MPI_COMM_SELF's delete callbacks first */
	int kfin;
	MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_hook, &kfin, NULL);
	MPI_Comm_set_attr(MPI_COMM_SELF, kfin, NULL);
	MPI_Finalize();
	CHECK(at_finalize == 1, "the MPI_COMM_SELF hook at MPI_Finalize: %d", at_finalize);
	if (failures == 0 && me == 0)
		printf("PASS\n");
	return failures ? 1 : 0;
}
