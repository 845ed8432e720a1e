package gang_test

import (
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
)

// Columns with their own memory (nodes advertising what they have) admit
// jobs by it: a job too big for the small node's columns goes to the big
// node's, and waits, explained as "no memory", when those are taken.
func TestColumnMemoryAdmits(t *testing.T) {
	s, err := gang.New(gang.Config{Machine: gang.Machine{Processors: 5}, MPL: 1, Policy: gang.EASY})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetColumnMemory([]int{0, 1, 4}, 100, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetColumnMemory([]int{2, 3}, 1000, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetColumnMemory([]int{5}, 1, 0); err == nil {
		t.Error("column 5 of a 5-column machine accepted")
	}
	for _, j := range []gang.Job{
		{ID: 1, Processors: 2, Estimate: time.Hour, Memory: 500},
		{ID: 3, Processors: 2, Estimate: time.Hour, Memory: 50},
		{ID: 2, Processors: 1, Estimate: time.Hour, Memory: 500},
	} {
		if err := s.Submit(j, 0); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := s.Schedule(0)
	if err != nil {
		t.Fatal(err)
	}
	started := map[gang.JobID][]int{}
	for _, d := range ds {
		if d.Kind == gang.Start {
			started[d.Job] = d.Columns
		}
	}
	if c := started[1]; len(c) != 2 || c[0] != 2 || c[1] != 3 {
		t.Errorf("job 1 (500 per process) started on %v, want the big columns 2 and 3", c)
	}
	if _, ok := started[2]; ok {
		t.Error("job 2 started although no column has 500 left")
	}
	if c := started[3]; len(c) != 2 || c[0] != 0 || c[1] != 1 {
		t.Errorf("job 3 (50 per process) started on %v, want the small columns", c)
	}
	if why := s.Explain(2); why.Rule != gang.RuleNoMemory {
		t.Errorf("job 2 waits for %v, want no memory", why)
	}
	// Column 4 back to the machine's value (unlimited): job 2 fits there.
	if err := s.SetColumnMemory([]int{4}, 0, time.Second); err != nil {
		t.Fatal(err)
	}
	ds, _ = s.Schedule(time.Second)
	if len(ds) != 1 || ds[0].Job != 2 || ds[0].Columns[0] != 4 {
		t.Errorf("after the limits were lifted: %v, want job 2 started", ds)
	}
	if err := s.SetColumnMemory([]int{0}, -1, time.Second); err == nil {
		t.Error("negative memory accepted")
	}
}
