package jss_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/jss"
)

func pfJob(n int64, submit, procs, runtime float64) jss.Job {
	return jss.Job{Job: gang.Job{Submit: sec(submit), Processors: int(procs), Estimate: sec(runtime)}, Number: n, Runtime: sec(runtime)}
}

func runPFCFS(t *testing.T, cfg jss.PFCFSConfig, jobs []jss.Job) (map[int64][2]time.Duration, jss.PFCFSStats) {
	t.Helper()
	out := map[int64][2]time.Duration{}
	st, err := jss.RunPFCFS(context.Background(), cfg, jss.SliceSource(jobs), func(r jss.Result) error {
		out[r.Number] = [2]time.Duration{r.Start, r.End}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

// The core's base case (gang/pfcfs) with a penalty of 2 s per preemption,
// machine of 10, wide from 5, Δ = 10 s, n = 3:
//
//	job 1: t=0, 4 procs, runs 30     job 4: t=5, 6 procs (wide), runs 20
//	job 2: t=0, 3 procs, runs 30     job 5: t=6, 1 proc, runs 10
//	job 3: t=0, 2 procs, runs 50
//
// At 5 job 4 preempts jobs 1 and 3 (25+2 = 27 and 45+2 = 47 left). At 15
// job 4 stops (10+2 = 12 left), 1 and 3 resume. At 25 they stop (27−10+2 =
// 19 and 47−10+2 = 39 left) and 4 resumes: ends 37; then 1 ends 56, 3 ends
// 76. Job 5 runs 6–16 on the free column, job 2 0–30. Five preemptions.
func TestRunPFCFSHandWorked(t *testing.T) {
	cfg := jss.PFCFSConfig{
		Scheduler: pfcfs.Config{Processors: 10, WidePercent: 50, Switch: sec(10), Switches: 3},
		Penalty:   sec(2), Check: true,
	}
	got, st := runPFCFS(t, cfg, []jss.Job{
		pfJob(1, 0, 4, 30), pfJob(2, 0, 3, 30), pfJob(3, 0, 2, 50), pfJob(4, 5, 6, 20), pfJob(5, 6, 1, 10),
	})
	want := map[int64][2]float64{1: {0, 56}, 2: {0, 30}, 3: {0, 76}, 4: {5, 37}, 5: {6, 16}}
	for n, w := range want {
		if got[n] != [2]time.Duration{sec(w[0]), sec(w[1])} {
			t.Errorf("job %d: [%v, %v), want [%gs, %gs)", n, got[n][0], got[n][1], w[0], w[1])
		}
	}
	if st.WideJobs != 1 || st.Preempting != 1 || st.Preemptions != 5 || st.Jobs != 5 {
		t.Errorf("stats %+v, want 1 wide job, 1 preempting, 5 preemptions, 5 jobs", st)
	}
}

// With no wide job, pfcfs is fcfs: every start and end agrees with the
// matrix core's fcfs.
func TestPFCFSWithoutWideJobsIsFCFS(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		jobs := randomJobs(seed, 80, 7) // at most 7 of 16: narrow below 50 %
		for i := range jobs {
			jobs[i].Estimate = max(jobs[i].Estimate, jobs[i].Runtime)
		}
		want, _ := runAll(t, config(16, gang.FCFS), jobs)
		got, st := runPFCFS(t, jss.PFCFSConfig{Scheduler: pfcfs.Config{Processors: 16, WidePercent: 50, Switch: sec(10), Switches: 3}, Check: true}, jobs)
		for _, r := range want {
			if g := got[r.Number]; g != [2]time.Duration{r.Start, r.End} {
				t.Fatalf("seed %d job %d: pfcfs [%v, %v), fcfs [%v, %v)", seed, r.Number, g[0], g[1], r.Start, r.End)
			}
		}
		if st.WideJobs != 0 || st.Preemptions != 0 {
			t.Fatalf("seed %d: %+v", seed, st)
		}
	}
}

// Random workloads with wide jobs under random parameters: every decision
// passes the column check, every job ends, none earlier than its runtime
// after its start, and a job's delay past its runtime is made of whole
// preemptions (at most n per episode it takes part in), so it is bounded.
func TestPFCFSRandomWorkloads(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		jobs := randomJobs(seed, 60, 16)
		cfg := jss.PFCFSConfig{
			Scheduler: pfcfs.Config{
				Processors:  16,
				WidePercent: float64(10 + rng.IntN(91)),
				Delay:       sec(float64(rng.IntN(30))),
				Switch:      sec(float64(1 + rng.IntN(40))),
				Switches:    1 + rng.IntN(5),
			},
			Penalty: sec(float64(rng.IntN(3))),
			Check:   true,
		}
		got, st := runPFCFS(t, cfg, jobs)
		if len(got) != len(jobs) {
			t.Fatalf("seed %d: %d of %d jobs ended", seed, len(got), len(jobs))
		}
		for _, j := range jobs {
			g := got[j.Number]
			if g[0] < j.Submit || g[1]-g[0] < j.Runtime {
				t.Fatalf("seed %d job %d: ran [%v, %v), submitted %v, runtime %v", seed, j.Number, g[0], g[1], j.Submit, j.Runtime)
			}
		}
		if st.Preempting > st.WideJobs {
			t.Fatalf("seed %d: %+v", seed, st)
		}
	}
}

// The hand-worked case as a trace, penalty 0, against plain FCFS.
//
// FCFS: jobs 1–3 start at 0; job 4 (6) waits until 1 and 2 end at 30 and
// runs 30–50; job 5 waits behind it and runs 30–40. Flows 30+30+50+45+34 =
// 189, makespan 50, weighted flow (w = procs × runtime) 120·30 + 90·30 +
// 100·50 + 120·45 + 10·34 = 17,040.
//
// PFCFS (n = 3): ends 50, 30, 70, 35, 16 (see gang/pfcfs): flows
// 50+30+70+30+10 = 190, makespan 70, weighted 120·50 + 90·30 + 100·70 +
// 120·30 + 10·10 = 19,400.
func TestSimulateTracePFCFS(t *testing.T) {
	trace := "; MaxProcs: 10\n" +
		swfLine(1, 0, 30, 4, 4, 30, -1) + "\n" +
		swfLine(2, 0, 30, 3, 3, 30, -1) + "\n" +
		swfLine(3, 0, 50, 2, 2, 50, -1) + "\n" +
		swfLine(4, 5, 20, 6, 6, 20, -1) + "\n" +
		swfLine(5, 6, 10, 1, 1, 10, -1) + "\n"
	opt := jss.TraceOptions{Input: memInput("base.swf", trace), Conventions: jss.DefaultConventions(), Check: true}
	cfg := jss.PFCFSConfig{Scheduler: pfcfs.Config{WidePercent: 50, Switch: sec(10), Switches: 3}}
	res, err := jss.SimulateTracePFCFS(context.Background(), opt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	base, err := jss.SimulateTrace(context.Background(), opt, gang.FCFS)
	if err != nil {
		t.Fatal(err)
	}
	if base.Metrics.SumFlow != 189 || base.Metrics.Makespan != 50 || base.Metrics.WeightedFlow != 17040 {
		t.Errorf("fcfs: sum flow %g, makespan %g, weighted %g", base.Metrics.SumFlow, base.Metrics.Makespan, base.Metrics.WeightedFlow)
	}
	m := res.Metrics
	if m.SumFlow != 190 || m.Makespan != 70 || m.WeightedFlow != 19400 {
		t.Errorf("pfcfs: sum flow %g, makespan %g, weighted %g", m.SumFlow, m.Makespan, m.WeightedFlow)
	}
	p := res.PFCFS
	if res.Policy != "pfcfs" || p == nil || p.WideFrom != 5 || p.WideJobs != 1 || p.Preempting != 1 || p.Preemptions != 5 || p.Switches != 3 || p.Switch != 10 {
		t.Fatalf("result %+v, summary %+v", res, p)
	}
	rel := jss.RelativeTo(res.Metrics, base.Metrics)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-12 }
	if !near(rel.Makespan, 1.4) || !near(rel.SumFlow, 190.0/189) || !near(rel.WeightedFlow, 19400.0/17040) {
		t.Errorf("relative %+v", rel)
	}
}

func TestRunPFCFSRejectsBadConfig(t *testing.T) {
	_, err := jss.RunPFCFS(context.Background(), jss.PFCFSConfig{Scheduler: pfcfs.DefaultConfig(10), Penalty: -1}, jss.SliceSource(nil), func(jss.Result) error { return nil })
	if err == nil {
		t.Error("negative penalty accepted")
	}
	_, err = jss.RunPFCFS(context.Background(), jss.PFCFSConfig{Scheduler: pfcfs.Config{Processors: 10}}, jss.SliceSource(nil), func(jss.Result) error { return nil })
	if err == nil {
		t.Error("zero switches accepted")
	}
}
