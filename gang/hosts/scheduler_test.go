package hosts

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
)

const gb = int64(1) << 30

type tjob struct {
	id     gang.JobID
	submit time.Duration
	procs  int
	memPP  int64 // per process
	est    time.Duration
}

type got struct {
	at   time.Duration
	host int
	why  string
}

// simulate runs jobs (runtime = estimate) to the end on a fresh core and
// returns each job's start and host.
func simulate(t *testing.T, cfg Config, jobs []tjob) map[gang.JobID]got {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[gang.JobID]got{}
	ends := map[gang.JobID]time.Duration{}
	est := map[gang.JobID]time.Duration{}
	next := 0
	now := time.Duration(0)
	for len(out) < len(jobs) || len(ends) > 0 {
		// the next instant: an arrival, an end or a wakeup
		cand := time.Duration(-1)
		pick := func(t time.Duration) {
			if cand < 0 || t < cand {
				cand = t
			}
		}
		if next < len(jobs) {
			pick(jobs[next].submit)
		}
		for _, e := range ends {
			pick(e)
		}
		if w, ok := s.NextWakeup(); ok {
			pick(w)
		}
		if cand < 0 {
			t.Fatalf("stuck at %v with %d of %d started", now, len(out), len(jobs))
		}
		now = cand
		for id, e := range ends {
			if e == now {
				delete(ends, id)
				if err := s.Finished(id, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		for next < len(jobs) && jobs[next].submit == now {
			j := jobs[next]
			next++
			est[j.id] = j.est
			if err := s.Submit(gang.Job{ID: j.id, Submit: j.submit, Processors: j.procs, Memory: j.memPP, Estimate: j.est}, now); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := s.Schedule(now)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			out[d.Job] = got{now, d.Host, d.Why}
			ends[d.Job] = now + est[d.Job]
		}
	}
	return out
}

func expect(t *testing.T, res map[gang.JobID]got, id gang.JobID, at time.Duration, host int) {
	t.Helper()
	g, ok := res[id]
	if !ok || g.at != at || g.host != host {
		t.Errorf("job %d: started %v on host %d (%v), want %v on host %d", id, g.at, g.host, ok, at, host)
	}
}

const s = time.Second

// Best fit: hosts A 8, B 4, C 4. At 0: job 1 (2 procs) → B (4 free, fewer
// than A's 8; B before C). Job 2 (3) → C (B has 2 left, too few; C has 4,
// fewer than A). Job 3 (2) → B (free A 8, B 2, C 1: B is the fewest that
// fits). Job 4 (2) → A (B 0, C 1 too few).
func TestBestFitHost(t *testing.T) {
	cfg := Config{Policy: gang.FCFSBF, Hosts: []Host{{"A", 8, 0}, {"B", 4, 0}, {"C", 4, 0}}}
	res := simulate(t, cfg, []tjob{{1, 0, 2, 0, 10 * s}, {2, 0, 3, 0, 10 * s}, {3, 0, 2, 0, 10 * s}, {4, 0, 2, 0, 10 * s}})
	expect(t, res, 1, 0, 1)
	expect(t, res, 2, 0, 2)
	expect(t, res, 3, 0, 1)
	expect(t, res, 4, 0, 0)
}

// Memory: hosts A (4 procs, 1 GB) and B (8 procs, 16 GB). Job 1 (2 procs ×
// 2 GB = 4 GB) cannot use A (fewest free processors, too little memory):
// → B. Job 2 (2 × 4 GB = 8 GB) at 0 → B (16 − 4 = 12 GB left). Job 3
// (2 × 3 GB = 6 GB) at 1: B has 4 processors free but 4 GB: blocked by
// memory, and A has 1 GB. Its reservation is on B at 10, when job 1 (est
// 10) ends and frees 4 GB; it starts then. Job 4 (1 proc × 512 MB) at 1
// fits A by both: starts at once on A.
func TestMemoryBlocksAJobThatFitsByProcessors(t *testing.T) {
	cfg := Config{Policy: gang.FCFSBF, Hosts: []Host{{"A", 4, gb}, {"B", 8, 16 * gb}}}
	res := simulate(t, cfg, []tjob{{1, 0, 2, 2 * gb, 10 * s}, {2, 0, 2, 4 * gb, 20 * s}, {3, 1 * s, 2, 3 * gb, 5 * s}, {4, 1 * s, 1, gb / 2, 5 * s}})
	expect(t, res, 1, 0, 1)
	expect(t, res, 2, 0, 1)
	expect(t, res, 3, 10*s, 1)
	expect(t, res, 4, 1*s, 0)
}

// Reservations per host: A 4, B 4, fcfs-bf, N = 1. At 0: job 1 (4, est
// 100) → A (tie: lower index); job 2 (3, est 50) → B. At 1: job 3 (4, est
// 10) cannot start; its reservation is the earliest over the hosts: B at
// 50 (A only at 100). Job 4 (1, est 100) fits B now but would hold a
// processor past 50: waits. Job 5 (1, est 40) ends at 41 ≤ 50: backfills
// on B at 1. At 50 job 3 starts on B (its reservation); at 60 job 4
// starts on B (A busy until 100).
func TestReservationsOnHosts(t *testing.T) {
	jobs := []tjob{{1, 0, 4, 0, 100 * s}, {2, 0, 3, 0, 50 * s}, {3, s, 4, 0, 10 * s}, {4, s, 1, 0, 100 * s}, {5, s, 1, 0, 40 * s}}
	cfg := Config{Policy: gang.FCFSBF, Hosts: []Host{{"A", 4, 0}, {"B", 4, 0}}}
	res := simulate(t, cfg, jobs)
	expect(t, res, 1, 0, 0)
	expect(t, res, 2, 0, 1)
	expect(t, res, 3, 50*s, 1)
	expect(t, res, 4, 60*s, 1)
	expect(t, res, 5, s, 1)
	if res[5].why != "backfill" || res[3].why != "fits" {
		t.Errorf("why: job 5 %q, job 3 %q; want backfill, fits", res[5].why, res[3].why)
	}

	// Fixed mode: job 3 keeps its reservation (B at 50) from 1 on and
	// starts by it ("reservation"); the other starts are the same.
	fixed := cfg
	fixed.Backfill = gang.Backfill{Mode: gang.Fixed}
	res = simulate(t, fixed, jobs)
	expect(t, res, 3, 50*s, 1)
	expect(t, res, 4, 60*s, 1)
	expect(t, res, 5, s, 1)
	if res[3].why != "reservation" {
		t.Errorf("fixed: job 3 started by %q, want reservation", res[3].why)
	}

	// With N = 2 job 4 also holds a reservation, on B at 60 (B: 1 free
	// until 50, 0 for job 3's slot [50, 60)); A only at 100.
	c, err := New(Config{Policy: gang.FCFSBF, Backfill: gang.Backfill{Reservations: 2}, Hosts: cfg.Hosts})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs[:4] {
		if err := c.Submit(gang.Job{ID: j.id, Submit: j.submit, Processors: j.procs, Estimate: j.est}, j.submit); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Schedule(j.submit); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []struct {
		id   gang.JobID
		at   time.Duration
		host int
	}{{3, 50 * s, 1}, {4, 60 * s, 1}} {
		at, h, ok := c.Reservation(w.id)
		if !ok || at != w.at || h != w.host {
			t.Errorf("N=2: job %d reserved %v on %d (%v), want %v on %d", w.id, at, h, ok, w.at, w.host)
		}
	}
	if w, ok := c.NextWakeup(); !ok || w != 50*s {
		t.Errorf("NextWakeup = %v %v, want 50s", w, ok)
	}
}

func TestSubmitRefusesAJobNoHostHolds(t *testing.T) {
	c, err := New(Config{Policy: gang.FCFSBF, Hosts: []Host{{"A", 4, gb}, {"B", 8, 2 * gb}}})
	if err != nil {
		t.Fatal(err)
	}
	// 4 procs × 1 GB: A has the processors but 1 GB; B has 2 GB.
	err = c.Submit(gang.Job{ID: 1, Processors: 4, Memory: gb}, 0)
	if !errors.Is(err, gang.ErrJobTooWide) {
		t.Errorf("Submit = %v, want ErrJobTooWide", err)
	}
	if err := c.Submit(gang.Job{ID: 2, Processors: 9}, 0); !errors.Is(err, gang.ErrJobTooWide) {
		t.Errorf("Submit 9 procs = %v, want ErrJobTooWide", err)
	}
	if _, err := New(Config{Policy: gang.EASY, Hosts: []Host{{"A", 0, 0}}}); err == nil ||
		!strings.Contains(err.Error(), "processors must be at least 1") || !strings.Contains(err.Error(), "not a priority-backfill") {
		t.Errorf("New with a bad config = %v", err)
	}
}

func TestParseMachine(t *testing.T) {
	hs, err := ParseMachine(strings.NewReader("# NCSA\nbig 64 16GB # comment\n\nsmall  8 512MB\nfree 4 -\n"), "m.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []Host{{"big", 64, 16 * gb}, {"small", 8, 512 << 20}, {"free", 4, 0}}
	if len(hs) != len(want) {
		t.Fatalf("got %v", hs)
	}
	for i := range want {
		if hs[i] != want[i] {
			t.Errorf("host %d = %+v, want %+v", i, hs[i], want[i])
		}
	}
	for _, c := range []struct{ text, want string }{
		{"a 4\n", "m.txt:1: want 3 fields (name processors memory), got 2"},
		{"# x\na 0 1GB\n", `m.txt:2: processors "0": want a whole number of at least 1`},
		{"a 4 lots\n", `m.txt:1: memory "lots": want a positive amount`},
		{"a 4 -1GB\n", `m.txt:1: memory "-1GB"`},
		{"a 4 1GB\na 2 1GB\n", `m.txt:2: name "a": host already defined on line 1`},
		{"# nothing\n", "m.txt: no hosts"},
	} {
		_, err := ParseMachine(strings.NewReader(c.text), "m.txt")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want prefix %q", c.text, err, c.want)
		}
	}
	if m, err := ParseMemory("1.5g"); err != nil || m != 3*gb/2 {
		t.Errorf("ParseMemory 1.5g = %d %v", m, err)
	}
	if FormatMemory(16*gb) != "16GB" || FormatMemory(512<<20) != "512MB" || FormatMemory(0) != "-" {
		t.Errorf("FormatMemory: %s %s %s", FormatMemory(16*gb), FormatMemory(512<<20), FormatMemory(0))
	}
}
