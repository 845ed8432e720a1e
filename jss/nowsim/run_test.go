package nowsim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang/now"
	"github.com/cosched/cosched/jss/swf"
)

const s = time.Second

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }

func run(t *testing.T, cfg Config, jobs []Job) (Result, map[int64]Record) {
	t.Helper()
	recs := map[int64]Record{}
	res, err := Run(context.Background(), cfg, jobs, func(r Record) error {
		recs[r.ID] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(jobs) {
		t.Fatalf("%d of %d jobs ended", len(recs), len(jobs))
	}
	checkNoOverlap(t, cfg.Speeds, recs)
	return res, recs
}

// checkNoOverlap asserts no node runs two jobs at once.
func checkNoOverlap(t *testing.T, speeds []float64, recs map[int64]Record) {
	t.Helper()
	for _, a := range recs {
		for _, b := range recs {
			if a.ID >= b.ID || a.Start >= b.End || b.Start >= a.End {
				continue
			}
			for _, n := range a.Nodes {
				for _, m := range b.Nodes {
					if n == m {
						t.Fatalf("node %d runs jobs %d [%v,%v) and %d [%v,%v)", n, a.ID, a.Start, a.End, b.ID, b.Start, b.End)
					}
				}
			}
		}
	}
}

// The hand-worked case: nodes of speeds 1, 2, 4 (nodes 0, 1, 2); four
// rigid jobs submitted at 0, exact estimates:
//
//	J1 2 tasks t=8   J2 3 tasks t=4   J3 1 task t=6   J4 1 task t=2
//
// fifo: J1 on nodes 2,1 (min speed 2) [0,4]; J2 needs 3 and blocks. At 4 J2
// runs on all (speed 1) [4,8]; at 8 J3 gets node 2 (6/4) [8,9.5] and J4
// node 1 (2/2) [8,9].
//
// firstfit: J1 [0,4]; J3 on node 0 (speed 1) [0,6]. At 4 J2 does not fit
// (2 idle), J4 takes node 2 [4,4.5]. At 6 J2 runs [6,10].
//
// lpt (8, 6, 4, 2): J1 [0,4], J3 on node 0 [0,6], then J2 is chosen and
// blocks; at 4 J2 still blocks though J4 fits; J2 [6,10]; J4 node 2
// [10,10.5].
//
// spt (2, 4, 6, 8): J4 on node 2 [0,0.5], J2 chosen and blocks (J1 and J3
// would fit); J2 [0.5,4.5]; then J3 node 2 [4.5,6], J1 nodes 1,0 (speed 1)
// [4.5,12.5].
//
// fifo-bf: J1 [0,4]. Head J2: 1 idle + J1's 2 at 4 = 3: shadow 4, spare 0.
// J3 on node 0 would end at 6 > 4: waits. J4 on node 0 ends at 2 ≤ 4:
// backfilled [0,2]. At 4 J2 [4,8]; at 8 J3 on node 2 [8,9.5].
func TestHandWorkedSchedules(t *testing.T) {
	jobs := []Job{
		{ID: 1, Tasks: 2, Work: 8 * s},
		{ID: 2, Tasks: 3, Work: 4 * s},
		{ID: 3, Tasks: 1, Work: 6 * s},
		{ID: 4, Tasks: 1, Work: 2 * s},
	}
	type span struct{ start, end float64 }
	for _, c := range []struct {
		p        now.Policy
		want     map[int64]span
		makespan float64
	}{
		{now.FIFO, map[int64]span{1: {0, 4}, 2: {4, 8}, 3: {8, 9.5}, 4: {8, 9}}, 9.5},
		{now.FirstFit, map[int64]span{1: {0, 4}, 2: {6, 10}, 3: {0, 6}, 4: {4, 4.5}}, 10},
		{now.LPT, map[int64]span{1: {0, 4}, 2: {6, 10}, 3: {0, 6}, 4: {10, 10.5}}, 10.5},
		{now.SPT, map[int64]span{1: {4.5, 12.5}, 2: {0.5, 4.5}, 3: {4.5, 6}, 4: {0, 0.5}}, 12.5},
		{now.FIFOBackfill, map[int64]span{1: {0, 4}, 2: {4, 8}, 3: {8, 9.5}, 4: {0, 2}}, 9.5},
	} {
		t.Run(string(c.p), func(t *testing.T) {
			res, recs := run(t, Config{Speeds: []float64{1, 2, 4}, Policy: c.p, Estimate: now.EstimateSpec{Mode: now.EstimateExact}}, jobs)
			var flow, maxWait float64
			for id, w := range c.want {
				r := recs[id]
				if r.Start != ms(w.start) || r.End != ms(w.end) {
					t.Errorf("J%d [%v,%v], want [%vs,%vs]", id, r.Start, r.End, w.start, w.end)
				}
				flow += w.end
				maxWait = max(maxWait, w.start)
			}
			if res.Makespan != c.makespan || res.MeanFlow != flow/4 || res.MaxWait != maxWait || res.Jobs != 4 {
				t.Errorf("result %+v, want makespan %v mean flow %v max wait %v", res, c.makespan, flow/4, maxWait)
			}
		})
	}
}

// Learned estimates through the driver: one node of speed 2, weight 0.5,
// prior 5 s, fifo. A job's normalized run time is its elapsed time × 2.
//
//	J1 a t=8 at 0: estimate 5 (prior); runs [0,4]  → e_a = 8, g = 8
//	J2 a t=4 at 4: ends are seen before arrivals: estimate e_a = 8; [4,6]
//	                                    → e_a = .5·4 + .5·8 = 6, g = 6
//	J3 b t=2 at 6: estimate g = 6; [6,7] → e_b = 2, g = .5·2 + .5·6 = 4
//	J4 a t=2 at 7: estimate e_a = 6      J5 (no program) at 7: g = 4
func TestLearnedEstimatesInARun(t *testing.T) {
	jobs := []Job{
		{ID: 1, Submit: 0, Tasks: 1, Work: 8 * s, Program: "a"},
		{ID: 2, Submit: 4 * s, Tasks: 1, Work: 4 * s, Program: "a"},
		{ID: 3, Submit: 6 * s, Tasks: 1, Work: 2 * s, Program: "b"},
		{ID: 4, Submit: 7 * s, Tasks: 1, Work: 2 * s, Program: "a"},
		{ID: 5, Submit: 7 * s, Tasks: 1, Work: 2 * s},
	}
	spec, err := now.ParseEstimate("learned:0.5:5s")
	if err != nil {
		t.Fatal(err)
	}
	_, recs := run(t, Config{Speeds: []float64{2}, Policy: now.FIFO, Estimate: spec}, jobs)
	for id, want := range map[int64]time.Duration{1: 5 * s, 2: 8 * s, 3: 6 * s, 4: 6 * s, 5: 4 * s} {
		if got := recs[id].Estimate; got != want {
			t.Errorf("J%d estimate %v, want %v", id, got, want)
		}
	}
}

// With fuzzy estimates every policy of one seed sees the same estimates.
func TestFuzzyEstimatesAreTheSameForEveryPolicy(t *testing.T) {
	jobs, err := Generate(context.Background(), GenConfig{Nodes: 6, Jobs: 50, SeqShare: 0.4, LargeShare: 0.2, Span: time.Hour,
		PTime: [3]Range{{time.Minute, time.Hour}, {time.Minute, time.Hour}, {time.Minute, time.Hour}}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := now.ParseEstimate("fuzzy:0.5")
	var first map[int64]Record
	for _, p := range now.Policies() {
		_, recs := run(t, Config{Speeds: []float64{1, 1, 2, 2, 4, 4}, Policy: p, Estimate: spec, Seed: 9}, jobs)
		if first == nil {
			first = recs
			continue
		}
		for id, r := range recs {
			if r.Estimate != first[id].Estimate {
				t.Fatalf("%s: J%d estimate %v, %s had %v", p, id, r.Estimate, now.Policies()[0], first[id].Estimate)
			}
		}
	}
}

// firstfit and random never leave a job waiting while it fits: after the
// pass at any event instant, every waiting job is wider than the idle nodes.
func TestGreedyPoliciesNeverIdleAFittingJob(t *testing.T) {
	jobs, err := Generate(context.Background(), GenConfig{Nodes: 8, Jobs: 200, SeqShare: 0.3, LargeShare: 0.2, BalancedShare: 0.5, Span: 2 * time.Hour,
		PTime: [3]Range{{time.Minute, time.Hour}, {time.Minute, time.Hour}, {time.Minute, time.Hour}}, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	speeds := []float64{1, 1, 1, 2, 2, 2, 4, 4}
	for _, p := range []now.Policy{now.FirstFit, now.Random} {
		_, recs := run(t, Config{Speeds: speeds, Policy: p, Estimate: now.EstimateSpec{Mode: now.EstimateExact}, Seed: 1}, jobs)
		instants := map[time.Duration]bool{}
		for _, r := range recs {
			instants[r.Submit], instants[r.End] = true, true
		}
		for at := range instants {
			busy := 0
			for _, r := range recs {
				if r.Start <= at && at < r.End {
					busy += r.Tasks
				}
			}
			for _, r := range recs {
				if r.Submit <= at && at < r.Start && r.Tasks <= len(speeds)-busy {
					t.Fatalf("%s: at %v job %d (%d tasks) waits with %d nodes idle", p, at, r.ID, r.Tasks, len(speeds)-busy)
				}
			}
		}
	}
}

func TestRunIsDeterministic(t *testing.T) {
	jobs, _ := Generate(context.Background(), GenConfig{Nodes: 5, Jobs: 100, SeqShare: 0.5, LargeShare: 0.2,
		PTime: [3]Range{{time.Minute, time.Hour}, {time.Minute, time.Hour}, {time.Minute, time.Hour}}, Seed: 2})
	spec, _ := now.ParseEstimate("fuzzy:1")
	cfg := Config{Speeds: []float64{1, 2, 2, 3, 4}, Policy: now.Random, Estimate: spec, Seed: 4}
	a, _ := run(t, cfg, jobs)
	b, _ := run(t, cfg, jobs)
	if a != b {
		t.Errorf("two runs differ: %+v %+v", a, b)
	}
}

func TestReadSWF(t *testing.T) {
	const trace = `; MaxProcs: 4
1 0 -1 100 2 -1 -1 2 -1 -1 1 1 1 7 -1 -1 -1 -1
2 5 -1 50 -1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
3 6 -1 -1 1 -1 -1 1 -1 -1 1 1 1 -1 -1 -1 -1 -1
4 7 -1 10 8 -1 -1 8 -1 -1 1 1 1 -1 -1 -1 -1 -1
5 9 -1 10 -1 -1 -1 3 -1 -1 1 1 1 -1 -1 -1 -1 -1
`
	rd, err := swf.NewReader(strings.NewReader(trace), "t.swf")
	if err != nil {
		t.Fatal(err)
	}
	jobs, d, err := ReadSWF(rd, 4)
	if err != nil {
		t.Fatal(err)
	}
	if d != (Dropped{NoSize: 1, NoRuntime: 1, TooWide: 1}) {
		t.Errorf("dropped %+v", d)
	}
	want := []Job{{ID: 1, Submit: 0, Tasks: 2, Work: 100 * s, Program: "exe-7"}, {ID: 5, Submit: 9 * s, Tasks: 3, Work: 10 * s}}
	if fmt.Sprint(jobs) != fmt.Sprint(want) {
		t.Errorf("jobs %+v, want %+v", jobs, want)
	}
}
