package metrics

import (
	"math"
	"testing"
	"time"
)

func TestRuntimeBins(t *testing.T) {
	for _, tc := range []struct {
		run  time.Duration
		bin  int
		name string
	}{
		{0, 0, "[0,1m)"},
		{59 * time.Second, 0, "[0,1m)"},
		{time.Minute, 1, "[1m,10m)"},
		{10 * time.Minute, 2, "[10m,100m)"},
		{99 * time.Minute, 2, "[10m,100m)"},
		{100 * time.Minute, 3, "[100m,1000m)"},
		{1000 * time.Minute, 4, "[1000m,∞)"},
		{1000 * time.Hour, 4, "[1000m,∞)"},
	} {
		if b := RuntimeBin(tc.run); b != tc.bin || RuntimeBinLabel(b) != tc.name {
			t.Errorf("runtime %v: bin %d %s, want %d %s", tc.run, b, RuntimeBinLabel(b), tc.bin, tc.name)
		}
	}
}

// Four jobs on a 10-processor machine, worked out by hand:
//
//	job  submit start  end   procs runtime  bin
//	a    0      0      30    2     30 s     [0,1m)
//	b    0      10     50    4     40 s     [0,1m)
//	c    0      0      600   5     600 s    [10m,100m)
//	d    100    200    300   1     100 s    [1m,10m)
//
// makespan 600 s.
//
//	[0,1m):   waits 0, 10: mean 5, median 5, p95 9.5, max 10;
//	          responses 30, 50; slowdowns 30/30 = 1, 50/40 = 1.25;
//	          work 2·30 + 4·40 = 220 → utilization 220/6000;
//	          sum of flows 80.
//	[1m,10m): wait 100, response 200, slowdown 2, work 100 → 100/6000.
//	[10m,100m): wait 0, response 600, slowdown 1, work 3000 → 0.5.
//	the bins' utilizations add to the run's: 3320/6000.
func TestByRuntimeByHand(t *testing.T) {
	s := time.Second
	c := NewCollector(10, 0)
	c.Add(Job{Submit: 0, Start: 0, End: 30 * s, Processors: 2, Runtime: 30 * s})
	c.Add(Job{Submit: 0, Start: 10 * s, End: 50 * s, Processors: 4, Runtime: 40 * s})
	c.Add(Job{Submit: 0, Start: 0, End: 600 * s, Processors: 5, Runtime: 600 * s})
	c.Add(Job{Submit: 100 * s, Start: 200 * s, End: 300 * s, Processors: 1, Runtime: 100 * s})
	bins := c.ByRuntime()
	if len(bins) != 5 {
		t.Fatalf("%d bins, want 5", len(bins))
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	b0 := bins[0]
	if b0.Jobs != 2 || b0.Label != "[0,1m)" {
		t.Fatalf("bin 0: %+v", b0)
	}
	near("bin 0 wait", b0.Wait.Mean, 5)
	near("bin 0 wait p95", b0.Wait.P95, 9.5)
	near("bin 0 wait max", b0.Wait.Max, 10)
	near("bin 0 response median", b0.Response.Median, 40)
	near("bin 0 slowdown mean", b0.Slowdown.Mean, 1.125)
	near("bin 0 utilization", b0.Utilization, 220.0/6000)
	near("bin 0 sum flow", b0.SumFlow, 80)
	near("bin 1 wait", bins[1].Wait.Mean, 100)
	near("bin 1 slowdown", bins[1].Slowdown.Max, 2)
	near("bin 1 utilization", bins[1].Utilization, 100.0/6000)
	near("bin 2 utilization", bins[2].Utilization, 0.5)
	near("bin 2 bounded slowdown", bins[2].BoundedSlowdown.Mean, 1)
	if bins[3].Jobs != 0 || bins[4].Jobs != 0 {
		t.Errorf("bins 3, 4 should be empty: %+v %+v", bins[3], bins[4])
	}
	total := 0.0
	for _, b := range bins {
		total += b.Utilization
	}
	near("sum of bin utilizations", total, c.Summary().Utilization)
}
