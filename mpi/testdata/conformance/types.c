/* Derived datatypes: contiguous, vector, hvector, indexed, indexed_block,
 * hindexed, struct (with padding), resized, dup; their size and extent;
 * sending one type and receiving another with the same signature;
 * Pack/Unpack/Pack_size; a datatype freed while a receive uses it. */
#include "check.h"
#include <stddef.h>

struct particle {
	double pos[3];
	int id;
	char tag;
};

int main(int argc, char **argv)
{
	int size;
	MPI_Status st;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int right = (me + 1) % size, left = (me + size - 1) % size;
	int sz;
	MPI_Aint lb, ext;

	/* vector: a column of a 6x5 matrix */
	{
		MPI_Datatype col;
		OK(MPI_Type_vector(6, 1, 5, MPI_INT, &col));
		OK(MPI_Type_commit(&col));
		OK(MPI_Type_size(col, &sz));
		OK(MPI_Type_get_extent(col, &lb, &ext));
		CHECK(sz == 24 && lb == 0 && ext == (5 * 5 + 1) * 4, "vector size %d extent %ld", sz, (long)ext);
		int m[30], col_in[6];
		for (int i = 0; i < 30; i++)
			m[i] = me * 100 + i;
		/* send column 2 as the vector, receive 6 contiguous ints */
		OK(MPI_Sendrecv(&m[2], 1, col, right, 1, col_in, 6, MPI_INT, left, 1, MPI_COMM_WORLD, &st));
		for (int i = 0; i < 6; i++)
			CHECK(col_in[i] == left * 100 + 2 + 5 * i, "vector column [%d] = %d", i, col_in[i]);
		/* and back: contiguous into a column */
		int m2[30];
		memset(m2, 0xff, sizeof m2);
		OK(MPI_Sendrecv(col_in, 6, MPI_INT, right, 2, &m2[4], 1, col, left, 2, MPI_COMM_WORLD, &st));
		for (int i = 0; i < 30; i++) {
			int want = i % 5 == 4 && i / 5 < 6 ? ((left + size - 1) % size) * 100 + 2 + 5 * (i / 5) : -1;
			CHECK(m2[i] == want, "column receive [%d] = %d want %d", i, m2[i], want);
		}
		int cnt;
		OK(MPI_Get_count(&st, col, &cnt));
		CHECK(cnt == 1, "Get_count of a vector %d", cnt);
		OK(MPI_Get_elements(&st, col, &cnt));
		CHECK(cnt == 6, "Get_elements of a vector %d", cnt);
		/* two vectors in a row: extent counts */
		MPI_Datatype two;
		OK(MPI_Type_contiguous(2, col, &two));
		OK(MPI_Type_commit(&two));
		OK(MPI_Type_size(two, &sz));
		CHECK(sz == 48, "contiguous of vectors size %d", sz);
		OK(MPI_Type_free(&two));
		OK(MPI_Type_free(&col));
		CHECK(col == MPI_DATATYPE_NULL, "Type_free");
	}
	/* indexed, indexed_block, hvector, hindexed */
	{
		int blens[3] = {2, 1, 3}, displs[3] = {0, 4, 7};
		MPI_Datatype ix, ib, hv, hx;
		OK(MPI_Type_indexed(3, blens, displs, MPI_INT, &ix));
		OK(MPI_Type_commit(&ix));
		OK(MPI_Type_size(ix, &sz));
		OK(MPI_Type_get_extent(ix, &lb, &ext));
		CHECK(sz == 24 && ext == 40, "indexed size %d extent %ld", sz, (long)ext);
		int src[10], dst[6];
		for (int i = 0; i < 10; i++)
			src[i] = me * 10 + i;
		OK(MPI_Sendrecv(src, 1, ix, right, 3, dst, 6, MPI_INT, left, 3, MPI_COMM_WORLD, &st));
		int want[6] = {0, 1, 4, 7, 8, 9};
		for (int i = 0; i < 6; i++)
			CHECK(dst[i] == left * 10 + want[i], "indexed [%d] = %d", i, dst[i]);
		int bd[2] = {1, 5};
		OK(MPI_Type_create_indexed_block(2, 2, bd, MPI_SHORT, &ib));
		OK(MPI_Type_commit(&ib));
		OK(MPI_Type_size(ib, &sz));
		CHECK(sz == 8, "indexed_block size %d", sz);
		OK(MPI_Type_create_hvector(3, 1, 12, MPI_INT, &hv));
		OK(MPI_Type_commit(&hv));
		OK(MPI_Type_get_extent(hv, &lb, &ext));
		CHECK(ext == 28, "hvector extent %ld", (long)ext);
		MPI_Aint hd[2] = {8, 0};
		int hb[2] = {1, 1};
		OK(MPI_Type_create_hindexed(2, hb, hd, MPI_DOUBLE, &hx));
		OK(MPI_Type_commit(&hx));
		double dv[2] = {me + 0.5, me + 0.25}, dr[2];
		OK(MPI_Sendrecv(dv, 1, hx, right, 4, dr, 2, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &st));
		CHECK(dr[0] == left + 0.25 && dr[1] == left + 0.5, "hindexed order (type map order, not address order)");
		MPI_Type_free(&ix), MPI_Type_free(&ib), MPI_Type_free(&hv), MPI_Type_free(&hx);
	}
	/* struct with padding, arrays of them */
	{
		MPI_Datatype pt;
		int bl[3] = {3, 1, 1};
		MPI_Aint d[3] = {offsetof(struct particle, pos), offsetof(struct particle, id), offsetof(struct particle, tag)};
		MPI_Datatype ty[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
		OK(MPI_Type_create_struct(3, bl, d, ty, &pt));
		OK(MPI_Type_commit(&pt));
		OK(MPI_Type_size(pt, &sz));
		OK(MPI_Type_get_extent(pt, &lb, &ext));
		CHECK(sz == 29, "struct size %d", sz);
		CHECK(ext == sizeof(struct particle), "struct extent %ld, sizeof %zu", (long)ext, sizeof(struct particle));
		MPI_Aint tlb, text;
		OK(MPI_Type_get_true_extent(pt, &tlb, &text));
		CHECK(tlb == 0 && text == 29, "true extent %ld", (long)text);
		struct particle ps[4], pr[4];
		memset(ps, 0, sizeof ps);
		for (int i = 0; i < 4; i++) {
			ps[i].pos[0] = me, ps[i].pos[1] = i, ps[i].pos[2] = -i;
			ps[i].id = me * 10 + i;
			ps[i].tag = 'a' + i;
		}
		memset(pr, 0, sizeof pr);
		OK(MPI_Sendrecv(ps, 4, pt, right, 5, pr, 4, pt, left, 5, MPI_COMM_WORLD, &st));
		for (int i = 0; i < 4; i++)
			CHECK(pr[i].pos[0] == left && pr[i].pos[1] == i && pr[i].pos[2] == -i && pr[i].id == left * 10 + i &&
				      pr[i].tag == 'a' + i,
			      "struct element %d", i);
		/* resized: the same struct, extent of a bigger record */
		MPI_Datatype rs;
		OK(MPI_Type_create_resized(pt, 0, 2 * sizeof(struct particle), &rs));
		OK(MPI_Type_commit(&rs));
		OK(MPI_Type_get_extent(rs, &lb, &ext));
		CHECK(ext == 2 * (MPI_Aint)sizeof(struct particle), "resized extent %ld", (long)ext);
		memset(pr, 0, sizeof pr);
		OK(MPI_Sendrecv(ps, 2, rs, right, 6, pr, 2, pt, left, 6, MPI_COMM_WORLD, &st));
		CHECK(pr[0].id == left * 10 + 0 && pr[1].id == left * 10 + 2, "resized stride: %d %d", pr[0].id, pr[1].id);
		/* Pack / Unpack / Pack_size */
		int psz;
		OK(MPI_Pack_size(4, pt, MPI_COMM_WORLD, &psz));
		CHECK(psz >= 4 * 29, "Pack_size %d", psz);
		char *pbuf = malloc(psz + 16);
		int pos = 0, n = 7;
		OK(MPI_Pack(&n, 1, MPI_INT, pbuf, psz + 16, &pos, MPI_COMM_WORLD));
		OK(MPI_Pack(ps, 3, pt, pbuf, psz + 16, &pos, MPI_COMM_WORLD));
		OK(MPI_Send(pbuf, pos, MPI_PACKED, right, 7, MPI_COMM_WORLD));
		char *rbuf = malloc(psz + 16);
		OK(MPI_Recv(rbuf, psz + 16, MPI_PACKED, left, 7, MPI_COMM_WORLD, &st));
		int got, rpos = 0, m = 0;
		OK(MPI_Get_count(&st, MPI_PACKED, &got));
		OK(MPI_Unpack(rbuf, got, &rpos, &m, 1, MPI_INT, MPI_COMM_WORLD));
		memset(pr, 0, sizeof pr);
		OK(MPI_Unpack(rbuf, got, &rpos, pr, 3, pt, MPI_COMM_WORLD));
		CHECK(m == 7 && pr[2].id == left * 10 + 2 && pr[2].tag == 'c' && rpos == got, "Unpack: %d %d %d", m, pr[2].id, rpos);
		free(pbuf), free(rbuf);
		/* a type freed while a receive uses it: the receive completes */
		MPI_Datatype dup;
		OK(MPI_Type_dup(pt, &dup));
		MPI_Request r;
		memset(pr, 0, sizeof pr);
		OK(MPI_Irecv(pr, 4, dup, left, 8, MPI_COMM_WORLD, &r));
		OK(MPI_Type_free(&dup));
		OK(MPI_Send(ps, 4, pt, right, 8, MPI_COMM_WORLD));
		OK(MPI_Wait(&r, &st));
		CHECK(pr[3].id == left * 10 + 3 && pr[3].tag == 'd', "receive with a freed type: %d", pr[3].id);
		MPI_Type_free(&rs);
		MPI_Type_free(&pt);
	}
	/* address helpers, deprecated names */
	{
		int a[4];
		MPI_Aint p0, p1;
		OK(MPI_Get_address(&a[0], &p0));
		OK(MPI_Get_address(&a[3], &p1));
		CHECK(MPI_Aint_diff(p1, p0) == 12, "Aint_diff");
		OK(MPI_Type_size(MPI_DOUBLE_INT, &sz));
		OK(MPI_Type_get_extent(MPI_DOUBLE_INT, &lb, &ext));
		CHECK(sz == 12 && ext == 16, "DOUBLE_INT size %d extent %ld", sz, (long)ext);
		OK(MPI_Type_size(MPI_LONG_DOUBLE, &sz));
		CHECK(sz == (int)sizeof(long double), "LONG_DOUBLE size %d", sz);
	}
	DONE();
}
