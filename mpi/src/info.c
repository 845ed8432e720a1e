/* Info objects: a list of (key, value) strings. Nothing in the library
 * reads hints; programs create and pass them (Comm_split_type, and calls
 * that are not supported, which fail by name), so they must work. */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

struct kv {
	char key[MPI_MAX_INFO_KEY + 1];
	char *val;
};

struct info {
	int used, n;
	struct kv *kv;
};

static struct info **infos;
static int ninfos;

static struct info *info_get(MPI_Info h)
{
	unsigned u = (unsigned)h;
	if ((u & 0xfc000000u) != 0x9c000000u)
		return NULL;
	int i = u & 0x03ffffff;
	return i < ninfos && infos[i]->used ? infos[i] : NULL;
}

int MPI_Info_create(MPI_Info *info)
{
	int i;
	for (i = 0; i < ninfos && infos[i]->used; i++)
		;
	if (i == ninfos) {
		struct info **p = realloc(infos, (ninfos + 1) * sizeof *p);
		if (!p || !(p[ninfos] = calloc(1, sizeof(struct info))))
			cmpi_die(1, "out of memory");
		infos = p;
		ninfos++;
	}
	memset(infos[i], 0, sizeof *infos[i]);
	infos[i]->used = 1;
	*info = (MPI_Info)(0x9c000000u | i);
	return MPI_SUCCESS;
}

#define INFO(fn, h, in)                                                                            \
	struct info *in = info_get(h);                                                             \
	if (!in)                                                                                   \
		return cmpi_err(NULL, MPI_ERR_INFO, fn, "info %#x", (unsigned)(h));

static struct kv *find(struct info *in, const char *key)
{
	for (int i = 0; i < in->n; i++)
		if (!strcmp(in->kv[i].key, key))
			return &in->kv[i];
	return NULL;
}

int MPI_Info_set(MPI_Info info, const char *key, const char *value)
{
	INFO("MPI_Info_set", info, in);
	if (!key || !value || strlen(key) > MPI_MAX_INFO_KEY || !*key)
		return cmpi_err(NULL, MPI_ERR_INFO_KEY, "MPI_Info_set", "key");
	if (strlen(value) > MPI_MAX_INFO_VAL)
		return cmpi_err(NULL, MPI_ERR_INFO_VALUE, "MPI_Info_set", "value of %zu bytes", strlen(value));
	struct kv *kv = find(in, key);
	if (!kv) {
		struct kv *p = realloc(in->kv, (in->n + 1) * sizeof *p);
		if (!p)
			cmpi_die(1, "out of memory");
		in->kv = p;
		kv = &in->kv[in->n++];
		strcpy(kv->key, key);
		kv->val = NULL;
	}
	free(kv->val);
	kv->val = strdup(value);
	return MPI_SUCCESS;
}

int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
	INFO("MPI_Info_get", info, in);
	struct kv *kv = find(in, key);
	*flag = kv != NULL;
	if (kv && valuelen >= 0) {
		strncpy(value, kv->val, valuelen);
		value[valuelen] = 0;
	}
	return MPI_SUCCESS;
}

int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
	INFO("MPI_Info_get_valuelen", info, in);
	struct kv *kv = find(in, key);
	*flag = kv != NULL;
	if (kv)
		*valuelen = (int)strlen(kv->val);
	return MPI_SUCCESS;
}

int MPI_Info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag)
{
	INFO("MPI_Info_get_string", info, in);
	struct kv *kv = find(in, key);
	*flag = kv != NULL;
	if (!kv)
		return MPI_SUCCESS;
	int need = (int)strlen(kv->val) + 1;
	if (*buflen > 0) {
		strncpy(value, kv->val, *buflen - 1);
		value[*buflen - 1] = 0;
	}
	*buflen = need;
	return MPI_SUCCESS;
}

int MPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
	INFO("MPI_Info_get_nkeys", info, in);
	*nkeys = in->n;
	return MPI_SUCCESS;
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
	INFO("MPI_Info_get_nthkey", info, in);
	if (n < 0 || n >= in->n)
		return cmpi_err(NULL, MPI_ERR_ARG, "MPI_Info_get_nthkey", "key %d of %d", n, in->n);
	strcpy(key, in->kv[n].key);
	return MPI_SUCCESS;
}

int MPI_Info_delete(MPI_Info info, const char *key)
{
	INFO("MPI_Info_delete", info, in);
	struct kv *kv = find(in, key);
	if (!kv)
		return cmpi_err(NULL, MPI_ERR_INFO_NOKEY, "MPI_Info_delete", "no key %.64s", key);
	free(kv->val);
	*kv = in->kv[--in->n];
	return MPI_SUCCESS;
}

int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
	INFO("MPI_Info_dup", info, in);
	MPI_Info_create(newinfo);
	for (int i = 0; i < in->n; i++)
		MPI_Info_set(*newinfo, in->kv[i].key, in->kv[i].val);
	return MPI_SUCCESS;
}

int MPI_Info_free(MPI_Info *info)
{
	INFO("MPI_Info_free", *info, in);
	for (int i = 0; i < in->n; i++)
		free(in->kv[i].val);
	free(in->kv);
	in->kv = NULL;
	in->n = 0;
	in->used = 0;
	*info = MPI_INFO_NULL;
	return MPI_SUCCESS;
}
