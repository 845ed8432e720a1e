/* Shared by the conformance programs: CHECK records a failure with its
 * line and keeps going; DONE finalizes and exits non-zero if this rank
 * saw one. The Go test runs each program on N ranks and wants every rank
 * to exit 0 and no line starting with FAIL. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int me = -1;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			failures++;                                                                \
			printf("FAIL rank %d %s:%d: ", me, __FILE__, __LINE__);                    \
			printf(__VA_ARGS__);                                                       \
			printf("\n");                                                              \
			fflush(stdout);                                                            \
		}                                                                                  \
	} while (0)

#define OK(call) CHECK((call) == MPI_SUCCESS, "%s failed", #call)

#define DONE()                                                                                     \
	do {                                                                                       \
		MPI_Finalize();                                                                    \
		if (failures == 0 && me == 0)                                              \
			printf("PASS\n");                                                          \
		return failures ? 1 : 0;                                                           \
	} while (0)
