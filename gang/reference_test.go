package gang_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/gangtest"
)

// refJob is a job of the reference simulators, in whole seconds.
type refJob struct {
	id, submit, procs, est, run int
	start, resv                 int
}

// usage is the processors in use (by estimate) at each whole second, the
// representation pyss's CPU snapshot uses. It grows on demand.
type usage []int

func (u *usage) at(t int) int {
	if t < len(*u) {
		return (*u)[t]
	}
	return 0
}

func (u *usage) add(from, to, procs int) {
	for t := from; t < to; t++ {
		for t >= len(*u) {
			*u = append(*u, 0)
		}
		(*u)[t] += procs
	}
}

// fits reports whether procs more processors are free over [from, from+dur)
// (at least at from, for a zero dur).
func (u *usage) fits(P, from, dur, procs int) bool {
	for t := from; t < from+max(dur, 1); t++ {
		if u.at(t)+procs > P {
			return false
		}
	}
	return true
}

// referenceSchedule simulates jobs second by second with the dumbest
// faithful reading of each policy and returns each job's start.
func referenceSchedule(P int, policy gang.Policy, jobs []refJob) map[int]int {
	var queue, running []*refJob
	starts := map[int]int{}
	next := 0
	var resv usage // conservative: running jobs and reservations by estimate
	startJob := func(j *refJob, t int) {
		j.start = t
		starts[j.id] = t
		running = append(running, j)
		queue = slices.DeleteFunc(queue, func(q *refJob) bool { return q == j })
	}
	freeNow := func() int {
		used := 0
		for _, r := range running {
			used += r.procs
		}
		return P - used
	}
	for t := 0; next < len(jobs) || len(queue) > 0 || len(running) > 0; t++ {
		released := false
		running = slices.DeleteFunc(running, func(r *refJob) bool {
			if r.start+r.run != t {
				return false
			}
			if policy == gang.Conservative {
				for s := t; s < r.start+r.est; s++ {
					resv[s] -= r.procs // release the unused tail
				}
			}
			released = true
			return true
		})
		if policy == gang.Conservative && released {
			for _, q := range queue { // compress, in arrival order
				if q.resv <= t {
					continue
				}
				for s := q.resv; s < q.resv+max(q.est, 0); s++ {
					resv[s] -= q.procs
				}
				q.resv = t
				for !resv.fits(P, q.resv, q.est, q.procs) {
					q.resv++
				}
				resv.add(q.resv, q.resv+q.est, q.procs)
			}
		}
		for next < len(jobs) && jobs[next].submit == t {
			j := &jobs[next]
			queue = append(queue, j)
			if policy == gang.Conservative {
				j.resv = t
				for !resv.fits(P, j.resv, j.est, j.procs) {
					j.resv++
				}
				resv.add(j.resv, j.resv+j.est, j.procs)
			}
			next++
		}
		switch policy {
		case gang.Conservative:
			for _, q := range slices.Clone(queue) {
				if q.resv == t {
					startJob(q, t)
				}
			}
		default:
			for len(queue) > 0 && queue[0].procs <= freeNow() {
				startJob(queue[0], t)
			}
			if policy == gang.FCFS || len(queue) < 2 {
				continue
			}
			// pyss's snapshot: running jobs by estimate plus the head's
			// reservation at the first second it fits; a candidate starts if
			// it fits in that snapshot over its whole estimate.
			var snap usage
			for _, r := range running {
				snap.add(t, r.start+r.est, r.procs)
			}
			head := queue[0]
			shadow := t
			for !snap.fits(P, shadow, head.est, head.procs) {
				shadow++
			}
			snap.add(shadow, shadow+head.est, head.procs)
			cands := slices.Clone(queue[1:])
			if policy == gang.EASYSJBF {
				slices.SortStableFunc(cands, func(a, b *refJob) int { return a.est - b.est })
			}
			for _, c := range cands {
				if c.procs <= freeNow() && snap.fits(P, t, c.est, c.procs) {
					snap.add(t, t+c.est, c.procs)
					startJob(c, t)
				}
			}
		}
	}
	return starts
}

// randomWorkload draws small integer workloads in which no job overruns its
// estimate. Runtimes are at least a second: the time-stepped reference sees
// an end only at a later step. (Zero-length jobs are covered by the scripts.)
func randomWorkload(rng *rand.Rand) (int, []refJob) {
	P := 1 + rng.IntN(12)
	n := 1 + rng.IntN(25)
	jobs := make([]refJob, n)
	t := 0
	for i := range jobs {
		t += rng.IntN(4)
		est := 1 + rng.IntN(12)
		run := est
		if rng.IntN(2) == 0 {
			run = 1 + rng.IntN(est)
		}
		jobs[i] = refJob{id: i + 1, submit: t, procs: 1 + rng.IntN(P), est: est, run: run}
	}
	return P, jobs
}

func TestPoliciesMatchReference(t *testing.T) {
	sec := func(v int) time.Duration { return time.Duration(v) * time.Second }
	// The reference knows the four classic policies; the others are checked
	// against these (priority_test.go).
	for _, policy := range []gang.Policy{gang.FCFS, gang.EASY, gang.EASYSJBF, gang.Conservative} {
		t.Run(string(policy), func(t *testing.T) {
			for seed := uint64(0); seed < 3000; seed++ {
				rng := rand.New(rand.NewPCG(seed, 7))
				P, jobs := randomWorkload(rng)
				want := referenceSchedule(P, policy, slices.Clone(jobs))
				runs := make([]gangtest.Run, len(jobs))
				for i, j := range jobs {
					runs[i] = gangtest.Run{
						Job:     gang.Job{ID: gang.JobID(j.id), Submit: sec(j.submit), Processors: j.procs, Estimate: sec(j.est)},
						Runtime: sec(j.run),
					}
				}
				cfg := gang.Config{Machine: gang.Machine{Processors: P}, MPL: 1, Policy: policy}
				got, rec, err := gangtest.Simulate(cfg, runs)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				for _, j := range jobs {
					if g := got[gang.JobID(j.id)].Start; g != sec(want[j.id]) {
						t.Fatalf("seed %d: P=%d job %d: core starts it at %v, reference at %ds\nworkload: %s\ndecisions:\n%s",
							seed, P, j.id, g, want[j.id], describe(jobs), gangtest.Format(rec.Decisions))
					}
				}
				// Replaying the recorded inputs into a fresh core must give
				// the same decisions: the core has no hidden inputs.
				replayed, err := gangtest.Replay(cfg, rec.Log)
				if err != nil {
					t.Fatalf("seed %d: replay: %v", seed, err)
				}
				if a, b := gangtest.Format(replayed), gangtest.Format(rec.Decisions); a != b {
					t.Fatalf("seed %d: replay differs:\n%s\nvs\n%s", seed, a, b)
				}
			}
		})
	}
}

func describe(jobs []refJob) string {
	s := "id submit procs est run:"
	for _, j := range jobs {
		s += fmt.Sprintf(" [%d %d %d %d %d]", j.id, j.submit, j.procs, j.est, j.run)
	}
	return s
}
