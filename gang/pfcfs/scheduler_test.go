package pfcfs_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/pfcfs"
)

const sec = time.Second

// tjob is a job of a hand-worked case; times in seconds.
type tjob struct {
	id, submit, procs, runtime int
}

// simulate runs jobs through a Scheduler with a deliberately plain event
// loop: at each instant, ends, then arrivals, then one pass. A preempted
// job keeps what it has left to run, plus penalty. It returns every
// decision as "t=<s> <kind> <job>[ cols <cols>]" and each job's end.
func simulate(t *testing.T, cfg pfcfs.Config, penalty time.Duration, jobs []tjob) ([]string, map[int]int) {
	t.Helper()
	s, err := pfcfs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type rj struct {
		end, left time.Duration
		on        bool
	}
	run := map[int]*rj{}
	ends := map[int]int{}
	var log []string
	next := 0 // next arrival
	now := time.Duration(-1)
	for {
		at, ok := time.Duration(0), false
		consider := func(c time.Duration) {
			if c > now && (!ok || c < at) {
				at, ok = c, true
			}
		}
		if next < len(jobs) {
			consider(time.Duration(jobs[next].submit) * sec)
		}
		for _, r := range run {
			if r.on {
				consider(r.end)
			}
		}
		if w, wok := s.NextWakeup(); wok {
			consider(w)
		}
		if !ok {
			break
		}
		now = at
		var ended []int
		for id, r := range run {
			if r.on && r.end == now {
				ended = append(ended, id)
			}
		}
		slices.Sort(ended)
		for _, id := range ended {
			delete(run, id)
			ends[id] = int(now / sec)
			if err := s.Finished(gang.JobID(id), now); err != nil {
				t.Fatal(err)
			}
		}
		for next < len(jobs) && time.Duration(jobs[next].submit)*sec == now {
			j := jobs[next]
			err := s.Submit(gang.Job{ID: gang.JobID(j.id), Submit: now, Processors: j.procs}, now)
			if err != nil {
				t.Fatal(err)
			}
			next++
		}
		ds, err := s.Schedule(now)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			id := int(d.Job)
			line := fmt.Sprintf("t=%d %s %d", now/sec, d.Kind, id)
			switch d.Kind {
			case gang.Start:
				line += " cols " + cols(d.Columns)
				var rt int
				for _, j := range jobs {
					if j.id == id {
						rt = j.runtime
					}
				}
				run[id] = &rj{end: now + time.Duration(rt)*sec, on: true}
			case gang.Preempt:
				r := run[id]
				r.left, r.on = r.end-now+penalty, false
			case gang.Resume:
				r := run[id]
				r.end, r.on = now+r.left, true
			default:
				t.Fatalf("unexpected decision %v", d)
			}
			log = append(log, line)
		}
	}
	if len(run) > 0 || len(s.Queued()) > 0 {
		t.Fatalf("jobs left: running %v, queued %v", run, s.Queued())
	}
	return log, ends
}

func cols(cs []int) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprint(c))
	}
	return strings.Join(parts, ",")
}

func check(t *testing.T, log []string, ends map[int]int, wantLog []string, wantEnds map[int]int) {
	t.Helper()
	if !slices.Equal(log, wantLog) {
		t.Errorf("decisions:\n  %s\nwant:\n  %s", strings.Join(log, "\n  "), strings.Join(wantLog, "\n  "))
	}
	for id, want := range wantEnds {
		if ends[id] != want {
			t.Errorf("job %d ended at %d, want %d", id, ends[id], want)
		}
	}
}

// The base case, on a machine of 10 with wide jobs from 5 processors:
//
//	job 1: t=0, 4 procs, runs 30     job 4: t=5, 6 procs (wide), runs 20
//	job 2: t=0, 3 procs, runs 30     job 5: t=6, 1 proc, runs 10
//	job 3: t=0, 2 procs, runs 50
//
// At 0 jobs 1–3 take columns 0-3, 4-6, 7-8; column 9 is free. At 5 job 4
// needs 6, 1 is free: 5 more. No running job has 5, so the largest, job 1
// (4), is preempted; 1 more is needed, and the smallest job with at least 1
// is job 3 (2). Job 4 takes their columns 0-3 and 7-8; column 9 stays free
// and job 5 starts there at 6 (ends 16). Job 2 is never touched (ends 30).
// Left to run after 5: job 1 25, job 3 45, job 4 20.
var base = []tjob{
	{1, 0, 4, 30}, {2, 0, 3, 30}, {3, 0, 2, 50}, {4, 5, 6, 20}, {5, 6, 1, 10},
}

func baseConfig() pfcfs.Config {
	return pfcfs.Config{Processors: 10, WidePercent: 50, Switch: 10 * sec, Switches: 3}
}

var basePrefix = []string{
	"t=0 start 1 cols 0,1,2,3",
	"t=0 start 2 cols 4,5,6",
	"t=0 start 3 cols 7,8",
	"t=5 preempt 1",
	"t=5 preempt 3",
	"t=5 start 4 cols 0,1,2,3,7,8",
	"t=6 start 5 cols 9",
}

// n = 3 (odd): switches at 5 (the preemption), 15 (job 4 stops with 10
// left; jobs 1 and 3 resume) and 25 (jobs 1 and 3 stop with 15 and 35
// left; job 4 resumes). Job 4 then runs to completion: ends 35, and jobs 1
// and 3 resume at once: end 50 and 70.
func TestOddSwitchesWideJobFinishes(t *testing.T) {
	log, ends := simulate(t, baseConfig(), 0, base)
	want := append(slices.Clone(basePrefix),
		"t=15 preempt 4", "t=15 resume 1", "t=15 resume 3",
		"t=25 preempt 1", "t=25 preempt 3", "t=25 resume 4",
		"t=35 resume 1", "t=35 resume 3")
	check(t, log, ends, want, map[int]int{1: 50, 2: 30, 3: 70, 4: 35, 5: 16})
}

// n = 2 (even): the switch at 15 is the last; jobs 1 and 3 run to
// completion (1 ends 15+25 = 40, 3 ends 15+45 = 60). Job 4 waits for the
// whole preempted side, not just job 1: it resumes at 60 with 10 left and
// ends at 70.
func TestEvenSwitchesPreemptedJobsFinish(t *testing.T) {
	cfg := baseConfig()
	cfg.Switches = 2
	log, ends := simulate(t, cfg, 0, base)
	want := append(slices.Clone(basePrefix),
		"t=15 preempt 4", "t=15 resume 1", "t=15 resume 3",
		"t=60 resume 4")
	check(t, log, ends, want, map[int]int{1: 40, 2: 30, 3: 60, 4: 70, 5: 16})
}

// n = 1: the preemption is the only switch; job 4 runs 5–25, then jobs 1
// and 3 resume: 25+25 = 50 and 25+45 = 70.
func TestOneSwitch(t *testing.T) {
	cfg := baseConfig()
	cfg.Switches = 1
	log, ends := simulate(t, cfg, 0, base)
	want := append(slices.Clone(basePrefix), "t=25 resume 1", "t=25 resume 3")
	check(t, log, ends, want, map[int]int{1: 50, 3: 70, 4: 25})
}

// δ = 3: job 4 is first at 5 and preempts at 8. Job 5 (t=6) waits behind it
// although column 9 is free (fcfs), and starts at 8 too (ends 18). Left
// after 8: job 1 22, job 3 42. Switches at 18 (job 4 has 10 left) and 28
// (jobs 1 and 3 have 12 and 32 left): job 4 ends 38, then 1 ends 50 and 3
// ends 70.
func TestStartDelay(t *testing.T) {
	cfg := baseConfig()
	cfg.Delay = 3 * sec
	log, ends := simulate(t, cfg, 0, base)
	want := []string{
		"t=0 start 1 cols 0,1,2,3",
		"t=0 start 2 cols 4,5,6",
		"t=0 start 3 cols 7,8",
		"t=8 preempt 1",
		"t=8 preempt 3",
		"t=8 start 4 cols 0,1,2,3,7,8",
		"t=8 start 5 cols 9",
		"t=18 preempt 4", "t=18 resume 1", "t=18 resume 3",
		"t=28 preempt 1", "t=28 preempt 3", "t=28 resume 4",
		"t=38 resume 1", "t=38 resume 3",
	}
	check(t, log, ends, want, map[int]int{1: 50, 2: 30, 3: 70, 4: 38, 5: 18})
}

// Penalty 2 per preemption, n = 3. At 5 jobs 1 and 3 are preempted: 25+2 =
// 27 and 45+2 = 47 left. At 15 job 4 is preempted: 10+2 = 12 left. At 25
// jobs 1 and 3 are preempted again: 27−10+2 = 19 and 47−10+2 = 39 left; job
// 4 ends at 25+12 = 37, then 1 ends 37+19 = 56 and 3 ends 37+39 = 76.
func TestPenalty(t *testing.T) {
	log, ends := simulate(t, baseConfig(), 2*sec, base)
	want := append(slices.Clone(basePrefix),
		"t=15 preempt 4", "t=15 resume 1", "t=15 resume 3",
		"t=25 preempt 1", "t=25 preempt 3", "t=25 resume 4",
		"t=37 resume 1", "t=37 resume 3")
	check(t, log, ends, want, map[int]int{1: 56, 2: 30, 3: 76, 4: 37, 5: 16})
}

// The preempted side ends between switches: job 1 (2
// procs, runs 8) is preempted at 1 by wide job 2 (10 procs, runs 30) with
// n = 5. Switch at 11: job 1 resumes with 7 left and ends at 18, before the
// switch due at 21; job 2 resumes at once (20 left) and ends at 38.
func TestPreemptedSideEndsBeforeSwitch(t *testing.T) {
	cfg := baseConfig()
	cfg.Switches = 5
	log, ends := simulate(t, cfg, 0, []tjob{{1, 0, 2, 8}, {2, 1, 10, 30}})
	want := []string{
		"t=0 start 1 cols 0,1",
		"t=1 preempt 1",
		"t=1 start 2 cols 0,1,2,3,4,5,6,7,8,9",
		"t=11 preempt 2", "t=11 resume 1",
		"t=18 resume 2",
	}
	check(t, log, ends, want, map[int]int{1: 18, 2: 38})
}

// Greedy choice with ties: four running jobs of 3, 3, 2, 2 fill the
// machine (columns 0-2, 3-5, 6-7, 8-9). Wide job 5 needs 5: no job has 5,
// so the largest goes; jobs 1 and 2 tie at 3 and the later arrival, job 2,
// is picked. 2 more are needed: jobs 3 and 4 have exactly 2, again the
// later, job 4, is picked. Two jobs, the fewest possible, and no column
// wasted.
func TestGreedyTies(t *testing.T) {
	cfg := baseConfig()
	cfg.Switches = 1
	log, _ := simulate(t, cfg, 0, []tjob{
		{1, 0, 3, 100}, {2, 0, 3, 100}, {3, 0, 2, 100}, {4, 0, 2, 100}, {5, 1, 5, 10},
	})
	want := []string{
		"t=0 start 1 cols 0,1,2",
		"t=0 start 2 cols 3,4,5",
		"t=0 start 3 cols 6,7",
		"t=0 start 4 cols 8,9",
		"t=1 preempt 2",
		"t=1 preempt 4",
		"t=1 start 5 cols 3,4,5,8,9",
		"t=11 resume 2",
		"t=11 resume 4",
	}
	check(t, log, nil, want, nil)
}

// Best fit, and a preempted column the wide job does not need: jobs of 4,
// 4 and 2 (columns 0-3, 4-7, 8-9) fill the machine; wide job 4 needs 5. No
// job has 5: the largest goes (jobs 1 and 2 tie; job 2 is later). 1 more is
// needed: the smallest job with at least 1 is job 3 (2 procs). Job 4 takes
// 4-7 and 8; column 9 stays with the stopped job 3, idle, and is not free:
// job 5 (1 proc, t=2) waits until job 4 ends at 12 and job 3 resumes, and
// starts when job 1 ends at 20.
func TestBestFitAndIdleColumn(t *testing.T) {
	cfg := baseConfig()
	cfg.Switches = 1
	log, ends := simulate(t, cfg, 0, []tjob{
		{1, 0, 4, 20}, {2, 0, 4, 30}, {3, 0, 2, 30}, {4, 2, 5, 10}, {5, 2, 1, 5},
	})
	want := []string{
		"t=0 start 1 cols 0,1,2,3",
		"t=0 start 2 cols 4,5,6,7",
		"t=0 start 3 cols 8,9",
		"t=2 preempt 2",
		"t=2 preempt 3",
		"t=2 start 4 cols 4,5,6,7,8",
		"t=12 resume 2",
		"t=12 resume 3",
		"t=20 start 5 cols 0",
	}
	check(t, log, ends, want, map[int]int{1: 20, 2: 40, 3: 40, 4: 12, 5: 25})
}

// A single running job that covers the need is preferred to several: jobs
// of 4 (0-3), 3 (4-6), 2 (7-8), column 9 free; wide job 4 needs 5, 4 more:
// job 1 has exactly 4 and is the only one preempted. Job 4 takes 0-3 and
// the free 9.
func TestSingleBestFit(t *testing.T) {
	cfg := baseConfig()
	cfg.Switches = 1
	log, _ := simulate(t, cfg, 0, []tjob{{1, 0, 4, 50}, {2, 0, 3, 50}, {3, 0, 2, 50}, {4, 1, 5, 10}})
	want := []string{
		"t=0 start 1 cols 0,1,2,3",
		"t=0 start 2 cols 4,5,6",
		"t=0 start 3 cols 7,8",
		"t=1 preempt 1",
		"t=1 start 4 cols 0,1,2,3,9",
		"t=11 resume 1",
	}
	check(t, log, nil, want, nil)
}

// Only one wide job is active at a time, and a wide job that fits simply
// starts. Machine of 10, wide from 3 (x = 30): job 1 (narrow, 2, runs 100)
// on 0-1; wide job 2 (5, runs 10) fits at 0 on 2-6 and starts without
// preempting. Wide job 3 (6, t=1) is next but job 2 is active: it may not
// preempt (δ = 4 would have let it at 5). At 10 job 2 ends, 8 are free and
// job 3 fits: it starts, runs to 20. Wide job 4 (9, t=2) is first from 10,
// but job 3 is active until 20; δ counts from then, so at 24 it preempts
// job 1 (8 free, 1 more needed) and ends at 29; job 1 resumes with 76 left.
func TestOneWideJobAtATime(t *testing.T) {
	cfg := pfcfs.Config{Processors: 10, WidePercent: 30, Delay: 4 * sec, Switch: 10 * sec, Switches: 1}
	log, ends := simulate(t, cfg, 0, []tjob{
		{1, 0, 2, 100}, {2, 0, 5, 10}, {3, 1, 6, 10}, {4, 2, 9, 5},
	})
	want := []string{
		"t=0 start 1 cols 0,1",
		"t=0 start 2 cols 2,3,4,5,6",
		"t=10 start 3 cols 2,3,4,5,6,7",
		"t=24 preempt 1",
		"t=24 start 4 cols 0,1,2,3,4,5,6,7,8",
		"t=29 resume 1",
	}
	check(t, log, ends, want, map[int]int{1: 105, 2: 10, 3: 20, 4: 29})
}

func TestExplain(t *testing.T) {
	cfg := pfcfs.Config{Processors: 10, WidePercent: 30, Delay: 4 * sec, Switch: 10 * sec, Switches: 1}
	s, err := pfcfs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []gang.Job{{ID: 1, Processors: 2}, {ID: 2, Processors: 5}, {ID: 3, Processors: 6}, {ID: 4, Processors: 1}} {
		if err := s.Submit(j, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Schedule(0); err != nil {
		t.Fatal(err)
	}
	if got := s.Explain(3); got.Rule != gang.RuleEarlierWide || got.Head != 2 {
		t.Errorf("job 3: %v, want earlier-wide behind job 2", got)
	}
	if got := s.Explain(4); got.Rule != gang.RuleBehindHead || got.Head != 3 {
		t.Errorf("job 4: %v, want behind job 3", got)
	}
	if got := s.Explain(1); got.Rule != gang.RuleNotQueued {
		t.Errorf("job 1: %v, want not queued", got)
	}
	if _, ok := s.NextWakeup(); ok {
		t.Error("wakeup while an earlier wide job is active")
	}
	if err := s.Finished(2, 10*sec); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(gang.Job{ID: 5, Submit: 10 * sec, Processors: 10}, 10*sec); err != nil {
		t.Fatal(err)
	}
	ds, _ := s.Schedule(10 * sec)
	if len(ds) != 2 || ds[0].Job != 3 || ds[1].Job != 4 {
		t.Fatalf("at 10: %v, want jobs 3 and 4 to start", ds)
	}
	// Job 5 (wide, 10) is next; job 3 (wide) is active until it ends.
	if err := s.Finished(3, 12*sec); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.Schedule(12 * sec); len(ds) != 0 {
		t.Fatalf("at 12: %v, want nothing before the delay", ds)
	}
	if got := s.Explain(5); got.Rule != gang.RuleWideDelay || got.At != 16*sec {
		t.Errorf("job 5: %v, want wide-delay until 16s", got)
	}
	if w, ok := s.NextWakeup(); !ok || w != 16*sec {
		t.Errorf("wakeup %v %v, want 16s", w, ok)
	}
	ds, _ = s.Schedule(16 * sec)
	var kinds []string
	for _, d := range ds {
		kinds = append(kinds, fmt.Sprintf("%s %d", d.Kind, d.Job))
	}
	if got := strings.Join(kinds, ", "); got != "preempt 1, preempt 4, start 5" {
		t.Errorf("at 16: %s", got)
	}
	if st, _ := s.JobState(1); st != pfcfs.Suspended {
		t.Errorf("job 1 is %v, want suspended", st)
	}
	if ds[2].Why.Rule != gang.RuleWidePreempts || !strings.Contains(ds[2].Why.String(), "needs 10, 7 were free") {
		t.Errorf("start explained as %q", ds[2].Why)
	}
}

func TestConfig(t *testing.T) {
	c := pfcfs.DefaultConfig(10)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pct         float64
		procs, from int
	}{
		{50, 10, 5}, {50, 9, 5}, {33.3, 100, 34}, {100, 7, 7}, {0.1, 10, 1},
	} {
		c := pfcfs.Config{Processors: tc.procs, WidePercent: tc.pct}
		if got := c.WideFrom(); got != tc.from || !c.Wide(got) || (got > 1 && c.Wide(got-1)) {
			t.Errorf("x=%g P=%d: wide from %d, want %d", tc.pct, tc.procs, got, tc.from)
		}
	}
	bad := pfcfs.Config{Processors: 0, WidePercent: 101, Delay: -1, Switch: 0, Switches: 0}
	err := bad.Validate()
	for _, want := range []string{"processors", "wide percent", "start delay", "between switches", "switches must"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to mention %q", err, want)
		}
	}
	if _, err := pfcfs.New(bad); err == nil {
		t.Error("New accepted a bad config")
	}
}

func TestInputErrors(t *testing.T) {
	s, _ := pfcfs.New(baseConfig())
	if err := s.Submit(gang.Job{ID: 1, Processors: 11}, 0); !errors.Is(err, gang.ErrJobTooWide) {
		t.Errorf("too wide: %v", err)
	}
	if err := s.Submit(gang.Job{ID: 1, Processors: 0}, 0); !errors.Is(err, gang.ErrInvalidJob) {
		t.Errorf("no processors: %v", err)
	}
	if err := s.Submit(gang.Job{ID: 1, Processors: 1}, 5*sec); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(gang.Job{ID: 1, Processors: 1}, 5*sec); !errors.Is(err, gang.ErrDuplicateJob) {
		t.Errorf("duplicate: %v", err)
	}
	if err := s.Finished(9, 5*sec); !errors.Is(err, gang.ErrUnknownJob) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := s.Schedule(4 * sec); !errors.Is(err, gang.ErrTimeBackwards) {
		t.Errorf("backwards: %v", err)
	}
}

// Replaying the same inputs into a fresh core gives the same decisions.
func TestDeterministic(t *testing.T) {
	a, _ := simulate(t, baseConfig(), 2*sec, base)
	b, _ := simulate(t, baseConfig(), 2*sec, base)
	if !slices.Equal(a, b) {
		t.Errorf("two runs differ:\n%v\n%v", a, b)
	}
}
