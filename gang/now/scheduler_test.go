package now

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

const s = time.Second

func mustNew(t *testing.T, cfg Config) *Scheduler {
	t.Helper()
	sc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func submit(t *testing.T, sc *Scheduler, at time.Duration, jobs ...Job) {
	t.Helper()
	for _, j := range jobs {
		if err := sc.Submit(j, at); err != nil {
			t.Fatal(err)
		}
	}
}

func schedule(t *testing.T, sc *Scheduler, at time.Duration) []Start {
	t.Helper()
	st, err := sc.Schedule(at)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ids(st []Start) []JobID {
	var out []JobID
	for _, x := range st {
		out = append(out, x.Job.ID)
	}
	return out
}

// Speeds 2, 4, 1, 4: the fastest idle nodes are 1 and 3 (speed 4, lower
// index first), then 0 (2), then 2 (1).
func TestPlacementOnFastestIdleNodes(t *testing.T) {
	sc := mustNew(t, Config{Speeds: []float64{2, 4, 1, 4}, Policy: FIFO})
	submit(t, sc, 0, Job{ID: 1, Tasks: 1, Estimate: 8 * s}, Job{ID: 2, Tasks: 2, Estimate: 8 * s}, Job{ID: 3, Tasks: 1, Estimate: 8 * s})
	st := schedule(t, sc, 0)
	want := [][]int{{1}, {3, 0}, {2}}
	wantSpeed := []float64{4, 2, 1}
	wantEnd := []time.Duration{2 * s, 4 * s, 8 * s} // 8s / speed
	if len(st) != 3 {
		t.Fatalf("started %v, want all three", ids(st))
	}
	for i, x := range st {
		if !slices.Equal(x.Nodes, want[i]) || x.Speed != wantSpeed[i] || x.EstimatedEnd != wantEnd[i] {
			t.Errorf("job %d: nodes %v speed %v est end %v, want %v %v %v", x.Job.ID, x.Nodes, x.Speed, x.EstimatedEnd, want[i], wantSpeed[i], wantEnd[i])
		}
	}
	// Job 2 ends, freeing nodes 3 (speed 4) and 0 (speed 2): the next job
	// gets node 3.
	if _, err := sc.Finished(2, 4*s); err != nil {
		t.Fatal(err)
	}
	submit(t, sc, 4*s, Job{ID: 4, Tasks: 1, Estimate: s})
	if st := schedule(t, sc, 4*s); len(st) != 1 || !slices.Equal(st[0].Nodes, []int{3}) {
		t.Errorf("after job 2 ended: %+v, want job 4 on node 3 (speed 4) rather than node 0 (speed 2)", st)
	}
}

// A 3-task job on speeds 1, 2, 4 with t = 7 s: rigid, it runs at its
// slowest node's speed, 7/1 = 7 s; balanced, its work 3·7 = 21 is spread
// over Σs = 7, so 3 s.
func TestSlowestNodeVersusBalancedSpeed(t *testing.T) {
	speeds := []float64{1, 2, 4}
	if v := Speed(speeds, false); v != 1 {
		t.Errorf("rigid speed %v, want 1", v)
	}
	if v := Speed(speeds, true); v != 7.0/3 {
		t.Errorf("balanced speed %v, want 7/3", v)
	}
	for _, c := range []struct {
		balanced bool
		want     time.Duration
	}{{false, 7 * s}, {true, 3 * s}} {
		sc := mustNew(t, Config{Speeds: speeds, Policy: FIFO})
		submit(t, sc, 0, Job{ID: 1, Tasks: 3, Estimate: 7 * s, Balanced: c.balanced})
		st := schedule(t, sc, 0)
		if got := Runtime(7*s, st[0].Speed); got != c.want || st[0].EstimatedEnd != c.want {
			t.Errorf("balanced=%v: runtime %v, estimated end %v, want %v", c.balanced, got, st[0].EstimatedEnd, c.want)
		}
		d, err := sc.Finished(1, c.want)
		if err != nil || d.Normalized != 7*s {
			t.Errorf("balanced=%v: normalized %v (%v), want 7s", c.balanced, d.Normalized, err)
		}
	}
}

// Three nodes of speed 1; one 1-task job runs. Queue: A (3 tasks, 9 s),
// B (1 task, 5 s), C (1 task, 1 s). LPT chooses A (longest): it does not
// fit, so nothing starts although B and C would. SPT chooses C, which fits,
// then B, then A, which blocks.
func TestLPTAndSPTBlock(t *testing.T) {
	for _, c := range []struct {
		p    Policy
		want []JobID
	}{{LPT, nil}, {SPT, []JobID{4, 3}}} {
		sc := mustNew(t, Config{Speeds: []float64{1, 1, 1}, Policy: c.p})
		submit(t, sc, 0, Job{ID: 1, Tasks: 1, Estimate: 100 * s})
		schedule(t, sc, 0)
		submit(t, sc, s, Job{ID: 2, Tasks: 3, Estimate: 9 * s}, Job{ID: 3, Tasks: 1, Estimate: 5 * s}, Job{ID: 4, Tasks: 1, Estimate: s})
		if got := ids(schedule(t, sc, s)); !slices.Equal(got, c.want) {
			t.Errorf("%s started %v, want %v", c.p, got, c.want)
		}
		if sc.Queued() != 3-len(c.want) {
			t.Errorf("%s: %d queued", c.p, sc.Queued())
		}
	}
}

// Ties go to the earlier arrival.
func TestLPTTiesByArrival(t *testing.T) {
	sc := mustNew(t, Config{Speeds: []float64{1}, Policy: LPT})
	submit(t, sc, 0, Job{ID: 7, Tasks: 1, Estimate: 5 * s}, Job{ID: 3, Tasks: 1, Estimate: 5 * s})
	if got := ids(schedule(t, sc, 0)); !slices.Equal(got, []JobID{7}) {
		t.Errorf("started %v, want the first arrival 7", got)
	}
}

// Five nodes of speed 1. R (3 tasks, estimate 10 s) runs from 0, so 2 are
// idle. Queue: H (4 tasks), B (1 task, 20 s), C (2 tasks, 5 s), D (1 task,
// 20 s). H's reservation: 2 idle + R's 3 at R's estimated end 10 s = 5 ≥ 4,
// so shadow 10 s, spare 5 − 4 = 1. B ends after the shadow time but needs
// only the 1 spare node: it starts and uses it up. C no longer fits (1
// idle); D fits but ends after 10 s and there is no spare node left.
func TestBackfillRespectsTheHeadsReservation(t *testing.T) {
	sc := mustNew(t, Config{Speeds: []float64{1, 1, 1, 1, 1}, Policy: FIFOBackfill})
	submit(t, sc, 0, Job{ID: 1, Tasks: 3, Estimate: 10 * s})
	schedule(t, sc, 0)
	submit(t, sc, s, Job{ID: 2, Tasks: 4, Estimate: 50 * s}, Job{ID: 3, Tasks: 1, Estimate: 20 * s}, Job{ID: 4, Tasks: 2, Estimate: 5 * s}, Job{ID: 5, Tasks: 1, Estimate: 20 * s})
	if shadow, spare, _ := sc.Reservation(s); shadow != 10*s || spare != 1 {
		t.Fatalf("reservation: shadow %v spare %d, want 10s 1", shadow, spare)
	}
	st := schedule(t, sc, s)
	if got := ids(st); !slices.Equal(got, []JobID{3}) || !strings.Contains(st[0].Why, "spare") {
		t.Fatalf("started %v (%+v), want only 3, on a spare node", got, st)
	}
	// R ends at its estimate: H starts on the 4 idle nodes, as reserved.
	if _, err := sc.Finished(1, 10*s); err != nil {
		t.Fatal(err)
	}
	if got := ids(schedule(t, sc, 10*s)); !slices.Equal(got, []JobID{2}) {
		t.Errorf("at 10s started %v, want the head 2", got)
	}
}

// The estimated end of a backfill candidate is computed on the nodes it
// would get. Speeds 4, 1, 1: R (2 tasks, estimate 8 s) holds nodes 0 and 1
// (speed min 1 → ends at 8 s). Head H needs 3: shadow 8 s, spare 0. B (1
// task, estimate 6 s) would get node 2 (speed 1): ends at 6 s ≤ 8 s, so it
// is backfilled. With estimate 10 s it would end at 10 s and wait.
func TestBackfillEndsByShadowTime(t *testing.T) {
	for _, c := range []struct {
		est  time.Duration
		want []JobID
	}{{6 * s, []JobID{3}}, {8 * s, []JobID{3}}, {10 * s, nil}} {
		sc := mustNew(t, Config{Speeds: []float64{4, 1, 1}, Policy: FIFOBackfill})
		submit(t, sc, 0, Job{ID: 1, Tasks: 2, Estimate: 8 * s})
		if st := schedule(t, sc, 0); !slices.Equal(st[0].Nodes, []int{0, 1}) || st[0].EstimatedEnd != 8*s {
			t.Fatalf("R: %+v", st[0])
		}
		submit(t, sc, 0, Job{ID: 2, Tasks: 3, Estimate: s}, Job{ID: 3, Tasks: 1, Estimate: c.est})
		if got := ids(schedule(t, sc, 0)); !slices.Equal(got, c.want) {
			t.Errorf("B estimate %v: started %v, want %v", c.est, got, c.want)
		}
	}
}

// A running job past its estimated end is assumed to end now: the shadow
// time is never in the past.
func TestReservationWithOverrunningJob(t *testing.T) {
	sc := mustNew(t, Config{Speeds: []float64{1, 1}, Policy: FIFOBackfill})
	submit(t, sc, 0, Job{ID: 1, Tasks: 1, Estimate: 2 * s})
	schedule(t, sc, 0)
	submit(t, sc, 5*s, Job{ID: 2, Tasks: 2, Estimate: s}, Job{ID: 3, Tasks: 1, Estimate: s})
	if shadow, spare, _ := sc.Reservation(5 * s); shadow != 5*s || spare != 0 {
		t.Errorf("shadow %v spare %d, want 5s 0", shadow, spare)
	}
	if got := ids(schedule(t, sc, 5*s)); len(got) != 0 {
		t.Errorf("started %v: nothing ends by a shadow time of now", got)
	}
}

// Three nodes of speed 1; queue J1 (3 tasks), J2 (2), J3 (1). Random draws
// among the jobs that fit: J1 first leaves nothing idle ([1]); J2 first
// leaves one node, on which only J3 fits ([2 3]); J3 first leaves two, on
// which only J2 fits ([3 2]). Every outcome occurs for some seed; none
// leaves a job waiting that fits.
func TestRandomDrawsAmongJobsThatFit(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(30) {
		sc := mustNew(t, Config{Speeds: []float64{1, 1, 1}, Policy: Random, Rand: rand.New(rand.NewPCG(seed, 0))})
		submit(t, sc, 0, Job{ID: 1, Tasks: 3, Estimate: s}, Job{ID: 2, Tasks: 2, Estimate: s}, Job{ID: 3, Tasks: 1, Estimate: s})
		got := fmt.Sprint(ids(schedule(t, sc, 0)))
		switch got {
		case "[1]", "[2 3]", "[3 2]":
			seen[got] = true
		default:
			t.Fatalf("seed %d: started %s", seed, got)
		}
	}
	if len(seen) != 3 {
		t.Errorf("outcomes over 30 seeds: %v, want all three", seen)
	}
}

func TestConfigAndSubmitErrors(t *testing.T) {
	_, err := New(Config{Speeds: []float64{1, 0, -1}, Policy: "nope"})
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"node 1", "node 2", `unknown policy "nope"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not mention %s", err, want)
		}
	}
	if _, err := New(Config{Speeds: []float64{1}, Policy: Random}); err == nil || !strings.Contains(err.Error(), "random source") {
		t.Errorf("random without a source: %v", err)
	}
	sc := mustNew(t, Config{Speeds: []float64{1, 1}, Policy: FIFO})
	if err := sc.Submit(Job{ID: 1, Tasks: 3}, 0); err == nil {
		t.Error("a 3-task job on 2 nodes was accepted")
	}
	submit(t, sc, s, Job{ID: 1, Tasks: 1})
	if err := sc.Submit(Job{ID: 1, Tasks: 1}, s); err == nil {
		t.Error("a job submitted twice was accepted")
	}
	if _, err := sc.Schedule(0); err == nil {
		t.Error("time went backwards unnoticed")
	}
	if _, err := sc.Finished(9, 2*s); err == nil {
		t.Error("an unknown job finished")
	}
}
