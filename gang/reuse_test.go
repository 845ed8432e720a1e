package gang_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/gangtest"
)

// reuseWorkload is a few hundred jobs of every width on a machine of up to
// 64 processors, so that finished jobs' records (and, with ReuseColumns,
// their columns) are reused by jobs wider and narrower than they were.
func reuseWorkload(rng *rand.Rand) (int, []gangtest.Run) {
	P := 1 + rng.IntN(64)
	runs := make([]gangtest.Run, 50+rng.IntN(150))
	t := time.Duration(0)
	for i := range runs {
		t += time.Duration(rng.IntN(30)) * time.Second
		est := time.Duration(1+rng.IntN(300)) * time.Second
		run := est
		if rng.IntN(2) == 0 {
			run = time.Duration(1+rng.Int64N(int64(est))) * time.Nanosecond
		}
		runs[i] = gangtest.Run{Job: gang.Job{ID: gang.JobID(i + 1), Submit: t, Processors: 1 + rng.IntN(P), Estimate: est}, Runtime: run}
	}
	return P, runs
}

// TestReuseColumnsSameDecisions: a core that reuses finished jobs' columns
// (what the simulator asks for) decides exactly as one that does not, on
// the recorded inputs of random workloads under every policy and MPL 1
// and 2; each decision's columns are compared as they were when decided.
func TestReuseColumnsSameDecisions(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 11))
		P, runs := reuseWorkload(rng)
		for _, policy := range gang.Policies() {
			cfg := gang.Config{Machine: gang.Machine{Processors: P}, MPL: 1 + int(seed%2), Policy: policy}
			_, rec, err := gangtest.Simulate(cfg, runs)
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, policy, err)
			}
			got, err := gangtest.ReplayWith(cfg, rec.Log, func(s *gang.Scheduler) { s.ReuseColumns() })
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, policy, err)
			}
			if a, b := gangtest.Format(got), gangtest.Format(rec.Decisions); a != b {
				t.Fatalf("seed %d %s: reusing columns changes the decisions:\n%s\nvs\n%s", seed, policy, a, b)
			}
		}
	}
}

// TestReuseColumnsAllocatesNothing: once warm, a core that reuses columns
// allocates nothing for a job's arrival, start and end.
func TestReuseColumnsAllocatesNothing(t *testing.T) {
	for _, policy := range []gang.Policy{gang.FCFS, gang.EASY} {
		s, err := gang.New(gang.Config{Machine: gang.Machine{Processors: 64}, MPL: 1, Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		s.ReuseColumns()
		now, id := time.Duration(0), gang.JobID(0)
		// Eight jobs of every width in the system at once: a job's arrival
		// starts it, its end (eight arrivals later) frees its columns.
		cycle := func() {
			id++
			now += time.Second
			if err := s.Submit(gang.Job{ID: id, Submit: now, Processors: 1 + int(id%8), Estimate: time.Hour}, now); err != nil {
				t.Fatal(err)
			}
			if ds, err := s.Schedule(now); err != nil || len(ds) != 1 {
				t.Fatalf("job %d: %v, %v: want one start", id, ds, err)
			}
			if id > 8 {
				if err := s.Finished(id-8, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 100 {
			cycle()
		}
		if allocs := testing.AllocsPerRun(1000, cycle); allocs != 0 {
			t.Errorf("%s: %.2f allocations per job once warm, want 0", policy, allocs)
		}
	}
}
