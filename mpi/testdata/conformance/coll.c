/* Collectives: every one, with every predefined op on the types it
 * applies to, on several counts, every root, MPI_IN_PLACE, the v-variants
 * with uneven counts, a user op that is not commutative, and the same on
 * a communicator made by Comm_split (so the rank counts include
 * non-powers of two even on a power-of-two job). */
#include "check.h"
#include <math.h>

static int size_, rank_;

/* value rank r contributes at index i */
static long val(int r, int i) { return (long)(r + 1) * 3 + i % 7; }

static void test_reductions(MPI_Comm comm, const char *name)
{
	int n, r;
	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &r);
	static const int counts[] = {0, 1, 1000};
	for (unsigned ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
		int cnt = counts[ci];
		long *in = malloc((cnt + 1) * sizeof(long)), *out = malloc((cnt + 1) * sizeof(long));
		double *din = malloc((cnt + 1) * sizeof(double)), *dout = malloc((cnt + 1) * sizeof(double));
		for (int i = 0; i < cnt; i++) {
			in[i] = val(r, i);
			din[i] = (double)val(r, i) / 4;
		}
		MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
		const char *names[] = {"SUM", "PROD", "MAX", "MIN", "LAND", "LOR", "LXOR", "BAND", "BOR", "BXOR"};
		for (unsigned o = 0; o < sizeof ops / sizeof ops[0]; o++) {
			for (int root = 0; root < n; root += (n > 3 ? n - 1 : 1)) {
				for (int i = 0; i < cnt; i++)
					out[i] = -12345;
				OK(MPI_Reduce(in, out, cnt, MPI_LONG, ops[o], root, comm));
				if (r == root)
					for (int i = 0; i < cnt; i++) {
						long want = val(0, i);
						for (int k = 1; k < n; k++) {
							long v = val(k, i);
							switch (o) {
							case 0: want += v; break;
							case 1: want *= v; break;
							case 2: want = v > want ? v : want; break;
							case 3: want = v < want ? v : want; break;
							case 4: want = want && v; break;
							case 5: want = want || v; break;
							case 6: want = !want != !v; break;
							case 7: want &= v; break;
							case 8: want |= v; break;
							case 9: want ^= v; break;
							}
						}
						CHECK(out[i] == want, "%s: Reduce %s count %d root %d [%d] = %ld, want %ld", name, names[o], cnt, root, i, out[i], want);
						if (out[i] != want)
							break;
					}
			}
			OK(MPI_Allreduce(in, out, cnt, MPI_LONG, ops[o], comm));
			long chk = 0;
			for (int i = 0; i < cnt; i++)
				chk += out[i];
			long all;
			/* everyone got the same */
			OK(MPI_Allreduce(&chk, &all, 1, MPI_LONG, MPI_MAX, comm));
			CHECK(all == chk, "%s: Allreduce %s differs between ranks", name, names[o]);
		}
		/* floating point: SUM exact for these values, MAX, MIN, PROD */
		OK(MPI_Allreduce(din, dout, cnt, MPI_DOUBLE, MPI_SUM, comm));
		for (int i = 0; i < cnt; i++) {
			double want = 0;
			for (int k = 0; k < n; k++)
				want += (double)val(k, i) / 4;
			CHECK(fabs(dout[i] - want) < 1e-9, "%s: Allreduce SUM double [%d] %g want %g", name, i, dout[i], want);
		}
		/* in place */
		for (int i = 0; i < cnt; i++)
			out[i] = val(r, i);
		OK(MPI_Allreduce(MPI_IN_PLACE, out, cnt, MPI_LONG, MPI_SUM, comm));
		for (int i = 0; i < cnt; i++) {
			long want = 0;
			for (int k = 0; k < n; k++)
				want += val(k, i);
			CHECK(out[i] == want, "%s: Allreduce IN_PLACE [%d]", name, i);
		}
		free(in);
		free(out);
		free(din);
		free(dout);
	}
	/* every predefined integer/float type with SUM and MAX */
	{
		MPI_Datatype types[] = {MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT,
					MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG,
					MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T,
					MPI_UINT32_T, MPI_UINT64_T, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE};
		for (unsigned t = 0; t < sizeof types / sizeof types[0]; t++) {
			unsigned char in[64], out[64];
			int sz;
			MPI_Type_size(types[t], &sz);
			memset(in, 0, sizeof in);
			/* small values that fit every type: r+1 in each element */
			for (int e = 0; e < 4; e++) {
				unsigned char *p = in + e * sz;
				switch (sz) {
				case 1: *(signed char *)p = r + 1; break;
				case 2: *(short *)p = r + 1; break;
				case 4: if (types[t] == MPI_FLOAT) *(float *)p = r + 1; else *(int *)p = r + 1; break;
				case 8: if (types[t] == MPI_DOUBLE) *(double *)p = r + 1; else *(long *)p = r + 1; break;
				case 16: *(long double *)p = r + 1; break;
				}
			}
			OK(MPI_Allreduce(in, out, 4, types[t], MPI_SUM, comm));
			for (int e = 0; e < 4; e++) {
				unsigned char *p = out + e * sz;
				long double got = 0;
				switch (sz) {
				case 1: got = *(signed char *)p; break;
				case 2: got = *(short *)p; break;
				case 4: got = types[t] == MPI_FLOAT ? *(float *)p : *(int *)p; break;
				case 8: got = types[t] == MPI_DOUBLE ? *(double *)p : *(long *)p; break;
				case 16: got = *(long double *)p; break;
				}
				CHECK(got == n * (n + 1) / 2, "%s: SUM of type %d element %d = %Lg", name, t, e, got);
			}
			OK(MPI_Allreduce(in, out, 4, types[t], MPI_MAX, comm));
			/* long double: 10 bytes of 16 carry the value */
			CHECK(memcmp(out, in, sz == 16 ? 10 : sz) == 0 || r != n - 1, "%s: MAX of type %d", name, t);
		}
	}
	/* MINLOC / MAXLOC on the pair types */
	{
		struct { double v; int i; } din = {(double)((r * 7) % n), r}, dout;
		OK(MPI_Allreduce(&din, &dout, 1, MPI_DOUBLE_INT, MPI_MINLOC, comm));
		CHECK(dout.v == 0 && dout.i == 0, "%s: MINLOC double_int %g@%d", name, dout.v, dout.i);
		OK(MPI_Allreduce(&din, &dout, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm));
		int maxr = 0;
		for (int k = 0; k < n; k++)
			if ((k * 7) % n > (maxr * 7) % n)
				maxr = k;
		CHECK(dout.v == (maxr * 7) % n && dout.i == maxr, "%s: MAXLOC double_int %g@%d", name, dout.v, dout.i);
		int iin[2] = {r % 2, r}, iout[2];
		OK(MPI_Allreduce(iin, iout, 1, MPI_2INT, MPI_MAXLOC, comm));
		CHECK(iout[0] == (n > 1) && iout[1] == (n > 1), "%s: MAXLOC 2int %d@%d (ties: lowest index)", name, iout[0], iout[1]);
		struct { float v; int i; } fin = {-(float)r, r}, fout;
		OK(MPI_Allreduce(&fin, &fout, 1, MPI_FLOAT_INT, MPI_MINLOC, comm));
		CHECK(fout.v == -(float)(n - 1) && fout.i == n - 1, "%s: MINLOC float_int", name);
		struct { long v; int i; } lin = {r, r}, lout;
		OK(MPI_Allreduce(&lin, &lout, 1, MPI_LONG_INT, MPI_MAXLOC, comm));
		CHECK(lout.v == n - 1 && lout.i == n - 1, "%s: MAXLOC long_int", name);
		struct { short v; int i; } sin = {(short)r, r}, sout;
		OK(MPI_Allreduce(&sin, &sout, 1, MPI_SHORT_INT, MPI_MINLOC, comm));
		CHECK(sout.v == 0 && sout.i == 0, "%s: MINLOC short_int", name);
	}
}

/* a non-commutative op: 2x2 integer matrix product */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	int *a = in, *b = inout;
	for (int k = 0; k < *len; k++, a += 4, b += 4) {
		int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
			    a[2] * b[1] + a[3] * b[3]};
		memcpy(b, c, sizeof c);
	}
}

static void test_user_op(MPI_Comm comm, const char *name)
{
	int n, r;
	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &r);
	MPI_Datatype mat;
	OK(MPI_Type_contiguous(4, MPI_INT, &mat));
	OK(MPI_Type_commit(&mat));
	MPI_Op op;
	OK(MPI_Op_create(matmul, 0, &op));
	int m[4] = {1, r + 1, 0, 1}, out[4];
	/* product of [[1, k+1],[0,1]] is [[1, sum(k+1)],[0,1]]: commutative by accident, so use a shear that is not */
	m[0] = 1, m[1] = 1, m[2] = r % 2, m[3] = 1 + r;
	int want[4] = {1, 0, 0, 1};
	for (int k = n - 1; k >= 0; k--) {
		int a[4] = {1, 1, k % 2, 1 + k};
		int c[4] = {a[0] * want[0] + a[1] * want[2], a[0] * want[1] + a[1] * want[3], a[2] * want[0] + a[3] * want[2],
			    a[2] * want[1] + a[3] * want[3]};
		memcpy(want, c, sizeof c);
	}
	OK(MPI_Reduce(m, out, 1, mat, op, 0, comm));
	if (r == 0)
		CHECK(!memcmp(out, want, sizeof want), "%s: non-commutative Reduce: [%d %d %d %d] want [%d %d %d %d]", name,
		      out[0], out[1], out[2], out[3], want[0], want[1], want[2], want[3]);
	OK(MPI_Allreduce(m, out, 1, mat, op, comm));
	CHECK(!memcmp(out, want, sizeof want), "%s: non-commutative Allreduce", name);
	/* Scan with the same op: prefix products in rank order */
	OK(MPI_Scan(m, out, 1, mat, op, comm));
	int pre[4] = {1, 0, 0, 1};
	for (int k = r; k >= 0; k--) {
		int a[4] = {1, 1, k % 2, 1 + k};
		int c[4] = {a[0] * pre[0] + a[1] * pre[2], a[0] * pre[1] + a[1] * pre[3], a[2] * pre[0] + a[3] * pre[2],
			    a[2] * pre[1] + a[3] * pre[3]};
		memcpy(pre, c, sizeof c);
	}
	CHECK(!memcmp(out, pre, sizeof pre), "%s: non-commutative Scan at %d", name, r);
	int commute;
	OK(MPI_Op_commutative(op, &commute));
	CHECK(!commute, "Op_commutative");
	OK(MPI_Op_free(&op));
	CHECK(op == MPI_OP_NULL, "Op_free");
	OK(MPI_Type_free(&mat));
}

/* the shear of rank k's slot i: [[1, 1], [(k+i)%2, 1+k+i]]; products of
 * them depend on the order */
static void shear(int k, int i, int *m)
{
	m[0] = 1, m[1] = 1, m[2] = (k + i) % 2, m[3] = 1 + k + i;
}

/* acc = acc · a (2x2, row-major) */
static void rmul(int *acc, const int *a)
{
	int c[4] = {acc[0] * a[0] + acc[1] * a[2], acc[0] * a[1] + acc[1] * a[3], acc[2] * a[0] + acc[3] * a[2],
		    acc[2] * a[1] + acc[3] * a[3]};
	memcpy(acc, c, sizeof c);
}

/* want = shear(k0,i) · … · shear(k1-1,i) */
static void prod(int k0, int k1, int i, int *want)
{
	want[0] = 1, want[1] = 0, want[2] = 0, want[3] = 1;
	for (int k = k0; k < k1; k++) {
		int a[4];
		shear(k, i, a);
		rmul(want, a);
	}
}

/* What the one-round algorithms (bcs) do differently: operand order of
 * a non-commutative op in every reducing collective, IN_PLACE, zero
 * counts in the v-variants, and bit-identical floating-point Allreduce
 * results on every rank. */
static void test_order(MPI_Comm comm, const char *name)
{
	int n, r;
	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &r);
	MPI_Datatype mat;
	OK(MPI_Type_contiguous(4, MPI_INT, &mat));
	OK(MPI_Type_commit(&mat));
	MPI_Op op;
	OK(MPI_Op_create(matmul, 0, &op));
	int *m = malloc((n + 1) * 4 * sizeof(int)), *o = malloc((n + 1) * 4 * sizeof(int)), want[4];
	/* Allreduce in place */
	shear(r, 0, o);
	OK(MPI_Allreduce(MPI_IN_PLACE, o, 1, mat, op, comm));
	prod(0, n, 0, want);
	CHECK(!memcmp(o, want, sizeof want), "%s: non-commutative Allreduce IN_PLACE", name);
	/* Reduce in place at the root */
	for (int root = 0; root < n; root += n > 2 ? n - 1 : 1) {
		shear(r, 0, o);
		if (r == root)
			OK(MPI_Reduce(MPI_IN_PLACE, o, 1, mat, op, root, comm));
		else
			OK(MPI_Reduce(o, NULL, 1, mat, op, root, comm));
		if (r == root)
			CHECK(!memcmp(o, want, sizeof want), "%s: non-commutative Reduce IN_PLACE root %d", name, root);
	}
	/* Exscan, and Scan in place */
	shear(r, 0, m);
	memset(o, 0x5a, 4 * sizeof(int));
	OK(MPI_Exscan(m, o, 1, mat, op, comm));
	prod(0, r, 0, want);
	if (r > 0)
		CHECK(!memcmp(o, want, sizeof want), "%s: non-commutative Exscan at %d", name, r);
	shear(r, 0, o);
	OK(MPI_Scan(MPI_IN_PLACE, o, 1, mat, op, comm));
	prod(0, r + 1, 0, want);
	CHECK(!memcmp(o, want, sizeof want), "%s: non-commutative Scan IN_PLACE at %d", name, r);
	/* Reduce_scatter_block: rank r's slot i is shear(r, i); rank i gets
	 * the product over r of slot i */
	for (int i = 0; i < n; i++)
		shear(r, i, m + 4 * i);
	OK(MPI_Reduce_scatter_block(m, o, 1, mat, op, comm));
	prod(0, n, r, want);
	CHECK(!memcmp(o, want, sizeof want), "%s: non-commutative Reduce_scatter_block at %d", name, r);
	/* Reduce_scatter with zero counts (odd ranks get one, even none), in place */
	{
		int *counts = malloc(n * sizeof(int)), slot = 0, mine = -1;
		for (int i = 0; i < n; i++) {
			counts[i] = i % 2;
			if (i == r && counts[i])
				mine = slot;
			slot += counts[i];
		}
		for (int i = 0; i < slot; i++)
			shear(r, i, m + 4 * i);
		OK(MPI_Reduce_scatter(MPI_IN_PLACE, m, counts, mat, op, comm));
		if (mine >= 0) {
			prod(0, n, mine, want);
			CHECK(!memcmp(m, want, sizeof want), "%s: Reduce_scatter IN_PLACE zero counts at %d", name, r);
		}
		free(counts);
	}
	OK(MPI_Op_free(&op));
	OK(MPI_Type_free(&mat));
	/* Gatherv / Scatterv / Allgatherv with only zero counts but one */
	{
		int *counts = calloc(n, sizeof(int)), *displs = calloc(n, sizeof(int)), x = 1000 + r, got = -1;
		int *all = malloc((n + 1) * sizeof(int));
		counts[n - 1] = 1;
		for (int root = 0; root < n; root += n > 2 ? n - 1 : 1) {
			all[0] = -1;
			OK(MPI_Gatherv(&x, r == n - 1, MPI_INT, all, counts, displs, MPI_INT, root, comm));
			if (r == root)
				CHECK(all[0] == 1000 + n - 1, "%s: Gatherv zero counts root %d got %d", name, root, all[0]);
			all[0] = 77;
			got = -1;
			OK(MPI_Scatterv(all, counts, displs, MPI_INT, &got, r == n - 1, MPI_INT, root, comm));
			CHECK(got == (r == n - 1 ? 77 : -1), "%s: Scatterv zero counts root %d got %d", name, root, got);
		}
		all[0] = -1;
		OK(MPI_Allgatherv(&x, r == n - 1, MPI_INT, all, counts, displs, MPI_INT, comm));
		CHECK(all[0] == 1000 + n - 1, "%s: Allgatherv zero counts got %d", name, all[0]);
		free(counts), free(displs), free(all);
	}
	/* floating point whose sum depends on the order: every rank the same bits */
	{
		double x = (r % 2 ? 1e16 : -1e16) + (r + 1) * 0.1, s;
		OK(MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, comm));
		double *alls = malloc(n * sizeof(double));
		OK(MPI_Allgather(&s, 1, MPI_DOUBLE, alls, 1, MPI_DOUBLE, comm));
		for (int k = 0; k < n; k++)
			CHECK(!memcmp(&alls[k], &s, sizeof s), "%s: Allreduce of doubles differs between ranks %d and %d", name, r, k);
		free(alls);
	}
	free(m), free(o);
}

static void test_movement(MPI_Comm comm, const char *name)
{
	int n, r;
	MPI_Comm_size(comm, &n);
	MPI_Comm_rank(comm, &r);
	int cnt = 3;
	int *all = malloc(n * 64 * sizeof(int)), *mine = malloc(64 * sizeof(int)), *b = malloc(n * 64 * sizeof(int));
	for (int root = 0; root < n; root++) {
		/* Bcast */
		for (int i = 0; i < 64; i++)
			mine[i] = r == root ? root * 100 + i : -1;
		OK(MPI_Bcast(mine, 64, MPI_INT, root, comm));
		for (int i = 0; i < 64; i++)
			if (mine[i] != root * 100 + i) {
				CHECK(0, "%s: Bcast root %d [%d] = %d", name, root, i, mine[i]);
				break;
			}
		/* Gather */
		for (int i = 0; i < cnt; i++)
			mine[i] = r * 10 + i;
		OK(MPI_Gather(mine, cnt, MPI_INT, all, cnt, MPI_INT, root, comm));
		if (r == root)
			for (int k = 0; k < n * cnt; k++)
				CHECK(all[k] == (k / cnt) * 10 + k % cnt, "%s: Gather root %d [%d] = %d", name, root, k, all[k]);
		/* Gather in place */
		if (r == root) {
			for (int k = 0; k < n * cnt; k++)
				all[k] = k / cnt == r ? r * 10 + k % cnt : -1;
			OK(MPI_Gather(MPI_IN_PLACE, cnt, MPI_INT, all, cnt, MPI_INT, root, comm));
			for (int k = 0; k < n * cnt; k++)
				CHECK(all[k] == (k / cnt) * 10 + k % cnt, "%s: Gather IN_PLACE root %d [%d] = %d", name, root, k, all[k]);
		} else
			OK(MPI_Gather(mine, cnt, MPI_INT, NULL, 0, MPI_INT, root, comm));
		/* Scatter */
		for (int k = 0; k < n * cnt; k++)
			all[k] = r == root ? k : -1;
		OK(MPI_Scatter(all, cnt, MPI_INT, mine, cnt, MPI_INT, root, comm));
		for (int i = 0; i < cnt; i++)
			CHECK(mine[i] == r * cnt + i, "%s: Scatter root %d [%d] = %d", name, root, i, mine[i]);
		/* Gatherv / Scatterv with uneven counts: rank k sends k+1, displaced with gaps */
		int *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int)), off = 0;
		for (int k = 0; k < n; k++) {
			counts[k] = k + 1;
			displs[k] = off;
			off += k + 2;
		}
		for (int i = 0; i < r + 1; i++)
			mine[i] = r * 1000 + i;
		for (int k = 0; k < off; k++)
			b[k] = -7;
		OK(MPI_Gatherv(mine, r + 1, MPI_INT, b, counts, displs, MPI_INT, root, comm));
		if (r == root)
			for (int k = 0; k < n; k++) {
				for (int i = 0; i < k + 1; i++)
					CHECK(b[displs[k] + i] == k * 1000 + i, "%s: Gatherv root %d from %d [%d]", name, root, k, i);
				CHECK(b[displs[k] + k + 1] == -7, "%s: Gatherv wrote into a gap", name);
			}
		for (int i = 0; i < r + 1; i++)
			mine[i] = -1;
		OK(MPI_Scatterv(b, counts, displs, MPI_INT, mine, r + 1, MPI_INT, root, comm));
		if (1) {
			/* root's b holds the gathered values; others' is junk but only root's is read */
			for (int i = 0; i < r + 1; i++)
				CHECK(mine[i] == r * 1000 + i, "%s: Scatterv root %d [%d] = %d", name, root, i, mine[i]);
		}
		free(counts);
		free(displs);
	}
	/* Allgather, Allgatherv (in place too) */
	for (int i = 0; i < cnt; i++)
		mine[i] = r * 10 + i;
	OK(MPI_Allgather(mine, cnt, MPI_INT, all, cnt, MPI_INT, comm));
	for (int k = 0; k < n * cnt; k++)
		CHECK(all[k] == (k / cnt) * 10 + k % cnt, "%s: Allgather [%d] = %d", name, k, all[k]);
	for (int k = 0; k < n * cnt; k++)
		all[k] = k / cnt == r ? r * 10 + k % cnt : -1;
	OK(MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, cnt, MPI_INT, comm));
	for (int k = 0; k < n * cnt; k++)
		CHECK(all[k] == (k / cnt) * 10 + k % cnt, "%s: Allgather IN_PLACE [%d] = %d", name, k, all[k]);
	{
		int *counts = malloc(n * sizeof(int)), *displs = malloc(n * sizeof(int)), off = 0;
		for (int k = 0; k < n; k++) {
			counts[k] = (k * 5) % 3; /* zeros among them */
			displs[k] = off;
			off += counts[k];
		}
		for (int i = 0; i < counts[r]; i++)
			mine[i] = r * 100 + i;
		OK(MPI_Allgatherv(mine, counts[r], MPI_INT, b, counts, displs, MPI_INT, comm));
		for (int k = 0; k < n; k++)
			for (int i = 0; i < counts[k]; i++)
				CHECK(b[displs[k] + i] == k * 100 + i, "%s: Allgatherv from %d [%d]", name, k, i);
		free(counts);
		free(displs);
	}
	/* Alltoall, in place too, and Alltoallv */
	for (int k = 0; k < n * 2; k++)
		all[k] = r * 1000 + k;
	OK(MPI_Alltoall(all, 2, MPI_INT, b, 2, MPI_INT, comm));
	for (int k = 0; k < n; k++)
		for (int i = 0; i < 2; i++)
			CHECK(b[k * 2 + i] == k * 1000 + r * 2 + i, "%s: Alltoall from %d [%d] = %d", name, k, i, b[k * 2 + i]);
	OK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 2, MPI_INT, comm));
	for (int k = 0; k < n; k++)
		for (int i = 0; i < 2; i++)
			CHECK(all[k * 2 + i] == k * 1000 + r * 2 + i, "%s: Alltoall IN_PLACE from %d", name, k);
	{
		/* rank r sends r+k+1 ints to k... keep within 64 */
		int *sc = malloc(n * sizeof(int)), *sd = malloc(n * sizeof(int)), *rc = malloc(n * sizeof(int)),
		    *rd = malloc(n * sizeof(int)), so = 0, ro = 0;
		for (int k = 0; k < n; k++) {
			sc[k] = (r + k) % 4;
			sd[k] = so;
			so += sc[k];
			rc[k] = (k + r) % 4;
			rd[k] = ro;
			ro += rc[k] + 1;
		}
		int *s = malloc((so + 1) * sizeof(int)), *rv = malloc((ro + 1) * sizeof(int));
		for (int k = 0; k < n; k++)
			for (int i = 0; i < sc[k]; i++)
				s[sd[k] + i] = r * 10000 + k * 100 + i;
		OK(MPI_Alltoallv(s, sc, sd, MPI_INT, rv, rc, rd, MPI_INT, comm));
		for (int k = 0; k < n; k++)
			for (int i = 0; i < rc[k]; i++)
				CHECK(rv[rd[k] + i] == k * 10000 + r * 100 + i, "%s: Alltoallv from %d [%d]", name, k, i);
		free(sc), free(sd), free(rc), free(rd), free(s), free(rv);
	}
	/* Reduce_scatter(_block), Scan, Exscan */
	{
		int *rcounts = malloc(n * sizeof(int)), tot = 0;
		for (int k = 0; k < n; k++) {
			rcounts[k] = k % 3 + 1;
			tot += rcounts[k];
		}
		int *s = malloc(tot * sizeof(int)), *o = malloc(tot * sizeof(int)), before = 0;
		for (int i = 0; i < tot; i++)
			s[i] = r + i;
		for (int k = 0; k < r; k++)
			before += rcounts[k];
		OK(MPI_Reduce_scatter(s, o, rcounts, MPI_INT, MPI_SUM, comm));
		for (int i = 0; i < rcounts[r]; i++)
			CHECK(o[i] == n * (n - 1) / 2 + n * (before + i), "%s: Reduce_scatter [%d] = %d", name, i, o[i]);
		OK(MPI_Reduce_scatter_block(s, o, 1, MPI_INT, MPI_MAX, comm));
		CHECK(o[0] == n - 1 + r, "%s: Reduce_scatter_block = %d", name, o[0]);
		free(rcounts), free(s), free(o);
		int v = r + 1, sc, ex = -99;
		OK(MPI_Scan(&v, &sc, 1, MPI_INT, MPI_SUM, comm));
		CHECK(sc == (r + 1) * (r + 2) / 2, "%s: Scan %d", name, sc);
		OK(MPI_Exscan(&v, &ex, 1, MPI_INT, MPI_SUM, comm));
		if (r > 0)
			CHECK(ex == r * (r + 1) / 2, "%s: Exscan %d", name, ex);
		OK(MPI_Exscan(&v, &ex, 1, MPI_INT, MPI_PROD, comm));
		if (r > 1) {
			int f = 1;
			for (int k = 1; k <= r; k++)
				f *= k;
			CHECK(ex == f, "%s: Exscan PROD %d want %d", name, ex, f);
		}
	}
	/* a large Bcast and Allreduce: fragmented messages inside collectives */
	if (comm == MPI_COMM_WORLD) {
		int big = 5 << 18; /* 5 MiB of ints: two fragments */
		int *x = malloc(big * sizeof(int)), *y = malloc(big * sizeof(int));
		for (int i = 0; i < big; i++)
			x[i] = r == 0 ? i : 0;
		OK(MPI_Bcast(x, big, MPI_INT, 0, comm));
		int okb = 1;
		for (int i = 0; i < big; i++)
			okb &= x[i] == i;
		CHECK(okb, "%s: large Bcast", name);
		OK(MPI_Allreduce(x, y, big, MPI_INT, MPI_MAX, comm));
		okb = 1;
		for (int i = 0; i < big; i++)
			okb &= y[i] == i;
		CHECK(okb, "%s: large Allreduce", name);
		free(x), free(y);
	}
	OK(MPI_Barrier(comm));
	free(all), free(mine), free(b);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size_);
	rank_ = me;
	test_movement(MPI_COMM_WORLD, "world");
	test_reductions(MPI_COMM_WORLD, "world");
	test_user_op(MPI_COMM_WORLD, "world");
	test_order(MPI_COMM_WORLD, "world");
	/* a split: odd and even ranks (sizes ceil(n/2), floor(n/2)), reversed order */
	MPI_Comm half;
	OK(MPI_Comm_split(MPI_COMM_WORLD, me % 2, -me, &half));
	test_movement(half, "half");
	test_reductions(half, "half");
	test_user_op(half, "half");
	test_order(half, "half");
	OK(MPI_Comm_free(&half));
	test_movement(MPI_COMM_SELF, "self");
	test_order(MPI_COMM_SELF, "self");
	DONE();
}
