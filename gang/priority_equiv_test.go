package gang_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/gangtest"
)

// equivWorkload draws a small workload; with exact set every job runs for
// exactly its span, the estimate dilated by mpl (the core's estimated end). Estimates are at least a second: a zero-estimate
// job reserved by EASY blocks its extra processors for an instant, while a
// zero-length reservation in a profile blocks nothing (docs/POLICIES.md).
func equivWorkload(rng *rand.Rand, procs, mpl int, mem int64, exact bool) []gangtest.Run {
	n := 1 + rng.IntN(30)
	jobs := make([]gangtest.Run, n)
	t := time.Duration(0)
	for i := range jobs {
		t += time.Duration(rng.IntN(4)) * time.Second
		est := time.Duration(1+rng.IntN(12)) * time.Second
		run := est * time.Duration(mpl)
		if !exact && rng.IntN(2) == 0 {
			run = time.Duration(rng.IntN(int(est/time.Second)+1)) * time.Second
		}
		j := gang.Job{ID: gang.JobID(i + 1), Submit: t, Processors: 1 + rng.IntN(procs), Estimate: est}
		if mem > 0 && rng.IntN(3) > 0 {
			j.Memory = 1 + rng.Int64N(mem)
		}
		jobs[i] = gangtest.Run{Job: j, Runtime: run}
	}
	return jobs
}

// sameStarts simulates jobs under both configurations and fails on the
// first job whose start differs.
func sameStarts(t *testing.T, seed uint64, a, b gang.Config, jobs []gangtest.Run) {
	t.Helper()
	outA, recA, err := gangtest.Simulate(a, jobs)
	if err != nil {
		t.Fatalf("seed %d %s: %v", seed, a.Policy, err)
	}
	outB, recB, err := gangtest.Simulate(b, jobs)
	if err != nil {
		t.Fatalf("seed %d %s: %v", seed, b.Policy, err)
	}
	for _, j := range jobs {
		if sa, sb := outA[j.ID].Start, outB[j.ID].Start; sa != sb {
			t.Fatalf("seed %d (procs %d, mpl %d, mem %d): job %d starts at %v under %s %+v, at %v under %s %+v\njobs %+v\n%s:\n%s\n%s:\n%s",
				seed, a.Machine.Processors, a.MPL, a.Machine.MemoryPerProcessor, j.ID, sa, a.Policy, a.Backfill, sb, b.Policy, b.Backfill,
				jobs, a.Policy, gangtest.Format(recA.Decisions), b.Policy, gangtest.Format(recB.Decisions))
		}
	}
}

func randomMachine(rng *rand.Rand, memory bool) (gang.Machine, int) {
	m := gang.Machine{Processors: 1 + rng.IntN(12)}
	if memory && rng.IntN(2) == 0 {
		m.MemoryPerProcessor = 100
	}
	return m, 1 + rng.IntN(3)
}

// fcfs-bf with one dynamic reservation is EASY, on any workload (estimates
// inexact, memory, MPL 1–3); with exact estimates and no memory limit a
// fixed reservation is the same, since EASY's shadow time never moves then.
// (A head blocked by memory has EASY's shadow at "now" in the row where it
// is earliest, which moves; a fixed reservation keeps its row.)
func TestFCFSBackfillOneReservationIsEASY(t *testing.T) {
	for seed := uint64(0); seed < 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 71))
		m, mpl := randomMachine(rng, true)
		exact := seed%2 == 0
		jobs := equivWorkload(rng, m.Processors, mpl, m.MemoryPerProcessor, exact)
		easy := gang.Config{Machine: m, MPL: mpl, Policy: gang.EASY}
		bf := gang.Config{Machine: m, MPL: mpl, Policy: gang.FCFSBF}
		sameStarts(t, seed, easy, bf, jobs)
		if exact && m.MemoryPerProcessor == 0 {
			bf.Backfill = gang.Backfill{Reservations: 1, Mode: gang.Fixed}
			sameStarts(t, seed, easy, bf, jobs)
		}
	}
}

// sjf-bf orders the reservation as well as the backfill by estimate, so it
// is not easy-sjbf; but with one reservation and every job the same
// estimate both reduce to EASY.
func TestSJFBackfillEqualEstimatesIsEASY(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 73))
		m, mpl := randomMachine(rng, false)
		jobs := equivWorkload(rng, m.Processors, mpl, 0, false)
		for i := range jobs {
			jobs[i].Estimate = 12 * time.Second
		}
		sameStarts(t, seed, gang.Config{Machine: m, MPL: mpl, Policy: gang.EASY}, gang.Config{Machine: m, MPL: mpl, Policy: gang.SJFBF}, jobs)
	}
}

// With exact estimates no reservation ever moves, so fcfs-bf with every job
// reserved (dynamic or fixed) is conservative backfilling. (With early ends
// they differ: conservative compresses reservations in arrival order and
// never moves one later; dynamic recomputes them from scratch, fixed keeps
// them where they were.)
func TestFCFSBackfillUnlimitedExactIsConservative(t *testing.T) {
	for seed := uint64(0); seed < 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 79))
		m, mpl := randomMachine(rng, false)
		jobs := equivWorkload(rng, m.Processors, mpl, 0, true)
		cons := gang.Config{Machine: m, MPL: mpl, Policy: gang.Conservative}
		for _, mode := range []gang.ReservationMode{gang.Dynamic, gang.Fixed} {
			bf := gang.Config{Machine: m, MPL: mpl, Policy: gang.FCFSBF, Backfill: gang.Backfill{Reservations: gang.UnlimitedReservations, Mode: mode}}
			sameStarts(t, seed, cons, bf, jobs)
		}
	}
}

// The priority formula on the jobs of testdata/priority_bf.txt at 3 h,
// computed by hand there.
func TestPriorityByHand(t *testing.T) {
	h := time.Hour
	m := gang.Machine{Processors: 10, MemoryPerProcessor: 1000}
	jobs := []gang.Job{
		{ID: 2, Submit: 0, Processors: 2, Estimate: h},
		{ID: 3, Submit: h, Processors: 8, Estimate: 10 * h},
		{ID: 4, Submit: 2 * h, Processors: 1, Estimate: 10 * time.Minute, Memory: 500},
	}
	prio, _ := gang.PresetWeights(gang.PriorityBF)
	lxfw, _ := gang.PresetWeights(gang.LXFWBF)
	mem := gang.Weights{Memory: 10}
	want := map[gang.JobID][3]float64{
		2: {23.4, 4.06, 0},
		3: {9.6, 1.24, 0},
		4: {36.2, 7.02, 10 * 500.0 / 10000}, // 1 processor × 500 of 10 × 1000
	}
	for _, j := range jobs {
		for i, w := range []gang.Weights{prio, lxfw, mem} {
			if got := gang.Priority(w, j, 3*h, m); got < want[j.ID][i]-1e-9 || got > want[j.ID][i]+1e-9 {
				t.Errorf("job %d weights %v: priority %v, want %v", j.ID, w, got, want[j.ID][i])
			}
		}
	}
	// A zero estimate counts as one second: after an hour's wait the
	// expansion is 3601.
	if got := gang.Priority(gang.Weights{Expansion: 1}, gang.Job{}, h, m); got != 3601 {
		t.Errorf("zero estimate: priority %v, want 3601", got)
	}
}

func TestParseBackfillOptions(t *testing.T) {
	w, err := gang.ParseWeights("ww=1, wx=5,wp=0.2,wm=0")
	if err != nil || w != (gang.Weights{Wait: 1, Expansion: 5, Processors: 0.2}) {
		t.Fatalf("ParseWeights: %+v, %v", w, err)
	}
	for _, bad := range []string{"", "ww", "ww=x", "ww=1,ww=2", "wz=1", "ww=Inf"} {
		if _, err := gang.ParseWeights(bad); err == nil {
			t.Errorf("ParseWeights(%q): no error", bad)
		}
	}
	if n, err := gang.ParseReservations("inf"); err != nil || n != gang.UnlimitedReservations {
		t.Errorf("ParseReservations(inf) = %d, %v", n, err)
	}
	if n, err := gang.ParseReservations("4"); err != nil || n != 4 {
		t.Errorf("ParseReservations(4) = %d, %v", n, err)
	}
	for _, bad := range []string{"0", "-1", "x"} {
		if _, err := gang.ParseReservations(bad); err == nil {
			t.Errorf("ParseReservations(%q): no error", bad)
		}
	}
	if _, err := gang.ParseReservationMode("sticky"); err == nil {
		t.Error("ParseReservationMode(sticky): no error")
	}
}

// Every priority-backfill variant (depth, mode, preset, memory, MPL)
// passes the independent checker, leaves nothing startable after a pass,
// runs every job and replays exactly.
func TestPriorityBackfillProperties(t *testing.T) {
	policies := []gang.Policy{gang.FCFSBF, gang.SJFBF, gang.PriorityBF, gang.LXFWBF}
	for seed := uint64(0); seed < 1500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 83))
		m, mpl := randomMachine(rng, true)
		cfg := gang.Config{Machine: m, MPL: mpl, Policy: policies[rng.IntN(len(policies))], AlternativeScheduling: rng.IntN(2) == 0}
		cfg.Backfill.Reservations = []int{0, 1, 2, 3, gang.UnlimitedReservations}[rng.IntN(5)]
		cfg.Backfill.Mode = []gang.ReservationMode{"", gang.Dynamic, gang.Fixed}[rng.IntN(3)]
		if cfg.Policy != gang.SJFBF && rng.IntN(3) == 0 {
			cfg.Backfill.Weights = &gang.Weights{Wait: rng.Float64(), Expansion: rng.Float64(), Processors: rng.Float64(), Memory: rng.Float64()}
		}
		jobs := equivWorkload(rng, m.Processors, mpl, m.MemoryPerProcessor, false)
		out, rec, err := simulateChecked(t, cfg, jobs)
		if err != nil {
			t.Fatalf("seed %d %+v: %v\n%s", seed, cfg, err, gangtest.Format(rec.Decisions))
		}
		for _, j := range jobs {
			if o, ok := out[j.ID]; !ok || o.Start < j.Submit {
				t.Fatalf("seed %d: job %d outcome %+v", seed, j.ID, o)
			}
		}
		replayed, err := gangtest.Replay(cfg, rec.Log)
		if err != nil {
			t.Fatalf("seed %d: replay: %v", seed, err)
		}
		if a, b := gangtest.Format(replayed), gangtest.Format(rec.Decisions); a != b {
			t.Fatalf("seed %d: replay differs", seed)
		}
	}
}

// Priorities change with time alone, but a pass with no news decides
// nothing: calling Schedule every second gives the same starts as calling
// it only at events and wakeups. (The workloads have no overruns: a job
// running past its estimate frees its processors "now" in every later
// pass, as under easy, which does depend on when passes happen.)
func TestPriorityBackfillIndependentOfPassFrequency(t *testing.T) {
	policies := []gang.Policy{gang.SJFBF, gang.PriorityBF, gang.LXFWBF}
	for seed := uint64(0); seed < 600; seed++ {
		rng := rand.New(rand.NewPCG(seed, 89))
		m, mpl := randomMachine(rng, true)
		cfg := gang.Config{Machine: m, MPL: mpl, Policy: policies[rng.IntN(len(policies))]}
		cfg.Backfill.Reservations = []int{1, 2, gang.UnlimitedReservations}[rng.IntN(3)]
		cfg.Backfill.Mode = []gang.ReservationMode{gang.Dynamic, gang.Fixed}[rng.IntN(2)]
		jobs := equivWorkload(rng, m.Processors, mpl, m.MemoryPerProcessor, false)
		want, _, err := gangtest.Simulate(cfg, jobs)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := gangtest.NewRecorder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ends := map[gang.JobID]time.Duration{}
		runtime := map[gang.JobID]time.Duration{}
		got := map[gang.JobID]time.Duration{}
		next := 0
		for now := time.Duration(0); len(got) < len(jobs) || len(ends) > 0; {
			for _, j := range jobs { // in ID order: deterministic
				if e, ok := ends[j.ID]; ok && e == now {
					delete(ends, j.ID)
					if err := rec.Finished(j.ID, now); err != nil {
						t.Fatal(err)
					}
				}
			}
			for next < len(jobs) && jobs[next].Submit == now {
				runtime[jobs[next].ID] = jobs[next].Runtime
				if err := rec.Submit(jobs[next].Job, now); err != nil {
					t.Fatal(err)
				}
				next++
			}
			ds, err := rec.Schedule(now)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				got[d.Job] = now
				ends[d.Job] = now + runtime[d.Job]
			}
			if now > time.Hour {
				t.Fatalf("seed %d: stuck", seed)
			}
			again := false // a zero-length job ended at once: same instant
			for _, e := range ends {
				again = again || e == now
			}
			if !again {
				now += time.Second
			}
		}
		for _, j := range jobs {
			if got[j.ID] != want[j.ID].Start {
				t.Fatalf("seed %d %s %+v: job %d starts at %v with a pass every second, at %v with passes at events", seed, cfg.Policy, cfg.Backfill, j.ID, got[j.ID], want[j.ID].Start)
			}
		}
	}
}
