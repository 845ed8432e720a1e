package mpi_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/mpi/mpibuild"
)

func errorsIsUnavailable(err error) bool { return errors.Is(err, mpibuild.ErrUnavailable) }

// The conformance programs, each on several rank counts (non-powers of
// two among them) and placements, under immediate delivery and under bcs.
func TestConformance(t *testing.T) {
	// sizes: immediate, then bcs (slower: a message waits for its slice)
	progs := []struct {
		src        string
		sizes, bcs []int
	}{
		{"mpi/testdata/conformance/p2p.c", []int{2, 3}, []int{3}},
		{"mpi/testdata/conformance/coll.c", []int{1, 4, 5}, []int{3}},
		{"mpi/testdata/conformance/types.c", []int{2, 3}, []int{3}},
		{"mpi/testdata/conformance/comm.c", []int{1, 4, 5}, []int{5}},
	}
	for _, mode := range []string{"immediate", "bcs"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t, 2, mode == "bcs")
			for _, p := range progs {
				prog := program(t, p.src)
				sizes := p.sizes
				if mode == "bcs" {
					sizes = p.bcs
				}
				for _, n := range sizes {
					t.Run(fmt.Sprintf("%s/%d", strings.TrimSuffix(filepath.Base(p.src), ".c"), n), func(t *testing.T) {
						res := c.run(t, prog, spread(n, 2), 60*time.Second)
						expectPass(t, fmt.Sprintf("%s on %d ranks", p.src, n), res)
					})
				}
			}
		})
	}
}
