package experiment

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

func machine() (sweep.Machine, sweep.Point) {
	m := sweep.DefaultMachine()
	m.Processors, m.MemoryPerProc, m.MeanRuntime = 4, 0, 2*time.Second
	return m, sweep.Point{Workload: "w3", Jobs: 25, Load: 0.8, Seed: 3}
}

// The workload is the generator's, deterministic, and each job's
// iterations make its drawn runtime to within half an iteration.
func TestWorkload(t *testing.T) {
	m, p := machine()
	a, err := Workload(m, p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Workload(m, p)
	if len(a) != 25 || !reflect.DeepEqual(a, b) {
		t.Fatalf("%d jobs; deterministic: %v", len(a), reflect.DeepEqual(a, b))
	}
	w3, _ := bench.LookupWorkload("w3")
	for i, j := range a {
		if j.Seq != i || (i > 0 && j.Submit < a[i-1].Submit) || j.Processors < 1 || j.Processors > 4 {
			t.Fatalf("job %d: %+v", i, j)
		}
		tpl, err := bench.ParseTemplate(j.Template)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, w := range w3.Templates {
			found = found || w.String() == tpl.String()
		}
		it := jss.IterationEstimate(tpl, j.Processors, m.Network)
		if !found || j.Estimate != time.Duration(j.Iterations)*it {
			t.Fatalf("job %d: %+v (iteration %v)", i, j, it)
		}
		if j.Seed != jss.ProgramSeed(p.Seed, int64(i+1)) {
			t.Fatalf("job %d: seed %d is not the simulator's", i, j.Seed)
		}
		if j.Iterations > 1 && (j.Estimate-j.Runtime).Abs() > it/2 {
			t.Fatalf("job %d: %d iterations of %v for a runtime of %v", i, j.Iterations, it, j.Runtime)
		}
	}
	p.Workload = "w9"
	if _, err := Workload(m, p); err == nil {
		t.Fatal("unknown workload accepted")
	}
}

// A record's times are offsets from the job's planned submission, taken
// from the controller's clock only by difference.
func TestRecordFromTheControllersAccount(t *testing.T) {
	server := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // far from this clock
	start, end := server.Add(2*time.Second), server.Add(5*time.Second)
	j := api.Job{State: api.Completed, Submit: server, Start: &start, End: &end, Ranks: []api.RankInfo{
		{Bench: &api.BenchStats{Compute: api.Duration{D: 2 * time.Second}, CommWait: api.Duration{D: time.Second}}},
		{Bench: &api.BenchStats{Compute: api.Duration{D: 3 * time.Second}}},
		{}, // a rank that did not report
	}}
	r := record(Record{Job: Job{Submit: 10 * time.Second}, Start: -1, End: -1}, j)
	if r.Start != 12*time.Second || r.End != 15*time.Second || r.Compute != 5*time.Second || r.CommWait != time.Second || r.Reports != 2 || !r.Completed() {
		t.Fatalf("%+v", r)
	}
	pending := record(Record{Job: Job{Submit: time.Second}, Start: -1, End: -1}, api.Job{State: api.Cancelled, Submit: server})
	if pending.Start != -1 || pending.End != -1 || pending.Completed() {
		t.Fatalf("%+v", pending)
	}
}

// Summarize counts completed jobs only, and utilization is the reported
// computation over processors × makespan.
func TestSummarize(t *testing.T) {
	recs := []Record{
		{Job: Job{Submit: 0, Processors: 2, Runtime: 4 * time.Second}, State: api.Completed, Start: 0, End: 4 * time.Second, Compute: 6 * time.Second},
		{Job: Job{Submit: 2 * time.Second, Processors: 1, Runtime: 2 * time.Second}, State: api.Completed, Start: 4 * time.Second, End: 10 * time.Second, Compute: 2 * time.Second},
		{Job: Job{Submit: 3 * time.Second, Processors: 1}, State: api.Failed, Start: 4 * time.Second, End: 5 * time.Second, Compute: time.Second},
	}
	s := Summarize(recs, 4, 10*time.Second)
	if s.Jobs != 3 || s.Completed != 2 {
		t.Fatalf("%+v", s)
	}
	m := s.Metrics
	if m.Response.Mean != 6 || m.Wait.Mean != 1 || m.Makespan != 10 || math.Abs(s.ProcessorUtil-9.0/40) > 1e-12 {
		t.Fatalf("response %v wait %v makespan %v util %v", m.Response.Mean, m.Wait.Mean, m.Makespan, s.ProcessorUtil)
	}
}

// Simulate runs the same point under each mode's model; local has none.
func TestSimulate(t *testing.T) {
	m, p := machine()
	want := map[sharing.Mode]sharing.Mode{sharing.Space: sharing.Space, sharing.Gang: sharing.Gang, sharing.BCS: sharing.BCS}
	p.MPL, p.Slice, p.Policy = 3, 50*time.Millisecond, "easy"
	for mode, sm := range want {
		row, err := Simulate(context.Background(), m, p, mode)
		if err != nil {
			t.Fatal(err)
		}
		if row.Mode != sm || row.Simulated != p.Jobs || !(row.MeanResponse > 0) || (sm == sharing.Space && row.MPL != 1) {
			t.Fatalf("%s: %+v", mode, row)
		}
	}
	if _, err := Simulate(context.Background(), m, p, sharing.Local); err == nil {
		t.Fatal("local mode simulated")
	}
}

// Each job's Dedicated is the runtime the simulator gives its twin run
// alone (so measured and simulated execution slowdowns divide by the same
// number), and Summarize divides by it: a job run exactly dedicated has
// execution slowdown 1.
func TestDedicatedIsTheSimulatorsRuntime(t *testing.T) {
	m, p := machine()
	jobs, err := Workload(m, p)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := m.Generator(p)
	if err != nil {
		t.Fatal(err)
	}
	p.Mode, p.MPL, p.Policy = sharing.Space, 1, "easy"
	got := map[int64]time.Duration{}
	if _, err := jss.RunModel(context.Background(), m.Config(p), gen, func(r jss.Result) error {
		got[r.Number] = r.Runtime
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	for i, j := range jobs {
		sim, ok := got[int64(i+1)]
		if !ok || j.Dedicated != sim || j.Dedicated <= 0 {
			t.Fatalf("job %d: dedicated %v, simulator %v (%v)", i, j.Dedicated, sim, ok)
		}
		recs = append(recs, Record{Job: j, State: api.Completed, Start: j.Submit, End: j.Submit + j.Dedicated})
	}
	if s := Summarize(recs, m.Processors, time.Second).Metrics.ExecSlowdown; math.Abs(s.Mean-1) > 1e-9 || math.Abs(s.Max-1) > 1e-9 {
		t.Fatalf("execution slowdown of dedicated runs: %+v", s)
	}
}
