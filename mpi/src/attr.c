/* Attributes: keyvals and the values programs and libraries attach to
 * communicators and datatypes (MPI 4.0, 7.7). Libraries keep their
 * per-communicator state this way, and a delete callback on
 * MPI_COMM_SELF is the standard hook to run at MPI_Finalize, so both are
 * implemented as MPI defines them: a duplicate gets what the copy
 * callbacks return, a freed object's values go through the delete
 * callbacks (last set, first deleted), and a freed keyval lives on while
 * a value uses it. The predefined keyvals (MPI_TAG_UB, …) are answered
 * from init.c's values (predefined_attr).
 *
 * Fortran programs reach these through MPICH's own Fortran bindings
 * (libmpichfort.so.12), which call MPICH's internal MPII_ entry points
 * below: a value set from Fortran is an integer, not a pointer, and a
 * Fortran callback is called through the binding's proxy (MPI 4.0,
 * 19.3.7). */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

enum { KV_COMM = 1, KV_TYPE = 2 };

/* A keyval's handle: a kind's prefix and its index + 1, distinct from
 * MPICH's predefined ones (0x644000xx) and from MPI_KEYVAL_INVALID. */
#define KV_COMM_BASE 0x24400000
#define KV_TYPE_BASE 0x24c00000
#define KV_MASK 0x000fffff

/* The kind of value an attribute holds, as MPICH's Fortran bindings say
 * it (MPIR_Attr_type): C's pointer, Fortran's INTEGER(KIND=
 * MPI_ADDRESS_KIND) or Fortran's INTEGER. */
enum { ATTR_PTR = 0, ATTR_AINT = 1, ATTR_INT = 3 };

/* The bindings' proxies, which call a Fortran callback with Fortran's
 * arguments (MPICH's MPII_Attr_copy_proxy and MPII_Attr_delete_proxy). */
typedef int copy_proxy(void *user, int handle, int keyval, void *extra, int type, void *val, void **out, int *flag);
typedef int delete_proxy(void *user, int handle, int keyval, int type, void *val, void *extra);

struct keyval {
	int used, kind, refs, freed;
	void *copy, *del; /* the kind's callback types; NULL: none */
	void *extra;
	copy_proxy *copy_proxy; /* set by a Fortran binding: the callbacks are Fortran's */
	delete_proxy *delete_proxy;
};

struct attr {
	int keyval, type;
	void *val;
	MPI_Aint *box; /* a Fortran integer's value, for C's get: its address (type != ATTR_PTR) */
};

/* The per-object list (struct comm's and struct dtype's attrs). */
struct attrs {
	int n, cap;
	struct attr *a;
};

/* keyvals: the one table of this process's keyvals (the library is one
 * thread: MPI_THREAD_SERIALIZED at most). */
static struct keyval *keyvals;
static int nkeyvals;

static struct keyval *kv_get(int h, int kind)
{
	int base = kind == KV_COMM ? KV_COMM_BASE : KV_TYPE_BASE;
	if ((h & ~KV_MASK) != base)
		return NULL;
	int i = (h & KV_MASK) - 1;
	if (i < 0 || i >= nkeyvals || !keyvals[i].used || keyvals[i].kind != kind)
		return NULL;
	return &keyvals[i];
}

static int kv_new(int kind, void *copy, void *del, void *extra)
{
	int i = 0;
	while (i < nkeyvals && keyvals[i].used)
		i++;
	if (i == nkeyvals) {
		if (nkeyvals >= KV_MASK - 1)
			cmpi_die(1, "more than %d keyvals", KV_MASK - 1);
		struct keyval *k = realloc(keyvals, (size_t)(nkeyvals + 1) * sizeof *k);
		if (!k)
			cmpi_die(1, "out of memory");
		keyvals = k;
		nkeyvals++;
	}
	keyvals[i] = (struct keyval){1, kind, 1, 0, copy, del, extra, NULL, NULL};
	return (kind == KV_COMM ? KV_COMM_BASE : KV_TYPE_BASE) | (i + 1);
}

static void kv_unref(struct keyval *k)
{
	if (--k->refs == 0)
		k->used = 0;
}

static int kv_free(const char *fn, int *h, int kind)
{
	NEED_INIT(fn);
	struct keyval *k = kv_get(*h, kind);
	if (!k || k->freed)
		return cmpi_err(NULL, MPI_ERR_KEYVAL, fn, "keyval %#x", (unsigned)*h);
	k->freed = 1;
	kv_unref(k);
	*h = MPI_KEYVAL_INVALID;
	return MPI_SUCCESS;
}

static struct attr *find(struct attrs *as, int keyval)
{
	for (int i = 0; as && i < as->n; i++)
		if (as->a[i].keyval == keyval)
			return &as->a[i];
	return NULL;
}

/* box keeps a Fortran integer's value where C's get can point. */
static void box(struct attr *a)
{
	if (a->type == ATTR_PTR) {
		free(a->box);
		a->box = NULL;
		return;
	}
	if (!a->box && !(a->box = malloc(sizeof *a->box)))
		cmpi_die(1, "out of memory");
	*a->box = (MPI_Aint)a->val;
}

static void add(struct attrs **asp, int keyval, void *val, int type)
{
	struct attrs *as = *asp;
	if (!as) {
		as = calloc(1, sizeof *as);
		if (!as)
			cmpi_die(1, "out of memory");
		*asp = as;
	}
	if (as->n == as->cap) {
		int cap = as->cap ? 2 * as->cap : 4;
		struct attr *a = realloc(as->a, (size_t)cap * sizeof *a);
		if (!a)
			cmpi_die(1, "out of memory");
		as->a = a;
		as->cap = cap;
	}
	struct attr *a = &as->a[as->n++];
	*a = (struct attr){keyval, type, val, NULL};
	box(a);
}

static void drop(struct attrs *as, struct attr *a)
{
	free(a->box);
	int i = (int)(a - as->a);
	memmove(&as->a[i], &as->a[i + 1], (size_t)(as->n - i - 1) * sizeof *a);
	as->n--;
}

/* call_delete runs a value's delete callback. */
static int call_delete(int kind, int handle, struct keyval *k, struct attr *a)
{
	if (!k->del)
		return MPI_SUCCESS;
	if (k->delete_proxy)
		return k->delete_proxy(k->del, handle, a->keyval, a->type, a->val, k->extra);
	if (kind == KV_COMM)
		return ((MPI_Comm_delete_attr_function *)k->del)((MPI_Comm)handle, a->keyval, a->val, k->extra);
	return ((MPI_Type_delete_attr_function *)k->del)((MPI_Datatype)handle, a->keyval, a->val, k->extra);
}

static int set(const char *fn, int kind, int handle, struct attrs **asp, struct comm *c, int keyval, void *val, int type)
{
	struct keyval *k = kv_get(keyval, kind);
	if (!k || k->freed)
		return cmpi_err(c, MPI_ERR_KEYVAL, fn, "keyval %#x", (unsigned)keyval);
	struct attr *a = find(*asp, keyval);
	if (a) {
		int rc = call_delete(kind, handle, k, a);
		if (rc != MPI_SUCCESS)
			return cmpi_err(c, rc, fn, "the delete callback of keyval %#x failed", (unsigned)keyval);
		a->val = val;
		a->type = type;
		box(a);
		return MPI_SUCCESS;
	}
	k->refs++;
	add(asp, keyval, val, type);
	return MPI_SUCCESS;
}

static int del(const char *fn, int kind, int handle, struct attrs *as, struct comm *c, int keyval)
{
	struct keyval *k = kv_get(keyval, kind);
	struct attr *a = k ? find(as, keyval) : NULL;
	if (!a)
		return cmpi_err(c, MPI_ERR_KEYVAL, fn, "keyval %#x: no such attribute", (unsigned)keyval);
	int rc = call_delete(kind, handle, k, a);
	if (rc != MPI_SUCCESS)
		return cmpi_err(c, rc, fn, "the delete callback of keyval %#x failed", (unsigned)keyval);
	drop(as, a);
	kv_unref(k);
	return MPI_SUCCESS;
}

/* get answers keyval's value as type asks: C (ATTR_PTR) gets a value
 * set from C as it was and one set from Fortran as the address of its
 * integer; Fortran gets the value itself, an integer (MPI 4.0, 19.3.7). */
static void get(struct attrs *as, int keyval, void *val, int *flag, int type)
{
	struct attr *a = find(as, keyval);
	*flag = a != NULL;
	if (!a)
		return;
	if (type == ATTR_PTR && a->type != ATTR_PTR)
		*(void **)val = a->box;
	else
		*(void **)val = a->val;
}

/* attrs_copy gives a duplicate (handle nh) what the copy callbacks of
 * the original's (handle oh) values return. */
static int attrs_copy(int kind, int oh, struct attrs *from, struct attrs **to)
{
	for (int i = 0; from && i < from->n; i++) {
		struct attr a = from->a[i];
		struct keyval *k = &keyvals[(a.keyval & KV_MASK) - 1];
		if (!k->copy)
			continue;
		void *out = NULL;
		int flag = 0, rc;
		if (k->copy_proxy)
			rc = k->copy_proxy(k->copy, oh, a.keyval, k->extra, a.type, a.val, &out, &flag);
		else if (kind == KV_COMM)
			rc = ((MPI_Comm_copy_attr_function *)k->copy)((MPI_Comm)oh, a.keyval, k->extra, a.val, &out, &flag);
		else
			rc = ((MPI_Type_copy_attr_function *)k->copy)((MPI_Datatype)oh, a.keyval, k->extra, a.val, &out, &flag);
		if (rc != MPI_SUCCESS)
			return rc;
		if (flag) {
			k->refs++;
			add(to, a.keyval, out, a.type);
		}
	}
	return MPI_SUCCESS;
}

/* attrs_clear deletes every value, the last set first; the first failing
 * callback's code is returned, the rest still run. */
static int attrs_clear(int kind, int handle, struct attrs **asp)
{
	struct attrs *as = *asp;
	int first = MPI_SUCCESS;
	while (as && as->n > 0) {
		struct attr a = as->a[as->n - 1];
		struct keyval *k = &keyvals[(a.keyval & KV_MASK) - 1];
		as->n--;
		int rc = call_delete(kind, handle, k, &a);
		free(a.box);
		if (rc != MPI_SUCCESS && first == MPI_SUCCESS)
			first = rc;
		kv_unref(k);
	}
	if (as) {
		free(as->a);
		free(as);
	}
	*asp = NULL;
	return first;
}

int comm_attrs_copy(struct comm *from, struct comm *to)
{
	return attrs_copy(KV_COMM, from->handle, from->attrs, &to->attrs);
}

int comm_attrs_clear(struct comm *c) { return attrs_clear(KV_COMM, c->handle, &c->attrs); }

int type_attrs_copy(struct dtype *from, struct dtype *to)
{
	return attrs_copy(KV_TYPE, from->handle, from->attrs, &to->attrs);
}

int type_attrs_clear(struct dtype *d) { return attrs_clear(KV_TYPE, d->handle, &d->attrs); }

/* comm_get_attr is MPI_Comm_get_attr with the kind of value asked for
 * (type): the predefined keyvals' from init.c (C gets a pointer to the
 * int, Fortran the int), the user keyvals' from the communicator. */
static int comm_get_attr(const char *fn, MPI_Comm comm, int keyval, void *val, int *flag, int type)
{
	NEED_INIT(fn);
	struct comm *c = comm_get(comm);
	if (!c)
		return cmpi_err(NULL, MPI_ERR_COMM, fn, "communicator %#x", (unsigned)comm);
	int *p = predefined_attr(keyval);
	if (!p && type != ATTR_PTR && (keyval & 1) == 0)
		p = predefined_attr(keyval - 1); /* MPICH's Fortran names them by C's + 1 (mpif.h) */
	if (p) {
		*flag = 1;
		if (type == ATTR_PTR)
			*(int **)val = p;
		else
			*(void **)val = (void *)(MPI_Aint)*p;
		return MPI_SUCCESS;
	}
	if (kv_get(keyval, KV_COMM))
		get(c->attrs, keyval, val, flag, type);
	else
		*flag = 0;
	return MPI_SUCCESS;
}

int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
	return comm_get_attr("MPI_Comm_get_attr", comm, keyval, attribute_val, flag, ATTR_PTR);
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
	return MPI_Comm_get_attr(comm, keyval, attribute_val, flag);
}

/* MPI_DUP_FN and MPI_COMM_DUP_FN (mpi.h names it): the copy is the value. */
int MPIR_Dup_fn(MPI_Comm oldcomm, int keyval, void *extra_state, void *attribute_val_in, void *attribute_val_out,
		int *flag)
{
	*(void **)attribute_val_out = attribute_val_in;
	*flag = 1;
	return MPI_SUCCESS;
}

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
			   MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval, void *extra_state)
{
	NEED_INIT("MPI_Comm_create_keyval");
	*comm_keyval = kv_new(KV_COMM, (void *)comm_copy_attr_fn, (void *)comm_delete_attr_fn, extra_state);
	return MPI_SUCCESS;
}

int MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval, void *extra_state)
{
	return MPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state);
}

int MPI_Comm_free_keyval(int *comm_keyval) { return kv_free("MPI_Comm_free_keyval", comm_keyval, KV_COMM); }

int MPI_Keyval_free(int *keyval) { return kv_free("MPI_Keyval_free", keyval, KV_COMM); }

int MPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
	COMMARG("MPI_Comm_set_attr", comm, c);
	return set("MPI_Comm_set_attr", KV_COMM, comm, &c->attrs, c, comm_keyval, attribute_val, ATTR_PTR);
}

int MPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
	return MPI_Comm_set_attr(comm, keyval, attribute_val);
}

int MPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
	COMMARG("MPI_Comm_delete_attr", comm, c);
	return del("MPI_Comm_delete_attr", KV_COMM, comm, c->attrs, c, comm_keyval);
}

int MPI_Attr_delete(MPI_Comm comm, int keyval) { return MPI_Comm_delete_attr(comm, keyval); }

#define TYPE(fn, h, d)                                                                             \
	NEED_INIT(fn);                                                                             \
	struct dtype *d = dt_any(h);                                                               \
	if (!d)                                                                                    \
		return cmpi_err(NULL, MPI_ERR_TYPE, fn, "datatype %#x", (unsigned)(h));

int MPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
			   MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval, void *extra_state)
{
	NEED_INIT("MPI_Type_create_keyval");
	*type_keyval = kv_new(KV_TYPE, (void *)type_copy_attr_fn, (void *)type_delete_attr_fn, extra_state);
	return MPI_SUCCESS;
}

int MPI_Type_free_keyval(int *type_keyval) { return kv_free("MPI_Type_free_keyval", type_keyval, KV_TYPE); }

int MPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
	TYPE("MPI_Type_set_attr", datatype, d);
	return set("MPI_Type_set_attr", KV_TYPE, datatype, &d->attrs, NULL, type_keyval, attribute_val, ATTR_PTR);
}

static int type_get_attr(const char *fn, MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag, int type)
{
	TYPE(fn, datatype, d);
	if (!kv_get(type_keyval, KV_TYPE))
		return cmpi_err(NULL, MPI_ERR_KEYVAL, fn, "keyval %#x", (unsigned)type_keyval);
	get(d->attrs, type_keyval, attribute_val, flag, type);
	return MPI_SUCCESS;
}

int MPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)
{
	return type_get_attr("MPI_Type_get_attr", datatype, type_keyval, attribute_val, flag, ATTR_PTR);
}

int MPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
	TYPE("MPI_Type_delete_attr", datatype, d);
	return del("MPI_Type_delete_attr", KV_TYPE, datatype, d->attrs, NULL, type_keyval);
}

/* MPICH's internal entry points its Fortran bindings call
 * (libmpichfort.so.12; mpir_attr_generic.h): the get and set of a value
 * of the kind type says, and the proxies that call a keyval's Fortran
 * callbacks. */

int MPII_Comm_get_attr(MPI_Comm comm, int keyval, void *attribute_val, int *flag, int type)
{
	return comm_get_attr("MPI_Comm_get_attr", comm, keyval, attribute_val, flag, type);
}

int MPII_Comm_set_attr(MPI_Comm comm, int keyval, void *attribute_val, int type)
{
	COMMARG("MPI_Comm_set_attr", comm, c);
	return set("MPI_Comm_set_attr", KV_COMM, comm, &c->attrs, c, keyval, attribute_val, type);
}

int MPII_Type_get_attr(MPI_Datatype datatype, int keyval, void *attribute_val, int *flag, int type)
{
	return type_get_attr("MPI_Type_get_attr", datatype, keyval, attribute_val, flag, type);
}

int MPII_Type_set_attr(MPI_Datatype datatype, int keyval, void *attribute_val, int type)
{
	TYPE("MPI_Type_set_attr", datatype, d);
	return set("MPI_Type_set_attr", KV_TYPE, datatype, &d->attrs, NULL, keyval, attribute_val, type);
}

void MPII_Keyval_set_proxy(int keyval, copy_proxy *copy, delete_proxy *del)
{
	struct keyval *k = kv_get(keyval, KV_COMM);
	if (!k)
		k = kv_get(keyval, KV_TYPE);
	if (!k)
		return; /* as MPICH: an unknown keyval is left to the calls that use it */
	k->copy_proxy = copy;
	k->delete_proxy = del;
}
