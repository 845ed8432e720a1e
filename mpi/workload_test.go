package mpi_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The workload programs of node's BenchmarkMPIWorkloadModes (bench's
// news,B and news,NB templates in MPI) run a few short iterations, checking
// every message and Allreduce, on 1 to 4 ranks over two relays: the
// benchmark's programs stay correct without running the benchmark.
func TestWorkloadPrograms(t *testing.T) {
	c := newCluster(t, 2, false)
	for _, src := range []string{"mpi/testdata/workload/blocking.c", "mpi/testdata/workload/nonblocking.c"} {
		prog := program(t, src)
		for _, n := range []int{1, 2, 3, 4} {
			name := strings.TrimSuffix(filepath.Base(src), ".c")
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				// grain 1 ms ± 0.5 ms, 20 iterations, 4 KiB messages
				res := c.run(t, prog, spread(n, 2), 60*time.Second, "1000", "1000", "20", "4096", "3")
				expectPass(t, fmt.Sprintf("%s on %d ranks", src, n), res)
			})
		}
	}
}
