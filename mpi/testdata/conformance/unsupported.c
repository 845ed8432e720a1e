/* Calls a function outside cosched's subset: the job must fail naming it
 * (the rank tells the relay, Abort, and exits 1), never crash or hang.
 * argv[1] picks the call: "win" (MPI_Win_create_dynamic, a window
 * memory is attached to later), "pmpi" (the same through its PMPI_ name), "spawn" (MPI_Comm_spawn), "abort" (MPI_Abort
 * with code 7, for comparison), "preinit" (an unsupported call before
 * MPI_Init), "winout" (a Put that reaches past its target's window: the
 * target ends the job naming it, under a lock and between fences). */
#include "check.h"

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "win";
	if (!strcmp(what, "preinit")) {
		MPI_Session s;
		MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
		return 0;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win win;
	if (!strcmp(what, "win"))
		MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	else if (!strcmp(what, "pmpi"))
		PMPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	else if (!strcmp(what, "winout") || !strcmp(what, "winout-fence")) {
		int mem[4] = {0}, big[8] = {0};
		MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_SELF, &win);
		if (!strcmp(what, "winout")) {
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
			MPI_Put(big, 8, MPI_INT, 0, 0, 8, MPI_INT, win);
			MPI_Win_unlock(0, win);
		} else {
			MPI_Win_fence(0, win);
			MPI_Put(big, 2, MPI_INT, 0, 3, 2, MPI_INT, win); /* its second int is past the end */
			MPI_Win_fence(0, win);
		}
	} else if (!strcmp(what, "spawn")) {
		MPI_Comm child;
		MPI_Comm_spawn("/bin/true", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child, MPI_ERRCODES_IGNORE);
	} else if (!strcmp(what, "abort"))
		MPI_Abort(MPI_COMM_WORLD, 7);
	printf("FAIL rank %d: %s returned\n", me, what);
	MPI_Finalize();
	return 0;
}
