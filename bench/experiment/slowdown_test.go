package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// Property: every slowdown a run reports is at least 1, by definition,
// measured and simulated, per job and in every statistic, on random
// workloads whose jobs are sub-second (where a floor in the divisor alone
// gave 0.68) to tens of seconds, and on measured jobs that ran faster than
// their modelled dedicated runtime.
func TestSlowdownAtLeastOne(t *testing.T) {
	ctx := context.Background()
	atLeastOne := func(what string, s metrics.Stat) {
		t.Helper()
		if s.Mean < 1 || s.Median < 1 || s.P95 < 1 || s.Max < 1 {
			t.Errorf("%s: %+v, want every figure ≥ 1", what, s)
		}
	}
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 27))
		m := sweep.DefaultMachine()
		m.Processors, m.MemoryPerProc = 4, 0
		m.MeanRuntime = []time.Duration{300 * time.Millisecond, time.Second, 20 * time.Second}[seed%3]
		p := sweep.Point{Workload: "w3", Jobs: 15, Load: 0.4 + rng.Float64(), Seed: seed, MPL: 3, Slice: 50 * time.Millisecond, Policy: "easy"}
		jobs, err := Workload(m, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []sharing.Mode{sharing.Space, sharing.Gang, sharing.BCS} {
			row, err := Simulate(ctx, m, p, mode)
			if err != nil {
				t.Fatal(err)
			}
			if row.MeanSlowdown < 1 || row.MeanBoundedSlowdown < 1 {
				t.Errorf("%v, seed %d: simulated mean slowdown %g, bounded %g", mode, seed, row.MeanSlowdown, row.MeanBoundedSlowdown)
			}
			sim, err := SimulateJobs(ctx, m, p, mode)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range sim {
				if sd := metrics.Slowdown(j.End-jobs[j.Seq].Submit, j.Runtime); sd < 1 {
					t.Errorf("%v, seed %d: simulated job %d: slowdown %g", mode, seed, j.Seq, sd)
				}
			}
			// Measured: random waits, executions from half to three
			// times the dedicated runtime.
			var recs []Record
			for _, j := range jobs {
				start := j.Submit + time.Duration(rng.Float64()*float64(2*time.Second))
				end := start + time.Duration((0.5+2.5*rng.Float64())*float64(j.Dedicated))
				recs = append(recs, Record{Job: j, State: api.Completed, Start: start, End: end})
				if sd := metrics.Slowdown(end-j.Submit, j.Dedicated); sd < 1 {
					t.Errorf("%v, seed %d: measured job %d: slowdown %g", mode, seed, j.Seq, sd)
				}
			}
			s := Summarize(recs, m.Processors, 10*time.Second)
			atLeastOne(fmt.Sprintf("%v, seed %d: measured slowdown", mode, seed), s.Metrics.Slowdown)
			atLeastOne(fmt.Sprintf("%v, seed %d: measured bounded slowdown", mode, seed), s.Metrics.BoundedSlowdown)
		}
	}
}

// A mode with no job done reports no measured figure ("-"), not a
// slowdown of 0.
func TestTableNothingDone(t *testing.T) {
	run := &Run{Workload: "w3", Jobs: 3, Nodes: 2, MPL: 3, Work: "wall", Modes: []ModeResult{{
		Mode: sharing.Gang, Summary: Summary{Jobs: 3},
		Simulated: &sweep.Row{MeanResponse: 2, MeanSlowdown: 1.25, Makespan: 9, ProcessorUtil: 0.5},
	}}}
	var b strings.Builder
	WriteTable(&b, run, false)
	var row string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, "gang ") {
			row = l
			break
		}
	}
	if f := strings.Fields(row); len(f) != 7 || f[1] != "0/3" || f[2] != "-/2.00s" || f[3] != "-/1.25" || f[4] != "-/9.0s" || f[6] != "-/50%" {
		t.Errorf("row %q of:\n%s", row, b.String())
	}
}
