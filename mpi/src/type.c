/* Datatypes. Every type is a list of byte blocks (offset, length) in
 * type-map order, with its lower and upper bounds: packing concatenates
 * the blocks of each element, so the packed form of n elements of any type
 * whose elements are all of one predefined type T is n' consecutive packed
 * Ts, which is what the reductions work on. Messages travel packed. */
#include <stdlib.h>
#include <string.h>

#include "cmpi.h"

static struct dtype builtin[256 + 8];
static struct blk builtin_blk[256 + 8][2];

static struct dtype **derived;
static int nderived, capderived;

static void set_builtin(struct dtype *d, struct blk *b, MPI_Datatype h, MPI_Aint size, MPI_Aint extent, int nblk,
			MPI_Aint off2, MPI_Aint len2)
{
	d->used = d->committed = d->predefined = 1;
	d->handle = h;
	d->size = size;
	d->lb = d->true_lb = 0;
	d->ub = extent;
	d->true_ub = nblk == 2 ? off2 + len2 : size;
	d->basic = h;
	d->blk = b;
	d->nblk = size ? nblk : 0;
	if (nblk == 1) {
		b[0].off = 0;
		b[0].len = size;
	} else {
		b[0].off = 0;
		b[0].len = size - len2;
		b[1].off = off2;
		b[1].len = len2;
	}
	d->contig = nblk == 1 && size == extent;
}

void dt_init_predefined(void)
{
	static const MPI_Datatype simple[] = {
		MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_WCHAR, MPI_SHORT, MPI_UNSIGNED_SHORT,
		MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE,
		MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG, MPI_PACKED, MPI_2INT, MPI_COMPLEX, MPI_DOUBLE_COMPLEX,
		MPI_LOGICAL, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_INTEGER, MPI_2INTEGER, MPI_2REAL,
		MPI_2DOUBLE_PRECISION, MPI_CHARACTER, MPI_REAL4, MPI_REAL8, MPI_REAL16, MPI_COMPLEX8, MPI_COMPLEX16,
		MPI_COMPLEX32, MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8, MPI_INT8_T, MPI_INT16_T,
		MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T, MPI_UINT64_T, MPI_C_BOOL,
		MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_AINT, MPI_OFFSET, MPI_COUNT,
		MPI_CXX_BOOL, MPI_CXX_FLOAT_COMPLEX, MPI_CXX_DOUBLE_COMPLEX, MPI_CXX_LONG_DOUBLE_COMPLEX,
		MPIX_C_FLOAT16,
	};
	for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
		unsigned h = (unsigned)simple[i];
		MPI_Aint size = (h >> 8) & 0xff;
		set_builtin(&builtin[h & 0xff], builtin_blk[h & 0xff], simple[i], size, size, 1, 0, 0);
	}
	/* the value/index pairs: C structs, with padding */
	set_builtin(&builtin[256 + 0], builtin_blk[256 + 0], MPI_FLOAT_INT, 8, 8, 2, 4, 4);
	set_builtin(&builtin[256 + 1], builtin_blk[256 + 1], MPI_DOUBLE_INT, 12, 16, 2, 8, 4);
	set_builtin(&builtin[256 + 2], builtin_blk[256 + 2], MPI_LONG_INT, 12, 16, 2, 8, 4);
	set_builtin(&builtin[256 + 3], builtin_blk[256 + 3], MPI_SHORT_INT, 6, 8, 2, 4, 4);
	set_builtin(&builtin[256 + 4], builtin_blk[256 + 4], MPI_LONG_DOUBLE_INT, 20, 32, 2, 16, 4);
	/* MPI_LB and MPI_UB (deprecated markers): size 0 */
	set_builtin(&builtin[0x10], builtin_blk[0x10], MPI_LB, 0, 0, 1, 0, 0);
	set_builtin(&builtin[0x11], builtin_blk[0x11], MPI_UB, 0, 0, 1, 0, 0);
}

static struct dtype *lookup(MPI_Datatype h)
{
	unsigned u = (unsigned)h;
	if ((u & 0xffff0000u) == 0x4c000000u) {
		struct dtype *d = &builtin[u & 0xff];
		return d->used && d->handle == h ? d : NULL;
	}
	if (u >= 0x8c000000u && u <= 0x8c000004u)
		return &builtin[256 + (u & 0xf)];
	if ((u & 0xfff00000u) == 0x8c100000u) {
		int i = u & 0xfffff;
		if (i < nderived && derived[i]->used && !derived[i]->released)
			return derived[i];
	}
	return NULL;
}

struct dtype *dt_any(MPI_Datatype h) { return lookup(h); }

struct dtype *dt_get(MPI_Datatype h)
{
	struct dtype *d = lookup(h);
	return d && d->committed ? d : NULL;
}

void dt_ref(struct dtype *d)
{
	if (!d->predefined)
		d->refs++;
}

void dt_unref(struct dtype *d)
{
	if (d->predefined)
		return;
	if (--d->refs == 0 && d->released) {
		free(d->blk);
		d->blk = NULL;
		d->used = 0;
	}
}

int dt_valid_count(int count) { return count >= 0; }

static struct dtype *dt_new(void)
{
	int i;
	for (i = 0; i < nderived; i++)
		if (!derived[i]->used)
			break;
	if (i == nderived) {
		if (nderived == capderived) {
			capderived = capderived ? 2 * capderived : 16;
			derived = realloc(derived, capderived * sizeof *derived);
			if (!derived)
				cmpi_die(1, "out of memory");
		}
		derived[nderived++] = calloc(1, sizeof(struct dtype));
		if (!derived[i])
			cmpi_die(1, "out of memory");
	}
	struct dtype *d = derived[i];
	memset(d, 0, sizeof *d);
	d->used = 1;
	d->refs = 1; /* the handle's */
	d->handle = (MPI_Datatype)(0x8c100000u | i);
	return d;
}

/* builder: blocks appended, adjacent ones merged */
struct bld {
	struct dtype *d;
	int cap;
	int first;
	MPI_Datatype basic;
};

static void bld_add(struct bld *b, MPI_Aint off, MPI_Aint len)
{
	struct dtype *d = b->d;
	if (len == 0)
		return;
	if (d->nblk > 0 && d->blk[d->nblk - 1].off + d->blk[d->nblk - 1].len == off) {
		d->blk[d->nblk - 1].len += len;
		return;
	}
	if (d->nblk == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 8;
		d->blk = realloc(d->blk, b->cap * sizeof *d->blk);
		if (!d->blk)
			cmpi_die(1, "out of memory");
	}
	d->blk[d->nblk].off = off;
	d->blk[d->nblk].len = len;
	d->nblk++;
}

/* bld_elem adds one copy of old at displacement disp (bytes). */
static void bld_elem(struct bld *b, struct dtype *old, MPI_Aint disp)
{
	struct dtype *d = b->d;
	for (int i = 0; i < old->nblk; i++)
		bld_add(b, disp + old->blk[i].off, old->blk[i].len);
	MPI_Aint lb = disp + old->lb, ub = disp + old->ub;
	MPI_Aint tlb = disp + old->true_lb, tub = disp + old->true_ub;
	if (b->first) {
		d->lb = lb, d->ub = ub, d->true_lb = tlb, d->true_ub = tub;
		b->basic = old->basic;
		b->first = 0;
	} else {
		if (lb < d->lb)
			d->lb = lb;
		if (ub > d->ub)
			d->ub = ub;
		if (tlb < d->true_lb)
			d->true_lb = tlb;
		if (tub > d->true_ub)
			d->true_ub = tub;
		if (b->basic != old->basic)
			b->basic = 0;
	}
	d->size += old->size;
}

static void bld_done(struct bld *b)
{
	struct dtype *d = b->d;
	d->basic = b->basic;
	if (b->first) /* no element */
		d->lb = d->ub = d->true_lb = d->true_ub = 0;
	d->contig = d->nblk <= 1 && d->lb == 0 && d->ub == d->size && (d->nblk == 0 || d->blk[0].off == 0);
}

#define OLD(fn, h, out)                                                                            \
	struct dtype *out = dt_any(h);                                                             \
	if (!out)                                                                                  \
		return cmpi_err(NULL, MPI_ERR_TYPE, fn, "datatype %#x", (unsigned)(h));

int MPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	OLD("MPI_Type_contiguous", oldtype, old);
	if (count < 0)
		return cmpi_err(NULL, MPI_ERR_COUNT, "MPI_Type_contiguous", "count %d", count);
	struct bld b = {dt_new(), 0, 1, 0};
	for (int i = 0; i < count; i++)
		bld_elem(&b, old, (MPI_Aint)i * (old->ub - old->lb));
	bld_done(&b);
	*newtype = b.d->handle;
	return MPI_SUCCESS;
}

static int hvector(const char *fn, int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
		   MPI_Datatype *newtype)
{
	OLD(fn, oldtype, old);
	if (count < 0 || blocklength < 0)
		return cmpi_err(NULL, MPI_ERR_COUNT, fn, "count %d, block length %d", count, blocklength);
	struct bld b = {dt_new(), 0, 1, 0};
	MPI_Aint ext = old->ub - old->lb;
	for (int i = 0; i < count; i++)
		for (int j = 0; j < blocklength; j++)
			bld_elem(&b, old, i * stride + (MPI_Aint)j * ext);
	bld_done(&b);
	*newtype = b.d->handle;
	return MPI_SUCCESS;
}

int MPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	OLD("MPI_Type_vector", oldtype, old);
	return hvector("MPI_Type_vector", count, blocklength, (MPI_Aint)stride * (old->ub - old->lb), oldtype, newtype);
}

int MPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	return hvector("MPI_Type_create_hvector", count, blocklength, stride, oldtype, newtype);
}

int MPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	return hvector("MPI_Type_hvector", count, blocklength, stride, oldtype, newtype);
}

static int hindexed(const char *fn, int count, const int *blens, const MPI_Aint *bdispls, const int *idispls,
		    MPI_Aint unit, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	OLD(fn, oldtype, old);
	if (count < 0)
		return cmpi_err(NULL, MPI_ERR_COUNT, fn, "count %d", count);
	struct bld b = {dt_new(), 0, 1, 0};
	MPI_Aint ext = old->ub - old->lb;
	for (int i = 0; i < count; i++) {
		int bl = blens ? blens[i] : 1;
		if (bl < 0) {
			bld_done(&b);
			b.d->released = 1;
			dt_unref(b.d);
			return cmpi_err(NULL, MPI_ERR_COUNT, fn, "block length %d", bl);
		}
		MPI_Aint disp = bdispls ? bdispls[i] : (MPI_Aint)idispls[i] * unit;
		for (int j = 0; j < bl; j++)
			bld_elem(&b, old, disp + (MPI_Aint)j * ext);
	}
	bld_done(&b);
	*newtype = b.d->handle;
	return MPI_SUCCESS;
}

int MPI_Type_indexed(int count, const int blens[], const int displs[], MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	OLD("MPI_Type_indexed", oldtype, old);
	return hindexed("MPI_Type_indexed", count, blens, NULL, displs, old->ub - old->lb, oldtype, newtype);
}

int MPI_Type_create_indexed_block(int count, int blocklength, const int displs[], MPI_Datatype oldtype,
				  MPI_Datatype *newtype)
{
	OLD("MPI_Type_create_indexed_block", oldtype, old);
	if (count < 0 || blocklength < 0)
		return cmpi_err(NULL, MPI_ERR_COUNT, "MPI_Type_create_indexed_block", "count %d", count);
	int *bl = malloc((count + 1) * sizeof(int));
	for (int i = 0; i < count; i++)
		bl[i] = blocklength;
	int rc = hindexed("MPI_Type_create_indexed_block", count, bl, NULL, displs, old->ub - old->lb, oldtype, newtype);
	free(bl);
	return rc;
}

int MPI_Type_create_hindexed(int count, const int blens[], const MPI_Aint displs[], MPI_Datatype oldtype,
			     MPI_Datatype *newtype)
{
	return hindexed("MPI_Type_create_hindexed", count, blens, displs, NULL, 1, oldtype, newtype);
}

int MPI_Type_create_struct(int count, const int blens[], const MPI_Aint displs[], const MPI_Datatype types[],
			   MPI_Datatype *newtype)
{
	const char *fn = "MPI_Type_create_struct";
	if (count < 0)
		return cmpi_err(NULL, MPI_ERR_COUNT, fn, "count %d", count);
	for (int i = 0; i < count; i++) {
		if (!dt_any(types[i]))
			return cmpi_err(NULL, MPI_ERR_TYPE, fn, "datatype %#x at %d", (unsigned)types[i], i);
		if (blens[i] < 0)
			return cmpi_err(NULL, MPI_ERR_COUNT, fn, "block length %d at %d", blens[i], i);
	}
	struct bld b = {dt_new(), 0, 1, 0};
	int explicit_lb = 0, explicit_ub = 0;
	MPI_Aint elb = 0, eub = 0;
	for (int i = 0; i < count; i++) {
		struct dtype *old = dt_any(types[i]);
		if (types[i] == MPI_LB) {
			elb = explicit_lb ? (displs[i] < elb ? displs[i] : elb) : displs[i];
			explicit_lb = 1;
			continue;
		}
		if (types[i] == MPI_UB) {
			eub = explicit_ub ? (displs[i] > eub ? displs[i] : eub) : displs[i];
			explicit_ub = 1;
			continue;
		}
		MPI_Aint ext = old->ub - old->lb;
		for (int j = 0; j < blens[i]; j++)
			bld_elem(&b, old, displs[i] + (MPI_Aint)j * ext);
	}
	bld_done(&b);
	if (explicit_lb)
		b.d->lb = elb;
	if (explicit_ub)
		b.d->ub = eub;
	/* the C compiler pads a struct to its largest member's alignment: MPI
	 * says the extent is padded likewise */
	if (!explicit_ub && !b.first) {
		MPI_Aint align = 1;
		for (int i = 0; i < count; i++) {
			struct dtype *old = dt_any(types[i]);
			if (blens[i] == 0 || types[i] == MPI_LB || types[i] == MPI_UB)
				continue;
			MPI_Aint a = old->predefined ? (old->basic && old->nblk == 1 ? old->size : 8) : 8;
			if (!old->predefined) {
				a = 1;
				for (int k = 0; k < old->nblk; k++)
					if (old->blk[k].len >= 8)
						a = 8;
					else if (old->blk[k].len > a)
						a = old->blk[k].len;
			}
			if (a > 16)
				a = 16;
			if (a == 16 || (a & (a - 1)))
				a = a > 8 ? 16 : 8;
			if (a > align)
				align = a;
		}
		MPI_Aint ext = b.d->ub - b.d->lb;
		if (ext % align)
			b.d->ub += align - ext % align;
	}
	b.d->contig = b.d->nblk <= 1 && b.d->lb == 0 && b.d->ub == b.d->size && (b.d->nblk == 0 || b.d->blk[0].off == 0);
	*newtype = b.d->handle;
	return MPI_SUCCESS;
}

int MPI_Type_struct(int count, int blens[], MPI_Aint displs[], MPI_Datatype types[], MPI_Datatype *newtype)
{
	return MPI_Type_create_struct(count, blens, displs, types, newtype);
}

int MPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent, MPI_Datatype *newtype)
{
	OLD("MPI_Type_create_resized", oldtype, old);
	struct bld b = {dt_new(), 0, 1, 0};
	bld_elem(&b, old, 0);
	bld_done(&b);
	b.d->lb = lb;
	b.d->ub = lb + extent;
	b.d->contig = b.d->nblk <= 1 && b.d->lb == 0 && b.d->ub == b.d->size && (b.d->nblk == 0 || b.d->blk[0].off == 0);
	*newtype = b.d->handle;
	return MPI_SUCCESS;
}

int MPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	OLD("MPI_Type_dup", oldtype, old);
	struct bld b = {dt_new(), 0, 1, 0};
	bld_elem(&b, old, 0);
	bld_done(&b);
	b.d->lb = old->lb;
	b.d->ub = old->ub;
	b.d->contig = old->contig;
	b.d->committed = old->committed;
	*newtype = b.d->handle;
	int rc = type_attrs_copy(old, b.d);
	if (rc != MPI_SUCCESS) {
		MPI_Type_free(newtype);
		return cmpi_err(NULL, rc, "MPI_Type_dup", "an attribute's copy callback failed");
	}
	return MPI_SUCCESS;
}

int MPI_Type_commit(MPI_Datatype *datatype)
{
	struct dtype *d = dt_any(*datatype);
	if (!d)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Type_commit", "datatype %#x", (unsigned)*datatype);
	d->committed = 1;
	return MPI_SUCCESS;
}

int MPI_Type_free(MPI_Datatype *datatype)
{
	struct dtype *d = dt_any(*datatype);
	if (!d || d->predefined)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Type_free", "datatype %#x%s", (unsigned)*datatype,
				d ? " is predefined" : "");
	int rc = type_attrs_clear(d);
	/* a receive still using it keeps it (MPI: freeing a type in use is
	 * allowed, the operation completes) */
	d->released = 1;
	dt_unref(d);
	*datatype = MPI_DATATYPE_NULL;
	if (rc != MPI_SUCCESS)
		return cmpi_err(NULL, rc, "MPI_Type_free", "an attribute's delete callback failed");
	return MPI_SUCCESS;
}

int MPI_Type_size(MPI_Datatype datatype, int *size)
{
	struct dtype *d = dt_any(datatype);
	if (!d)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Type_size", "datatype %#x", (unsigned)datatype);
	*size = d->size > INT32_MAX ? MPI_UNDEFINED : (int)d->size;
	return MPI_SUCCESS;
}

int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
	struct dtype *d = dt_any(datatype);
	if (!d)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Type_size_x", "datatype %#x", (unsigned)datatype);
	*size = d->size;
	return MPI_SUCCESS;
}

int MPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
	struct dtype *d = dt_any(datatype);
	if (!d)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Type_get_extent", "datatype %#x", (unsigned)datatype);
	*lb = d->lb;
	*extent = d->ub - d->lb;
	return MPI_SUCCESS;
}

int MPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
	struct dtype *d = dt_any(datatype);
	if (!d)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Type_get_true_extent", "datatype %#x", (unsigned)datatype);
	*lb = d->true_lb;
	*extent = d->true_ub - d->true_lb;
	return MPI_SUCCESS;
}

int MPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
	MPI_Aint lb;
	return MPI_Type_get_extent(datatype, &lb, extent);
}

int MPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
	MPI_Aint ext;
	return MPI_Type_get_extent(datatype, displacement, &ext);
}

int MPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
	MPI_Aint lb, ext;
	int rc = MPI_Type_get_extent(datatype, &lb, &ext);
	*displacement = lb + ext;
	return rc;
}

int MPI_Get_address(const void *location, MPI_Aint *address)
{
	*address = (MPI_Aint)location;
	return MPI_SUCCESS;
}

int MPI_Address(void *location, MPI_Aint *address) { return MPI_Get_address(location, address); }

MPI_Aint MPI_Aint_add(MPI_Aint base, MPI_Aint disp) { return base + disp; }
MPI_Aint MPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2) { return addr1 - addr2; }

void dt_pack(const void *in, int count, struct dtype *d, uint8_t *out)
{
	const uint8_t *p = in;
	MPI_Aint ext = d->ub - d->lb;
	if (d->contig) {
		memcpy(out, p, (size_t)count * d->size);
		return;
	}
	for (int i = 0; i < count; i++, p += ext)
		for (int b = 0; b < d->nblk; b++) {
			memcpy(out, p + d->blk[b].off, d->blk[b].len);
			out += d->blk[b].len;
		}
}

void dt_unpack(const uint8_t *in, int count, struct dtype *d, void *outv)
{
	uint8_t *p = outv;
	MPI_Aint ext = d->ub - d->lb;
	if (d->contig) {
		memcpy(p, in, (size_t)count * d->size);
		return;
	}
	for (int i = 0; i < count; i++, p += ext)
		for (int b = 0; b < d->nblk; b++) {
			memcpy(p + d->blk[b].off, in, d->blk[b].len);
			in += d->blk[b].len;
		}
}

int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize, int *position,
	     MPI_Comm comm)
{
	struct comm *c = comm_get(comm);
	if (!c)
		return cmpi_err(NULL, MPI_ERR_COMM, "MPI_Pack", "communicator %#x", (unsigned)comm);
	struct dtype *d = dt_get(datatype);
	if (!d)
		return cmpi_err(c, MPI_ERR_TYPE, "MPI_Pack", "datatype %#x", (unsigned)datatype);
	if (incount < 0)
		return cmpi_err(c, MPI_ERR_COUNT, "MPI_Pack", "count %d", incount);
	if (*position < 0 || (MPI_Aint)*position + (MPI_Aint)incount * d->size > outsize)
		return cmpi_err(c, MPI_ERR_TRUNCATE, "MPI_Pack", "%ld bytes at %d do not fit in %d",
				(long)incount * d->size, *position, outsize);
	dt_pack(inbuf, incount, d, (uint8_t *)outbuf + *position);
	*position += incount * d->size;
	return MPI_SUCCESS;
}

int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount, MPI_Datatype datatype,
	       MPI_Comm comm)
{
	struct comm *c = comm_get(comm);
	if (!c)
		return cmpi_err(NULL, MPI_ERR_COMM, "MPI_Unpack", "communicator %#x", (unsigned)comm);
	struct dtype *d = dt_get(datatype);
	if (!d)
		return cmpi_err(c, MPI_ERR_TYPE, "MPI_Unpack", "datatype %#x", (unsigned)datatype);
	if (outcount < 0)
		return cmpi_err(c, MPI_ERR_COUNT, "MPI_Unpack", "count %d", outcount);
	if (*position < 0 || (MPI_Aint)*position + (MPI_Aint)outcount * d->size > insize)
		return cmpi_err(c, MPI_ERR_TRUNCATE, "MPI_Unpack", "%ld bytes at %d are beyond %d",
				(long)outcount * d->size, *position, insize);
	dt_unpack((const uint8_t *)inbuf + *position, outcount, d, outbuf);
	*position += outcount * d->size;
	return MPI_SUCCESS;
}

int MPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
	(void)comm;
	struct dtype *d = dt_get(datatype);
	if (!d)
		return cmpi_err(NULL, MPI_ERR_TYPE, "MPI_Pack_size", "datatype %#x", (unsigned)datatype);
	if (incount < 0)
		return cmpi_err(NULL, MPI_ERR_COUNT, "MPI_Pack_size", "count %d", incount);
	*size = incount * d->size;
	return MPI_SUCCESS;
}

/* MPI_Type_create_subarray: the part subsizes at starts of an array of
 * sizes (C or Fortran order) of oldtype, with the whole array's extent
 * (lower bound 0), as MPI defines it. Built from nested hvectors, moved
 * to the subarray's start and resized to the array. */
int MPI_Type_create_subarray(int ndims, const int array_of_sizes[], const int array_of_subsizes[],
			     const int array_of_starts[], int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	const char *fn = "MPI_Type_create_subarray";
	OLD(fn, oldtype, old);
	if (ndims < 1)
		return cmpi_err(NULL, MPI_ERR_DIMS, fn, "ndims %d", ndims);
	if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN)
		return cmpi_err(NULL, MPI_ERR_ARG, fn, "order %d: want MPI_ORDER_C or MPI_ORDER_FORTRAN", order);
	for (int i = 0; i < ndims; i++)
		if (array_of_sizes[i] < 1 || array_of_subsizes[i] < 1 || array_of_starts[i] < 0 ||
		    array_of_subsizes[i] > array_of_sizes[i] ||
		    array_of_starts[i] > array_of_sizes[i] - array_of_subsizes[i])
			return cmpi_err(NULL, MPI_ERR_ARG, fn, "dimension %d: size %d, subsize %d, start %d", i,
					array_of_sizes[i], array_of_subsizes[i], array_of_starts[i]);
	MPI_Aint ext = old->ub - old->lb, stride = ext, disp = 0;
	MPI_Datatype t = oldtype;
	/* from the fastest-varying dimension out: the last in C order, the first in Fortran's */
	for (int k = 0; k < ndims; k++) {
		int i = order == MPI_ORDER_C ? ndims - 1 - k : k;
		MPI_Datatype next;
		int rc = MPI_Type_create_hvector(array_of_subsizes[i], 1, stride, t, &next);
		if (t != oldtype)
			MPI_Type_free(&t);
		if (rc)
			return rc;
		t = next;
		disp += (MPI_Aint)array_of_starts[i] * stride;
		if (__builtin_mul_overflow(stride, (MPI_Aint)array_of_sizes[i], &stride))
			return cmpi_err(NULL, MPI_ERR_ARG, fn, "an array beyond the address space");
	}
	int one = 1;
	MPI_Datatype moved;
	int rc = MPI_Type_create_struct(1, &one, &disp, &t, &moved);
	MPI_Type_free(&t);
	if (rc)
		return rc;
	rc = MPI_Type_create_resized(moved, 0, stride, newtype);
	MPI_Type_free(&moved);
	return rc;
}
