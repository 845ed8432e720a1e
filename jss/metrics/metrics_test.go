package metrics

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// A four-job schedule on 4 processors, every figure worked out by hand:
//
//	job  submit start end  procs runtime  wait resp slowdown      bsld(τ=10)
//	A      0      0   100    2    100       0   100   1             1
//	B     10    100   105    4      5      90    95  95/5=19      95/10=9.5
//	C     20     20    20    1      0       0     0   max(1,0/1)=1 1
//	D     30     40    70    2     30      10    40  40/30         40/30
func handSchedule() *Collector {
	c := NewCollector(4, 0)
	for _, j := range []Job{
		{Submit: sec(0), Start: sec(0), End: sec(100), Processors: 2, Runtime: sec(100)},
		{Submit: sec(10), Start: sec(100), End: sec(105), Processors: 4, Runtime: sec(5)},
		{Submit: sec(20), Start: sec(20), End: sec(20), Processors: 1, Runtime: 0},
		{Submit: sec(30), Start: sec(40), End: sec(70), Processors: 2, Runtime: sec(30)},
	} {
		c.Add(j)
	}
	return c
}

func near(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.10g, want %.10g", name, got, want)
	}
}

func TestSummaryOnHandComputedSchedule(t *testing.T) {
	s := handSchedule().Summary()
	if s.Jobs != 4 {
		t.Fatalf("jobs = %d, want 4", s.Jobs)
	}
	// Waits sorted: 0 0 10 90. Type-7 median: h = 1.5 → 0 + .5×10; p95: h = 2.85 → 10 + .85×80.
	near(t, "wait mean", s.Wait.Mean, 25)
	near(t, "wait median", s.Wait.Median, 5)
	near(t, "wait p95", s.Wait.P95, 78)
	near(t, "wait max", s.Wait.Max, 90)
	// Responses sorted: 0 40 95 100.
	near(t, "response mean", s.Response.Mean, 58.75)
	near(t, "response median", s.Response.Median, 67.5)
	near(t, "response p95", s.Response.P95, 99.25)
	near(t, "response max", s.Response.Max, 100)
	// Slowdowns sorted: 1 1 4/3 19.
	near(t, "slowdown mean", s.Slowdown.Mean, (1+1+4.0/3+19)/4)
	near(t, "slowdown median", s.Slowdown.Median, 1+0.5*(1.0/3))
	near(t, "slowdown p95", s.Slowdown.P95, 4.0/3+0.85*(19-4.0/3))
	near(t, "slowdown max", s.Slowdown.Max, 19)
	// Bounded slowdowns sorted: 1 1 4/3 9.5.
	near(t, "bsld mean", s.BoundedSlowdown.Mean, (1+1+4.0/3+9.5)/4)
	near(t, "bsld median", s.BoundedSlowdown.Median, 1+0.5*(1.0/3))
	near(t, "bsld p95", s.BoundedSlowdown.P95, 4.0/3+0.85*(9.5-4.0/3))
	near(t, "bsld max", s.BoundedSlowdown.Max, 9.5)
	// Work 2×100 + 4×5 + 0 + 2×30 = 280 over 4 processors × 105 s.
	near(t, "makespan", s.Makespan, 105)
	near(t, "utilization", s.Utilization, 280.0/420)
	near(t, "sum of flow times", s.SumFlow, 100+95+0+40)
	near(t, "weighted flow time", s.WeightedFlow, 200*100+20*95+0+60*40)
	near(t, "tau", s.Tau, 10)
	// Executions 100, 5, 0, 30 sorted 0 5 30 100; dedicated runtimes equal
	// them (space sharing), so exec slowdown is 1 except for the zero-length
	// job (0 / 1 ms floor = 0).
	near(t, "execution mean", s.Execution.Mean, 33.75)
	near(t, "execution median", s.Execution.Median, 17.5)
	near(t, "exec slowdown max", s.ExecSlowdown.Max, 1)
	near(t, "exec slowdown mean", s.ExecSlowdown.Mean, 0.75)
}

func TestExecSlowdownUnderTimeSharing(t *testing.T) {
	c := NewCollector(4, 0)
	// 10 s of work that took 30 s to execute, after waiting 5 s.
	c.Add(Job{Submit: 0, Start: sec(5), End: sec(35), Processors: 4, Runtime: sec(10)})
	s := c.Summary()
	near(t, "execution", s.Execution.Max, 30)
	near(t, "exec slowdown", s.ExecSlowdown.Max, 3)
	near(t, "slowdown", s.Slowdown.Max, 3.5)
}

func TestTauChangesOnlyBoundedSlowdown(t *testing.T) {
	c := NewCollector(4, 50*time.Second)
	c.Add(Job{Submit: 0, Start: sec(90), End: sec(95), Processors: 1, Runtime: sec(5)})
	s := c.Summary()
	near(t, "bsld", s.BoundedSlowdown.Max, 95.0/50)
	near(t, "slowdown", s.Slowdown.Max, 19)
}

func TestEmptyCollector(t *testing.T) {
	s := NewCollector(8, 0).Summary()
	if s.Jobs != 0 || s.Utilization != 0 || s.Wait.Mean != 0 || s.Makespan != 0 {
		t.Fatalf("empty summary not zero: %+v", s)
	}
}

func TestQuantile(t *testing.T) {
	for _, c := range []struct {
		vals []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.95, 7},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4}, 0, 1},
		{[]float64{1, 2, 3, 4}, 1, 4},
		{[]float64{10, 20, 30, 40, 50}, 0.95, 48},
	} {
		near(t, "quantile", Quantile(c.vals, c.q), c.want)
	}
}

func TestPerJobDefinitions(t *testing.T) {
	near(t, "slowdown of a zero-length job", Slowdown(sec(3), 0), 3)
	near(t, "slowdown", Slowdown(sec(30), sec(10)), 3)
	// A sub-second job answered within a second was not slowed down; nor
	// was one that ended before its dedicated runtime.
	near(t, "slowdown of a sub-second job", Slowdown(sec(0.68), sec(0.3)), 1)
	near(t, "slowdown of a fast job", Slowdown(sec(4), sec(5)), 1)
	near(t, "slowdown of a sub-second job that waited", Slowdown(sec(2.5), sec(0.3)), 2.5)
	near(t, "bounded slowdown floor", BoundedSlowdown(sec(2), sec(1), DefaultTau), 1)
	near(t, "bounded slowdown", BoundedSlowdown(sec(40), sec(5), DefaultTau), 4)
}

// TestWholeSecondsSameAsFloat checks that the collector's int32 columns
// (whole seconds) give the same summary and bins, bit for bit, as float64
// ones, and that a first value that is not a whole second (or too large)
// moves to float64 without changing what came before.
func TestWholeSecondsSameAsFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		odd  int // index of the job that is not whole seconds; -1: none
		big  bool
	}{{"whole", -1, false}, {"fraction at 700", 700, false}, {"beyond int32 at 5", 5, true}, {"fraction first", 0, false}} {
		got := NewCollector(64, 0)
		got.Grow(100)
		want := NewCollector(64, 0)
		want.toFloat()
		submit := time.Duration(0)
		for i := range 2000 {
			submit += time.Duration(rng.IntN(600)) * time.Second
			j := Job{Submit: submit, Processors: 1 + rng.IntN(64)}
			j.Start = submit + time.Duration(rng.ExpFloat64()*3000)*time.Second
			j.Runtime = time.Duration(rng.ExpFloat64()*5000) * time.Second
			j.End = j.Start + j.Runtime + time.Duration(rng.IntN(3))*time.Second
			if i == tc.odd {
				if tc.big {
					j.End += 1 << 31 * time.Second
				} else {
					j.End += 250 * time.Millisecond
				}
			}
			got.Add(j)
			want.Add(j)
		}
		if got.whole != (tc.odd < 0) {
			t.Errorf("%s: whole %v after the jobs", tc.name, got.whole)
		}
		if g, w := got.Summary(), want.Summary(); g != w {
			t.Errorf("%s: summary\n%+v, want\n%+v", tc.name, g, w)
		}
		if g, w := got.ByRuntime(), want.ByRuntime(); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: by runtime\n%+v, want\n%+v", tc.name, g, w)
		}
	}
}

// TestSummaryWithHalvesAtOnce: the summary's two halves run at once (as
// the simulator runs them) give the summary computed in turn, and share
// nothing that the race detector would see written by both.
func TestSummaryWithHalvesAtOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, fraction := range []bool{false, true} {
		c := NewCollector(64, 0)
		submit := time.Duration(0)
		for i := range 3000 {
			submit += time.Duration(rng.IntN(600)) * time.Second
			j := Job{Submit: submit, Processors: 1 + rng.IntN(64), Runtime: time.Duration(rng.ExpFloat64()*5000) * time.Second}
			j.Start = submit + time.Duration(rng.IntN(2)*rng.IntN(9000))*time.Second
			j.End = j.Start + j.Runtime
			if fraction && i == 100 {
				j.End += 250 * time.Millisecond
			}
			c.Add(j)
		}
		atOnce := func(a, b func()) {
			done := make(chan struct{})
			go func() { defer close(done); b() }()
			a()
			<-done
		}
		if g, w := c.SummaryWith(atOnce), c.Summary(); g != w {
			t.Errorf("fraction %v: at once\n%+v, want\n%+v", fraction, g, w)
		}
	}
}
