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
	// sizes: immediate, then bcs (slower: a message waits for its slice,
	// and the collectives are the one-round ones), then immediate with the
	// one-round collectives forced (COSCHED_MPI_COLL=direct: bcs's
	// algorithms on more rank counts, fast)
	// (numbered: immediate, the ranks with a relay grace, as an agent
	// with --keep-ranks starts them: protocol 3's numbered, kept and
	// acknowledged messages under every call of the programs)
	progs := []struct {
		src                          string
		sizes, bcs, direct, numbered []int
	}{
		{"mpi/testdata/conformance/p2p.c", []int{2, 3}, []int{3}, nil, []int{3}},
		{"mpi/testdata/conformance/coll.c", []int{1, 4, 5}, []int{3}, []int{4, 5}, []int{4}},
		{"mpi/testdata/conformance/types.c", []int{2, 3}, []int{3}, nil, []int{3}},
		{"mpi/testdata/conformance/comm.c", []int{1, 4, 5}, []int{5}, []int{4}, []int{5}},
		// 1 and 2 ranks: a rank is its own neighbour, or the same one twice
		{"mpi/testdata/conformance/topo.c", []int{1, 2, 5}, []int{4}, nil, []int{3}},
		{"mpi/testdata/conformance/attr.c", []int{1, 3}, []int{2}, nil, nil},
		{"mpi/testdata/conformance/nbc.c", []int{1, 2, 5}, []int{3}, []int{4}, []int{4}},
		// one-sided, active target: odd sizes leave a rank without a
		// post/start partner
		{"mpi/testdata/conformance/rma.c", []int{1, 2, 5}, []int{3}, []int{4}, []int{3}},
		// passive target: 1 rank locks only itself
		{"mpi/testdata/conformance/passive.c", []int{1, 2, 4}, []int{3}, nil, []int{3}},
		// the test's relays are on one host: every rank shares the window
		{"mpi/testdata/conformance/shared.c", []int{1, 2, 4}, []int{3}, nil, []int{3}},
		{"mpi/testdata/conformance/cancel.c", []int{1, 2, 3}, []int{3}, nil, []int{3}},
		{"mpi/testdata/conformance/mprobe.c", []int{1, 2, 4}, []int{3}, nil, []int{3}},
		// immediate: every pair on a channel (same-node and cross-node);
		// numbered: same-node channels beside the relays (spread: ranks 0
		// and 2 share a node)
		{"mpi/testdata/conformance/channels.c", []int{3, 4}, []int{3}, nil, []int{3, 4}},
	}
	for _, mode := range []string{"immediate", "bcs", "direct", "numbered"} {
		t.Run(mode, func(t *testing.T) {
			c := newCluster(t, 2, mode == "bcs")
			switch mode {
			case "direct":
				c.env = []string{"COSCHED_MPI_COLL=direct"}
			case "numbered":
				// same-node channels only: the messages between the
				// nodes take the relays, numbered, beside the channels
				c.env = []string{"COSCHED_RELAY_GRACE=1m", "COSCHED_MPI_DEBUG=1", "COSCHED_MPI_CHANNELS=node"}
			}
			for _, p := range progs {
				sizes := p.sizes
				switch mode {
				case "bcs":
					sizes = p.bcs
				case "direct":
					sizes = p.direct
				case "numbered":
					sizes = p.numbered
				}
				if len(sizes) == 0 {
					continue
				}
				prog := program(t, p.src)
				for _, n := range sizes {
					t.Run(fmt.Sprintf("%s/%d", strings.TrimSuffix(filepath.Base(p.src), ".c"), n), func(t *testing.T) {
						res := c.run(t, prog, spread(n, 2), 60*time.Second)
						expectPass(t, fmt.Sprintf("%s on %d ranks", p.src, n), res)
						for _, r := range res {
							if mode == "numbered" && !strings.Contains(r.err, "unacknowledged messages kept") {
								t.Errorf("rank %d did not number its messages (no account at MPI_Finalize): stderr %q", r.rank, r.err)
							}
						}
					})
				}
			}
		})
	}
}
