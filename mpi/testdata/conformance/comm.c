/* Communicators and groups: dup, split (colors, keys, UNDEFINED), create
 * from a group, compare, free; groups: incl, excl, translate_ranks,
 * union, compare; messages on one communicator never match receives on
 * another (the same tag and ranks); COMM_SELF. Plus the environment:
 * Initialized, Finalized, version, processor name, Wtime, attributes,
 * Init_thread's level, error handlers. */
#include "check.h"
#include <unistd.h>

static int errh_called;
static void myhandler(MPI_Comm *c, int *code, ...)
{
	(void)c;
	errh_called = *code;
}

int main(int argc, char **argv)
{
	int size, flag, provided;
	MPI_Initialized(&flag);
	CHECK(!flag, "Initialized before Init");
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	CHECK(provided == MPI_THREAD_FUNNELED, "Init_thread provided %d", provided);
	MPI_Initialized(&flag);
	CHECK(flag, "Initialized after Init");
	{
		int v, sv, len;
		char name[MPI_MAX_PROCESSOR_NAME], lib[MPI_MAX_LIBRARY_VERSION_STRING];
		OK(MPI_Get_version(&v, &sv));
		CHECK(v == MPI_VERSION && sv == MPI_SUBVERSION, "version %d.%d", v, sv);
		OK(MPI_Get_processor_name(name, &len));
		CHECK(len > 0 && len == (int)strlen(name), "processor name %s", name);
		OK(MPI_Get_library_version(lib, &len));
		CHECK(strstr(lib, "cosched") != NULL, "library version %s", lib);
		double t0 = MPI_Wtime();
		usleep(20000);
		double t1 = MPI_Wtime();
		CHECK(t1 - t0 >= 0.019 && t1 - t0 < 5, "Wtime: 20 ms slept measured %g s", t1 - t0);
		CHECK(MPI_Wtick() > 0 && MPI_Wtick() < 0.01, "Wtick %g", MPI_Wtick());
		int *ub;
		OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
		CHECK(flag && *ub >= 32767, "TAG_UB");
		int *us;
		OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &us, &flag));
		CHECK(!flag || *us >= size, "UNIVERSE_SIZE");
		OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &us, &flag));
		/* and the largest tag works */
		int x = 5, y = 0;
		OK(MPI_Sendrecv(&x, 1, MPI_INT, me, *ub, &y, 1, MPI_INT, me, *ub, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		CHECK(y == 5, "tag TAG_UB");
	}
	/* dup: same group, other context */
	MPI_Comm dup;
	OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	int res;
	OK(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
	CHECK(res == MPI_CONGRUENT, "compare world/dup %d", res);
	OK(MPI_Comm_compare(dup, dup, &res));
	CHECK(res == MPI_IDENT, "compare dup/dup %d", res);
	{
		/* same tag, same ranks, two communicators: each receive gets its own */
		int right = (me + 1) % size, left = (me + size - 1) % size;
		int a = me, b = me + 100, ra = -1, rb = -1;
		MPI_Request r[2];
		OK(MPI_Irecv(&rb, 1, MPI_INT, left, 0, dup, &r[0]));
		OK(MPI_Irecv(&ra, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]));
		OK(MPI_Send(&a, 1, MPI_INT, right, 0, MPI_COMM_WORLD));
		OK(MPI_Send(&b, 1, MPI_INT, right, 0, dup));
		OK(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
		CHECK(ra == left && rb == left + 100, "contexts mixed: world got %d, dup got %d", ra, rb);
	}
	/* split: three colors, reversed keys, and UNDEFINED for the last rank */
	MPI_Comm sp;
	int color = me == size - 1 && size > 2 ? MPI_UNDEFINED : me % 3;
	OK(MPI_Comm_split(MPI_COMM_WORLD, color, size - me, &sp));
	if (color == MPI_UNDEFINED)
		CHECK(sp == MPI_COMM_NULL, "split UNDEFINED gave a communicator");
	else {
		int sr, ss, want = 0, wantsize = 0;
		MPI_Comm_rank(sp, &sr);
		MPI_Comm_size(sp, &ss);
		for (int k = 0; k < size; k++) {
			int kc = k == size - 1 && size > 2 ? MPI_UNDEFINED : k % 3;
			if (kc == color) {
				wantsize++;
				if (k > me)
					want++;
			}
		}
		CHECK(sr == want && ss == wantsize, "split rank %d/%d want %d/%d", sr, ss, want, wantsize);
		int sum;
		OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, sp));
		int wsum = 0;
		for (int k = 0; k < size; k++)
			if ((k == size - 1 && size > 2 ? MPI_UNDEFINED : k % 3) == color)
				wsum += k;
		CHECK(sum == wsum, "Allreduce on split %d want %d", sum, wsum);
		/* groups: translate my split rank back to world */
		MPI_Group sg, wg;
		OK(MPI_Comm_group(sp, &sg));
		OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
		int wr;
		OK(MPI_Group_translate_ranks(sg, 1, &sr, wg, &wr));
		CHECK(wr == me, "translate_ranks %d want %d", wr, me);
		int gs, gr;
		OK(MPI_Group_size(sg, &gs));
		OK(MPI_Group_rank(sg, &gr));
		CHECK(gs == ss && gr == sr, "group size/rank");
		OK(MPI_Group_free(&sg));
		OK(MPI_Group_free(&wg));
		CHECK(sg == MPI_GROUP_NULL, "Group_free");
		OK(MPI_Comm_free(&sp));
		CHECK(sp == MPI_COMM_NULL, "Comm_free");
	}
	/* Comm_create from the even ranks, in reverse order */
	{
		MPI_Group wg, eg, og, ug;
		OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
		int ne = (size + 1) / 2, *ranks = malloc(ne * sizeof(int));
		for (int i = 0; i < ne; i++)
			ranks[i] = 2 * (ne - 1 - i);
		OK(MPI_Group_incl(wg, ne, ranks, &eg));
		OK(MPI_Group_excl(wg, ne, ranks, &og));
		int osz;
		MPI_Group_size(og, &osz);
		CHECK(osz == size - ne, "Group_excl size %d", osz);
		OK(MPI_Group_union(eg, og, &ug));
		OK(MPI_Group_compare(ug, wg, &res));
		CHECK(res == MPI_SIMILAR || (size == 1 && res == MPI_IDENT), "union of evens and odds vs world: %d", res);
		MPI_Comm ec;
		OK(MPI_Comm_create(MPI_COMM_WORLD, eg, &ec));
		if (me % 2 == 0) {
			int er;
			MPI_Comm_rank(ec, &er);
			CHECK(er == ne - 1 - me / 2, "Comm_create rank %d", er);
			int v = me, sum;
			OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, ec));
			CHECK(sum == (ne - 1) * ne, "Comm_create Allreduce %d", sum);
			OK(MPI_Barrier(ec));
			MPI_Comm_free(&ec);
		} else
			CHECK(ec == MPI_COMM_NULL, "Comm_create gave a non-member a communicator");
		int t[2] = {0, MPI_PROC_NULL}, tr[2];
		OK(MPI_Group_translate_ranks(eg, 2, t, wg, tr));
		CHECK(tr[0] == 2 * (ne - 1) && tr[1] == MPI_PROC_NULL, "translate %d %d", tr[0], tr[1]);
		MPI_Group_free(&wg), MPI_Group_free(&eg), MPI_Group_free(&og), MPI_Group_free(&ug);
		free(ranks);
	}
	/* split_type SHARED: every rank here runs on this host; an info object passed */
	{
		MPI_Comm node;
		MPI_Info info, dup;
		int ns, nk;
		char val[32];
		OK(MPI_Info_create(&info));
		OK(MPI_Info_set(info, "hint", "first"));
		OK(MPI_Info_set(info, "hint", "second"));
		OK(MPI_Info_set(info, "other", "x"));
		OK(MPI_Info_dup(info, &dup));
		OK(MPI_Info_get_nkeys(dup, &nk));
		OK(MPI_Info_get(dup, "hint", sizeof val - 1, val, &flag));
		CHECK(nk == 2 && flag && !strcmp(val, "second"), "info: %d keys, hint=%s", nk, val);
		OK(MPI_Info_delete(dup, "hint"));
		OK(MPI_Info_get(dup, "hint", sizeof val - 1, val, &flag));
		CHECK(!flag, "info: deleted key still there");
		OK(MPI_Info_free(&dup));
		OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, info, &node));
		OK(MPI_Info_free(&info));
		CHECK(info == MPI_INFO_NULL, "Info_free");
		MPI_Comm_size(node, &ns);
		CHECK(ns == size, "split_type SHARED: %d of %d ranks on this host", ns, size);
		MPI_Comm_free(&node);
	}
	/* COMM_SELF */
	{
		int sr, ss, v = 3, w = 0;
		MPI_Comm_rank(MPI_COMM_SELF, &sr);
		MPI_Comm_size(MPI_COMM_SELF, &ss);
		CHECK(sr == 0 && ss == 1, "COMM_SELF %d/%d", sr, ss);
		OK(MPI_Sendrecv(&v, 1, MPI_INT, 0, 1, &w, 1, MPI_INT, 0, 1, MPI_COMM_SELF, MPI_STATUS_IGNORE));
		CHECK(w == 3, "self message");
		OK(MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF));
		CHECK(w == 3, "self Allreduce");
		OK(MPI_Barrier(MPI_COMM_SELF));
	}
	/* a user error handler, then ERRORS_RETURN */
	{
		MPI_Errhandler eh, got;
		OK(MPI_Comm_create_errhandler(myhandler, &eh));
		OK(MPI_Comm_set_errhandler(dup, eh));
		int rc = MPI_Send(&me, 1, MPI_INT, size + 5, 0, dup);
		CHECK(rc == MPI_ERR_RANK && errh_called == MPI_ERR_RANK, "user handler: rc %d, called with %d", rc, errh_called);
		OK(MPI_Comm_get_errhandler(dup, &got));
		CHECK(got == eh, "get_errhandler");
		OK(MPI_Errhandler_free(&eh));
		OK(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
		/* a dup inherits the handler */
		MPI_Comm d2;
		OK(MPI_Comm_dup(dup, &d2));
		rc = MPI_Send(&me, 1, MPI_INT, 0, -5, d2);
		CHECK(rc == MPI_ERR_TAG, "dup's inherited ERRORS_RETURN: %d", rc);
		MPI_Comm_free(&d2);
	}
	MPI_Comm_free(&dup);
	MPI_Finalized(&flag);
	CHECK(!flag, "Finalized before Finalize");
	MPI_Finalize();
	MPI_Finalized(&flag);
	if (!flag)
		printf("FAIL rank %d: Finalized after Finalize\n", me), failures++;
	if (failures == 0 && me == 0)
		printf("PASS\n");
	return failures ? 1 : 0;
}
