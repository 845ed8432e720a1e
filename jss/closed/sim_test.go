package closed

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// fixed draws the same size, service time and I/O time for a job on every
// cycle.
type fixed struct {
	size        []int
	svc, ioTime []float64
}

func (f fixed) Size(job, _ int) int     { return f.size[job] }
func (f fixed) Service(job int) float64 { return f.svc[job] }
func (f fixed) IO(job int) float64      { return f.ioTime[job] }

type start struct {
	t   float64
	job int
}

// runTraced runs cfg and records its Begin events.
func runTraced(t *testing.T, cfg Config) (Result, []start) {
	t.Helper()
	var starts []start
	cfg.Trace = func(e Event) {
		if e.Kind == Begin {
			starts = append(starts, start{e.Time, e.Job})
		}
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, starts
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// Two processors, two jobs, every time fixed; ties to the lowest processor.
// J0: size 2, service 2. J1: size 1, service 1. I/O takes 1.
//
//	t=0  J0 → {0,1}, J1 → {0} (queues 1,1 → tie → 0). J0 heads both queues:
//	     starts (0–2). J1 waits behind it.
//	t=2  J0 ends, I/O 2–3. J1 starts (2–3).
//	t=3  J1 ends, queues for I/O. J0 leaves I/O → {0,1}; I/O takes J1 (3–4);
//	     J0 starts (3–5).
//	t=4  J1 leaves I/O → {0}; waits for J0.
//	t=5  J0 ends, I/O 5–6; J1 starts (5–6).
//	t=6  as t=3, three later; the pattern repeats every 3.
//
// Completions: J0@2, J1@3, J0@5, J1@6, J0@8, J1@9. Warm-up 2 puts T0 at 3;
// 4 measured completions put T1 at 9, a window of 6.
//
//	responses  J0@5 (arrived 3), J1@6 (4), J0@8 (6), J1@9 (7): all 2
//	cycles     ending in (3,9]: J1 0→4, J0 3→6, J1 4→7, J0 6→9: 13/4
//	throughput 4/6
//	cpu        (3,5] 2 procs, (5,6] 1, (6,8] 2, (8,9] 1: 10/(2·6)
//	io         busy (3,4], (5,6], (6,7], (8,9]: 4/6
func TestHandScheduleSteadyPattern(t *testing.T) {
	for _, p := range Policies() { // no job is ever passed: all agree
		res, starts := runTraced(t, Config{
			Procs: 2, Jobs: 2, Policy: p, Ties: TiesLowest,
			Draws:  fixed{size: []int{2, 1}, svc: []float64{2, 1}, ioTime: []float64{1, 1}},
			Warmup: 2, Completions: 4,
		})
		wantStarts := []start{{0, 0}, {2, 1}, {3, 0}, {5, 1}, {6, 0}, {8, 1}}
		if !reflect.DeepEqual(starts, wantStarts) {
			t.Errorf("%s: starts %v, want %v", p, starts, wantStarts)
		}
		want := Result{MeanResponse: 2, MeanCycle: 13.0 / 4, Throughput: 4.0 / 6, CPUUtil: 10.0 / 12, IOUtil: 4.0 / 6,
			Responses: 4, Cycles: 4, T0: 3, T1: 9}
		if res != want {
			t.Errorf("%s: result %+v, want %+v", p, res, want)
		}
	}
}

// Two processors, three jobs; ties to the lowest processor; I/O takes 1.
// J0: size 1, service 4. J1: size 2, service 1. J2: size 1, service 1.
// At t=0 J0 → {0}, J1 → {0,1}, J2 → {1} (queue 1 is shorter), so queue 0
// holds J0 J1 and queue 1 holds J1 J2. The policies part at once:
//
// FCFS: J0 heads queue 0 and starts (0–4); J1 is behind J0; J2 is behind J1
// although processor 1 is idle.
//
//	t=4  J0 ends, I/O 4–5; J1 heads both queues: starts (4–5).
//	t=5  J1 ends (I/O busy: queues). J0 leaves I/O → {0} (queues 0 and 1:
//	     0 is shorter); I/O takes J1 (5–6). J2 heads queue 1, J0 queue 0:
//	     both start, J2 (5–6) then J0 (5–9).
//	t=6  J2 ends; J1 leaves I/O; the window closes (3 completions).
//
// A-FCFS: J0 starts (0–4) and J2 jumps J1 in queue 1 (0–1).
//
//	t=1  J2 ends, I/O 1–2.   t=2  J2 → {1}; J1 still needs 0: J2 starts (2–3).
//	t=3  J2 ends, I/O 3–4.
//	t=4  J0 ends, queues for I/O; J2 → {0} (queues 1,1: tie → 0); I/O takes J0
//	     (4–5). J1, the oldest, finds 0 and 1 idle: starts (4–5); J2 waits.
//	t=5  J1 ends; J0 → {1}; J2 (5–6) and J0 (5–9) start.
//
// LJFS examines J1 first (2 tasks): it starts (0–1) and holds both.
//
//	t=1  J1 ends, I/O 1–2; J0 (1–5) and J2 (1–2) start.
//	t=2  J2 ends, queues; J1 → {0,1}, blocked by J0; I/O takes J2 (2–3).
//	t=3  J2 → {1}; J1 (larger) still blocked; J2 starts (3–4) past it.
//	t=5  J0 ends; J2 → {0}; J1 starts (5–6).
func TestHandSchedulePoliciesPart(t *testing.T) {
	draws := fixed{size: []int{1, 2, 1}, svc: []float64{4, 1, 1}, ioTime: []float64{1, 1, 1}}
	want := map[Policy][]start{
		FCFS:  {{0, 0}, {4, 1}, {5, 2}, {5, 0}},
		AFCFS: {{0, 0}, {0, 2}, {2, 2}, {4, 1}, {5, 2}, {5, 0}},
		LJFS:  {{0, 1}, {1, 0}, {1, 2}, {3, 2}, {5, 1}},
	}
	completions := map[Policy]int{FCFS: 3, AFCFS: 5, LJFS: 5} // each window ends at t=6
	for _, p := range Policies() {
		res, starts := runTraced(t, Config{Procs: 2, Jobs: 3, Policy: p, Ties: TiesLowest, Draws: draws, Completions: completions[p]})
		if !reflect.DeepEqual(starts, want[p]) {
			t.Errorf("%s: starts %v, want %v", p, starts, want[p])
		}
		if res.T1 != 6 {
			t.Errorf("%s: window ends at %v, want 6", p, res.T1)
		}
		if p != FCFS {
			continue
		}
		// FCFS, window (0,6]: completions J0@4, J1@5, J2@6, all arrived at
		// 0 (responses 4, 5, 6); cycles J0 0→5, J1 0→6; processors busy
		// (0,4] 1, (4,5] 2, (5,6] 2: 8 of 12; I/O busy (4,6]: 2 of 6.
		near(t, "FCFS mean response", res.MeanResponse, 5)
		near(t, "FCFS mean cycle", res.MeanCycle, 5.5)
		near(t, "FCFS throughput", res.Throughput, 0.5)
		near(t, "FCFS cpu", res.CPUUtil, 8.0/12)
		near(t, "FCFS io", res.IOUtil, 2.0/6)
	}
}

func TestRunIsDeterministic(t *testing.T) {
	cfg := Config{Procs: 8, Jobs: 6, Policy: LJFS, Service: Service{Dist: BranchingErlang, Mean: 1, CV: 2}, IOMean: 0.563,
		Warmup: 100, Completions: 2000, Seed: 42}
	a, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(context.Background(), cfg)
	if a != b {
		t.Errorf("same seed, different results: %+v, %+v", a, b)
	}
	cfg.Seed = 43
	c, _ := Run(context.Background(), cfg)
	if a == c {
		t.Error("different seeds, same result")
	}
	// Little's law within the window, up to the cycles straddling its ends.
	if n := a.Throughput * a.MeanCycle; math.Abs(n-6)/6 > 0.02 {
		t.Errorf("throughput × cycle = %v, want ≈ 6 jobs", n)
	}
}

func TestRunRejectsBadConfigAndDraws(t *testing.T) {
	_, err := Run(context.Background(), Config{Procs: 0, Jobs: 0, Policy: "sjf", Service: Service{Dist: Exponential, Mean: -1}, Completions: 0, Warmup: -1})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"procs 0", "jobs 0", `policy "sjf"`, "mean -1", "I/O mean 0", "warm-up -1", "completions 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	for _, d := range []fixed{
		{size: []int{3}, svc: []float64{1}, ioTime: []float64{1}},
		{size: []int{1}, svc: []float64{0}, ioTime: []float64{1}},
		{size: []int{1}, svc: []float64{1}, ioTime: []float64{math.NaN()}},
	} {
		if _, err := Run(context.Background(), Config{Procs: 2, Jobs: 1, Policy: FCFS, Draws: d, Completions: 3}); err == nil {
			t.Errorf("draws %+v: no error", d)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Run(ctx, Config{Procs: 2, Jobs: 1, Policy: FCFS, Service: Service{Dist: Exponential, Mean: 1}, IOMean: 1, Completions: 10})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
