package gang_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/gangtest"
)

// TestBackfillShortCutsSameDecisions: EASY's backfill computes the
// head's reservation at its first candidate that fits, not before the
// walk, and passes over a candidate wider than every row's free columns
// without trying each row; a core that does neither (ReferenceBackfill)
// decides exactly the same (rules and explanations included) on the
// recorded inputs of random workloads, for FCFS, EASY and EASY-SJBF, MPL
// 1 to 3, with and without column memory, with and without time limits
// enforced, and with jobs that run past their estimates (the head's
// reservation then moves with the clock).
func TestBackfillShortCutsSameDecisions(t *testing.T) {
	for seed := range uint64(24) {
		rng := rand.New(rand.NewPCG(seed, 17))
		P, runs := reuseWorkload(rng)
		for i := range runs {
			if rng.IntN(4) == 0 { // past its estimate: killed at it when limits are enforced
				runs[i].Runtime = runs[i].Estimate + time.Duration(1+rng.IntN(120))*time.Second
			}
		}
		memory := seed%3 == 0
		if memory {
			for i := range runs {
				if rng.IntN(2) == 0 {
					runs[i].Memory = 1 + rng.Int64N(100)
				}
			}
		}
		for _, policy := range []gang.Policy{gang.FCFS, gang.EASY, gang.EASYSJBF} {
			cfg := gang.Config{Machine: gang.Machine{Processors: P}, MPL: 1 + int(seed%3), Policy: policy, EnforceLimits: seed%4 == 1}
			if memory {
				cfg.Machine.MemoryPerProcessor = 150
			}
			_, rec, err := gangtest.Simulate(cfg, runs)
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, policy, err)
			}
			got, err := gangtest.ReplayWith(cfg, rec.Log, func(s *gang.Scheduler) { gang.ReferenceBackfill(s) })
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, policy, err)
			}
			if !slices.ContainsFunc(got, func(d gang.Decision) bool { return d.Kind == gang.Start }) {
				t.Fatalf("seed %d %s: nothing started", seed, policy)
			}
			if a, b := gangtest.Format(got), gangtest.Format(rec.Decisions); a != b {
				t.Fatalf("seed %d %s: the short cuts change the decisions:\n%s\nvs\n%s", seed, policy, b, a)
			}
		}
	}
}
