package sweep

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/sharing"
)

// benchPoint is the BCS study's reference point: w3, MPL 3, 50 ms slices,
// load 0.8, 1000 jobs on DefaultMachine's 32 processors.
func benchPoint(mode sharing.Mode) Point {
	p := Point{Mode: mode, MPL: 3, Slice: 50 * time.Millisecond, Load: 0.8, Workload: "w3", Jobs: 1000, Seed: 1, Policy: gang.EASY}
	if mode == sharing.Space {
		p.MPL, p.Slice = 1, 0
	}
	return p
}

// BenchmarkBCSModel reports the BCS model's speed in model steps (process
// run segments and strobe checks) per second on one core.
func BenchmarkBCSModel(b *testing.B) {
	m, p := DefaultMachine(), benchPoint(sharing.BCS)
	var steps int64
	for b.Loop() {
		row, err := RunPoint(context.Background(), m, p)
		if err != nil {
			b.Fatal(err)
		}
		steps += row.Steps
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
}

// BenchmarkPoint times the reference point end to end (workload generation,
// simulation, metrics) under each mode; space is the baseline the time-shared
// modes are reported against.
func BenchmarkPoint(b *testing.B) {
	m := DefaultMachine()
	for _, mode := range []sharing.Mode{sharing.Space, sharing.Gang, sharing.BCS} {
		b.Run(string(mode), func(b *testing.B) {
			p := benchPoint(mode)
			for b.Loop() {
				if _, err := RunPoint(context.Background(), m, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSweepW3 runs the whole w3 sweep of the study: space, gang and bcs ×
// MPL 1-4 × loads 0.1:1.6:0.1 at 50 ms, 1000 jobs per point (144 points),
// GOMAXPROCS points at once. It takes a while, so it runs only when -bench
// names it or COSCHED_FULL_SWEEP=1.
func BenchmarkSweepW3(b *testing.B) {
	named := false
	if f := flag.Lookup("test.bench"); f != nil {
		named = strings.Contains(f.Value.String(), "SweepW3")
	}
	if !named && os.Getenv("COSCHED_FULL_SWEEP") != "1" {
		b.Skip("the full w3 sweep: run with -bench SweepW3 or COSCHED_FULL_SWEEP=1")
	}
	loads, err := ParseLoads("0.1:1.6:0.1")
	if err != nil {
		b.Fatal(err)
	}
	s := Spec{
		Modes: jss.Modes(), MPLs: []int{1, 2, 3, 4}, Slices: []time.Duration{50 * time.Millisecond},
		Loads: loads, Workloads: []string{"w3"}, MemMeans: []int64{0}, Jobs: 1000, Seeds: []uint64{1}, Policy: gang.EASY,
	}
	var points int
	var steps int64
	for b.Loop() {
		r, err := Execute(context.Background(), DefaultMachine(), s, Shard{}, 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		points = len(r.Rows)
		for _, row := range r.Rows {
			steps += row.Steps
		}
	}
	b.ReportMetric(float64(points), "points")
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
}
