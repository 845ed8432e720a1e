package mpi_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestManual runs a program of the developer's choice, for debugging:
// COSCHED_MPI_RUN="N PROGRAM ARGS..." (N ranks over two relays;
// COSCHED_MPI_BCS=1 for bcs). Skipped otherwise.
func TestManual(t *testing.T) {
	spec := strings.Fields(os.Getenv("COSCHED_MPI_RUN"))
	if len(spec) < 2 {
		t.Skip("COSCHED_MPI_RUN not set")
	}
	needKit(t)
	n, err := strconv.Atoi(spec[0])
	if err != nil {
		t.Fatal(err)
	}
	prog := spec[1]
	if strings.HasSuffix(prog, ".c") {
		prog = program(t, prog)
	}
	c := newCluster(t, 2, os.Getenv("COSCHED_MPI_BCS") == "1")
	for _, r := range c.run(t, prog, spread(n, 2), 60*time.Second, spec[2:]...) {
		t.Logf("rank %d exit %d\n%s%s", r.rank, r.exit, indent(r.out), indent(r.err))
	}
}
