package mpi_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cosched/cosched/mpi/mpibuild"
)

func errorsIsUnavailable(err error) bool { return errors.Is(err, mpibuild.ErrUnavailable) }

// The conformance programs, each on several rank counts (non-powers of
// two among them) and placements, under immediate delivery and under bcs.
func TestConformance(t *testing.T) {
	progs := []struct {
		src   string
		sizes []int
	}{
		{"mpi/testdata/conformance/p2p.c", []int{2, 3}},
	}
	for _, mode := range []string{"immediate", "bcs"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t, 2, mode == "bcs")
			for _, p := range progs {
				prog := program(t, p.src)
				for _, n := range p.sizes {
					res := c.run(t, prog, spread(n, 2), 60*time.Second)
					expectPass(t, fmt.Sprintf("%s on %d ranks", p.src, n), res)
				}
			}
		})
	}
}
