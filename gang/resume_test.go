package gang_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
)

// A core rebuilt with Resume holds the resumed jobs' columns, queues behind
// them, and releases them when they finish, as the original core did.
func TestResumeRebuildsTheMatrix(t *testing.T) {
	for _, p := range []gang.Policy{gang.FCFS, gang.EASY, gang.Conservative, gang.PriorityBF} {
		t.Run(string(p), func(t *testing.T) {
			s, err := gang.New(gang.Config{Machine: gang.Machine{Processors: 4}, MPL: 1, Policy: p, EnforceLimits: true})
			if err != nil {
				t.Fatal(err)
			}
			sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
			if err := s.Resume(gang.Job{ID: 1, Processors: 2, Estimate: sec(100)}, 0, []int{1, 3}, sec(5), sec(50)); err != nil {
				t.Fatal(err)
			}
			if err := s.Resume(gang.Job{ID: 2, Processors: 1, Estimate: sec(100)}, 0, []int{3}, sec(5), sec(50)); !errors.Is(err, gang.ErrInvalidJob) {
				t.Fatalf("resume on a held column: %v, want ErrInvalidJob", err)
			}
			if err := s.Submit(gang.Job{ID: 3, Submit: sec(50), Processors: 3, Estimate: sec(10)}, sec(50)); err != nil {
				t.Fatal(err)
			}
			if err := s.Submit(gang.Job{ID: 4, Submit: sec(50), Processors: 2, Estimate: sec(10)}, sec(50)); err != nil {
				t.Fatal(err)
			}
			ds, err := s.Schedule(sec(50))
			if err != nil {
				t.Fatal(err)
			}
			// Job 3 needs 3 of the 2 free columns; FCFS keeps 4 behind it, the
			// backfilling policies start 4 on columns 0 and 2 (it ends before 105).
			for _, d := range ds {
				if d.Kind == gang.Start && (d.Job != 4 || !slices.Equal(d.Columns, []int{0, 2})) {
					t.Fatalf("decision %v: want job 4 on columns 0 and 2 only", d)
				}
			}
			if w, ok := s.NextWakeup(); !ok || w > sec(105) {
				t.Fatalf("wakeup %v %v: want the resumed job's limit at 105s or earlier", w, ok)
			}
			if err := s.Finished(1, sec(60)); err != nil {
				t.Fatal(err)
			}
			if len(ds) > 0 {
				if err := s.Finished(4, sec(60)); err != nil {
					t.Fatal(err)
				}
			}
			ds, err = s.Schedule(sec(60))
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) == 0 || ds[0].Kind != gang.Start || ds[0].Job != 3 {
				t.Fatalf("after the resumed job ended: %v, want job 3 to start", ds)
			}
		})
	}
}
