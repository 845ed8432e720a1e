package mpi_test

import (
	"fmt"
	"testing"
	"time"
)

// TestFileIO runs testdata/conformance/io.c (MPI-IO over POSIX: views,
// file pointers, collectives, errors, delete on close) unmodified on
// cosched's library, its ranks spread over two relays on this host and
// sharing a directory, in immediate delivery on 1 and 3 ranks and under
// bcs on 2.
func TestFileIO(t *testing.T) {
	prog := program(t, "mpi/testdata/conformance/io.c")
	for _, mode := range []string{"immediate", "bcs"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t, 2, mode == "bcs")
			sizes := []int{1, 3}
			if mode == "bcs" {
				sizes = []int{2}
			}
			for _, n := range sizes {
				t.Run(fmt.Sprint(n), func(t *testing.T) {
					res := c.run(t, prog, spread(n, 2), 60*time.Second, t.TempDir())
					expectPass(t, fmt.Sprintf("io.c on %d ranks", n), res)
				})
			}
		})
	}
}
