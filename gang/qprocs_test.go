package gang

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestQueueProcsFollowQueue: the queue's column of processors, which
// EASY's backfill walk reads instead of the records, stays equal to the
// queued jobs' processors through submits, starts, finishes of queued and
// running jobs, queue moves and columns going offline, under every policy.
func TestQueueProcsFollowQueue(t *testing.T) {
	for seed := range uint64(20) {
		for _, policy := range Policies() {
			rng := rand.New(rand.NewPCG(seed, 5))
			P := 1 + rng.IntN(40)
			s, err := New(Config{Machine: Machine{Processors: P}, MPL: 1 + int(seed%2), Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			s.ReuseColumns()
			var live []JobID
			now := time.Duration(0)
			for id := JobID(1); id < 400; id++ {
				now += time.Duration(rng.IntN(5)) * time.Second
				if err := s.Submit(Job{ID: id, Processors: 1 + rng.IntN(P), Estimate: time.Duration(1+rng.IntN(20)) * time.Second, Submit: now}, now); err != nil {
					t.Fatal(err)
				}
				live = append(live, id)
				for rng.IntN(3) == 0 && len(live) > 0 {
					i := rng.IntN(len(live))
					if err := s.Finished(live[i], now); err != nil {
						t.Fatal(err)
					}
					live = append(live[:i], live[i+1:]...)
				}
				if rng.IntN(10) == 0 {
					if err := s.SetOffline([]int{rng.IntN(P)}, rng.IntN(2) == 0, now); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.Schedule(now); err != nil {
					t.Fatal(err)
				}
				if len(s.qprocs) != len(s.queue) {
					t.Fatalf("seed %d %s: %d processors for %d queued jobs", seed, policy, len(s.qprocs), len(s.queue))
				}
				for i, j := range s.queue {
					if s.qprocs[i] != j.Processors {
						t.Fatalf("seed %d %s: queued job %d of %d processors listed with %d", seed, policy, j.ID, j.Processors, s.qprocs[i])
					}
				}
			}
		}
	}
}
