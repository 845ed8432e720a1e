package mpi_test

import (
	"fmt"
	"testing"
	"time"
)

// Under bcs a message sent in slice k is delivered at slice k's end, so a
// collective costs a slice per dependent step. The one-round algorithms
// (COSCHED_MPI_COLL unset under bcs) must take about one slice each; the
// tree ones (COSCHED_MPI_COLL=tree, the immediate modes' algorithms) take
// 1+log2(n) and more, and fail the same bound. Measured in slices the
// relay cut (its per-job collective_slices), not in wall time: a loaded
// host makes both slower in seconds but the direct ones stay near one
// slice each, because the slice is long against the work in it.
func TestCollectiveSlices(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const (
		ranks = 8
		k     = 10                     // collectives per job
		slice = 100 * time.Millisecond // long against a collective's work, also under load
		// slices per collective: one, and room for a rank missing a strobe
		// now and then under load; the tree's fewest, 2 for Reduce_scatter
		// (reduce, then the root's blocks), 3 or more for the others, stay
		// above it even with the window's edge (a slice less in 9 calls)
		bound = 1.75
	)
	// extra is the point-to-point slices slices.c adds per call: Scan's
	// result goes back from rank n-1 to rank 0 (see slices.c)
	extra := map[string]float64{"scan": 1}
	prog := program(t, "mpi/testdata/slices.c")
	c := newClusterSlice(t, 2, slice)
	measure := func(t *testing.T, kind, alg string) float64 {
		c.env = nil
		if alg == "tree" {
			c.env = []string{"COSCHED_MPI_COLL=tree"}
		}
		res := c.run(t, prog, spread(ranks, 2), 60*time.Second, kind, fmt.Sprint(k))
		expectPass(t, kind+" "+alg, res)
		job := c.nextID - 1
		var worst uint64
		for i, r := range c.relays {
			found := false
			for _, js := range r.Stats().Jobs {
				if js.Job != job {
					continue
				}
				found = true
				if js.Collectives != k*ranks/2 {
					t.Errorf("%s %s: relay %d counted %d collective entries, want %d", kind, alg, i, js.Collectives, k*ranks/2)
				}
				worst = max(worst, js.CollectiveSlices)
			}
			if !found {
				t.Fatalf("%s %s: relay %d has no stats of job %d", kind, alg, i, job)
			}
		}
		per := float64(worst) / (k - 1)
		t.Logf("%s %s: %d slices for %d collectives: %.2f slices each", kind, alg, worst, k-1, per)
		return per
	}
	for _, kind := range []string{"allreduce", "bcast", "allgather", "reduce_scatter", "scan", "barrier"} {
		t.Run(kind, func(t *testing.T) {
			direct := measure(t, kind, "direct")
			tree := measure(t, kind, "tree")
			t.Logf("%s on %d ranks: direct %.2f, tree %.2f slices per collective (%.1fx)", kind, ranks, direct, tree, tree/max(direct, 0.01))
			bound := bound + extra[kind]
			if direct > bound {
				t.Errorf("%s under bcs: %.2f slices per collective, want at most %.1f", kind, direct, bound)
			}
			switch {
			case kind == "barrier":
				// MPI_COMM_WORLD's barrier is the relay's own in both
				if tree > bound {
					t.Errorf("relay barrier with COSCHED_MPI_COLL=tree: %.2f slices per collective, want at most %.1f", tree, bound)
				}
			case tree <= bound:
				t.Errorf("%s with COSCHED_MPI_COLL=tree: %.2f slices per collective, at most %.1f: the test does not tell the algorithms apart", kind, tree, bound)
			}
		})
	}
}
