package gang_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/gangtest"
)

// randomMatrixWorkload draws a small workload for a time-shared matrix,
// with memory per process when mem > 0.
func randomMatrixWorkload(rng *rand.Rand, procs int, mem int64) []gangtest.Run {
	n := 1 + rng.IntN(30)
	jobs := make([]gangtest.Run, n)
	t := time.Duration(0)
	for i := range jobs {
		t += time.Duration(rng.IntN(4)) * time.Second
		est := time.Duration(1+rng.IntN(12)) * time.Second
		run := est
		if rng.IntN(2) == 0 {
			run = time.Duration(1+rng.IntN(int(est/time.Second))) * time.Second
		}
		j := gang.Job{ID: gang.JobID(i + 1), Submit: t, Processors: 1 + rng.IntN(procs), Estimate: est}
		if mem > 0 && rng.IntN(3) > 0 {
			j.Memory = 1 + rng.Int64N(mem)
		}
		jobs[i] = gangtest.Run{Job: j, Runtime: run}
	}
	return jobs
}

// Every decision on random matrices passes the independent checker (slots,
// memory, alternates); every job runs; after every pass no queued job is
// one the policy could have started; and a replay reproduces the run.
func TestMatrixProperties(t *testing.T) {
	for _, policy := range gang.Policies() {
		t.Run(string(policy), func(t *testing.T) {
			for seed := uint64(0); seed < 1500; seed++ {
				rng := rand.New(rand.NewPCG(seed, 11))
				cfg := gang.Config{
					Machine:               gang.Machine{Processors: 1 + rng.IntN(10)},
					MPL:                   1 + rng.IntN(4),
					Policy:                policy,
					AlternativeScheduling: rng.IntN(2) == 0,
				}
				if rng.IntN(2) == 0 {
					cfg.Machine.MemoryPerProcessor = 100
				}
				jobs := randomMatrixWorkload(rng, cfg.Machine.Processors, cfg.Machine.MemoryPerProcessor)
				out, rec, err := simulateChecked(t, cfg, jobs)
				if err != nil {
					t.Fatalf("seed %d %+v: %v\ndecisions:\n%s", seed, cfg, err, gangtest.Format(rec.Decisions))
				}
				for _, j := range jobs {
					if o, ok := out[j.ID]; !ok || o.End < o.Start || o.Start < j.Submit {
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
		})
	}
}

// simulateChecked is gangtest.Simulate plus the "nothing left startable"
// check after every pass.
func simulateChecked(t *testing.T, cfg gang.Config, jobs []gangtest.Run) (map[gang.JobID]gangtest.Outcome, *gangtest.Recorder, error) {
	t.Helper()
	out, rec, err := gangtest.Simulate(cfg, jobs)
	if err != nil {
		return out, rec, err
	}
	// Re-drive a fresh core with the recorded inputs and inspect every
	// queued job after each pass.
	r, err := gangtest.NewRecorder(cfg)
	if err != nil {
		return out, rec, err
	}
	for _, e := range rec.Log {
		switch e.Op {
		case gangtest.OpSubmit:
			err = r.Submit(e.Job, e.Now)
		case gangtest.OpFinished:
			err = r.Finished(e.ID, e.Now)
		case gangtest.OpSchedule:
			if _, err = r.Schedule(e.Now); err == nil {
				for _, id := range r.S.Queued() {
					why := r.S.Explain(id)
					if why.Rule == gang.RuleFits || why.Rule == gang.RuleReservationDue {
						t.Fatalf("at %v job %d is still queued, but %v (cfg %+v)\nlog: %+v\ndecisions:\n%s", e.Now, id, why, cfg, rec.Log, gangtest.Format(r.Decisions))
					}
				}
			}
		}
		if err != nil {
			return out, rec, err
		}
	}
	return out, rec, nil
}

// Columns leaving and returning at random instants: no job ever starts on
// an offline column (checked by gang/verify), every job still runs once
// everything is back, and the run replays exactly.
func TestOfflineColumnsProperties(t *testing.T) {
	for _, policy := range gang.Policies() {
		t.Run(string(policy), func(t *testing.T) {
			for seed := uint64(0); seed < 500; seed++ {
				rng := rand.New(rand.NewPCG(seed, 13))
				procs := 2 + rng.IntN(8)
				cfg := gang.Config{Machine: gang.Machine{Processors: procs}, MPL: 1 + rng.IntN(3), Policy: policy, AlternativeScheduling: rng.IntN(2) == 0}
				rec, err := gangtest.NewRecorder(cfg)
				if err != nil {
					t.Fatal(err)
				}
				jobs := randomMatrixWorkload(rng, procs, 0)
				running := map[gang.JobID]time.Duration{} // job → end
				runtime := map[gang.JobID]time.Duration{}
				next, done := 0, 0
				offline := map[int]bool{}
				fail := func(err error) {
					t.Helper()
					t.Fatalf("seed %d %+v: %v\n%s", seed, cfg, err, gangtest.Format(rec.Decisions))
				}
				for now := time.Duration(0); done < len(jobs); now += time.Second {
					if now > time.Hour {
						fail(fmt.Errorf("jobs left unfinished: %d of %d done", done, len(jobs)))
					}
					ids := slices.Sorted(maps.Keys(running)) // a seed reproduces its run
					for _, id := range ids {
						if running[id] <= now {
							if err := rec.Finished(id, now); err != nil {
								fail(err)
							}
							delete(running, id)
							done++
						}
					}
					for next < len(jobs) && jobs[next].Submit <= now {
						runtime[jobs[next].ID] = jobs[next].Runtime
						if err := rec.Submit(jobs[next].Job, now); err != nil {
							fail(err)
						}
						next++
					}
					// Until 40 s columns come and go; then all return.
					if now < 40*time.Second && rng.IntN(3) == 0 {
						c := rng.IntN(procs)
						if err := rec.SetOffline([]int{c}, !offline[c], now); err != nil {
							fail(err)
						}
						offline[c] = !offline[c]
						// A job on a column that left is ended by its caller.
						for _, id := range slices.Sorted(maps.Keys(running)) {
							st, _ := rec.S.Status(id)
							if offline[c] && slices.Contains(st.Columns, c) {
								running[id] = now
							}
						}
					} else if now == 40*time.Second {
						var back []int
						for c, off := range offline {
							if off {
								back = append(back, c)
							}
						}
						slices.Sort(back)
						if err := rec.SetOffline(back, false, now); err != nil {
							fail(err)
						}
						clear(offline)
					}
					ds, err := rec.Schedule(now)
					if err != nil {
						fail(err)
					}
					for _, d := range ds {
						if d.Kind == gang.Start {
							running[d.Job] = now + max(runtime[d.Job], time.Second)
						}
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
		})
	}
}
