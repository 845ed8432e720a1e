package jss_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/gangtest"
	"github.com/cosched/cosched/jss"
)

func sec(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

func randomJobs(seed uint64, n, procs int) []jss.Job {
	rng := rand.New(rand.NewPCG(seed, 99))
	jobs := make([]jss.Job, n)
	t := time.Duration(0)
	for i := range jobs {
		t += time.Duration(rng.IntN(20)) * time.Second
		est := time.Duration(rng.IntN(100)) * time.Second
		run := est
		if rng.IntN(3) > 0 {
			run = time.Duration(rng.Int64N(int64(est) + 1))
		}
		jobs[i] = jss.Job{
			Job:     gang.Job{Submit: t, Processors: 1 + rng.IntN(procs), Estimate: est},
			Number:  int64(i + 1),
			Runtime: run,
		}
	}
	return jobs
}

func runAll(t *testing.T, cfg jss.Config, jobs []jss.Job) ([]jss.Result, jss.Stats) {
	t.Helper()
	var out []jss.Result
	st, err := jss.Run(context.Background(), cfg, jss.SliceSource(jobs), func(r jss.Result) error {
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

func config(procs int, p gang.Policy) jss.Config {
	return jss.Config{Scheduler: gang.Config{Machine: gang.Machine{Processors: procs}, MPL: 1, Policy: p}, Check: true}
}

// The engine and gangtest's deliberately plain loop are two independent
// drivers of the same core: they must agree on every start time, including
// zero-length jobs and fractional-second times.
func TestEngineAgreesWithPlainDriver(t *testing.T) {
	for _, p := range gang.Policies() {
		for seed := uint64(0); seed < 200; seed++ {
			jobs := randomJobs(seed, 60, 16)
			results, _ := runAll(t, config(16, p), jobs)
			runs := make([]gangtest.Run, len(jobs))
			for i, j := range jobs {
				runs[i] = gangtest.Run{Job: j.Job, Runtime: j.Runtime}
				runs[i].ID = gang.JobID(i + 1)
			}
			want, _, err := gangtest.Simulate(gang.Config{Machine: gang.Machine{Processors: 16}, MPL: 1, Policy: p}, runs)
			if err != nil {
				t.Fatal(err)
			}
			if len(results) != len(jobs) {
				t.Fatalf("%s seed %d: %d results for %d jobs", p, seed, len(results), len(jobs))
			}
			for _, r := range results {
				w := want[gang.JobID(r.Number)]
				if r.Start != w.Start || r.End != w.End {
					t.Fatalf("%s seed %d job %d: engine [%v,%v], plain driver [%v,%v]", p, seed, r.Number, r.Start, r.End, w.Start, w.End)
				}
			}
		}
	}
}

func TestRunIsDeterministic(t *testing.T) {
	jobs := randomJobs(7, 500, 32)
	a, sa := runAll(t, config(32, gang.Conservative), jobs)
	b, sb := runAll(t, config(32, gang.Conservative), jobs)
	if sa != sb || len(a) != len(b) {
		t.Fatalf("stats differ: %+v vs %+v", sa, sb)
	}
	for i := range a {
		if a[i].Number != b[i].Number || a[i].Start != b[i].Start || a[i].End != b[i].End {
			t.Fatalf("result %d differs: %+v vs %+v", i, a[i], b[i])
		}
	}
}

func TestZeroLengthAndSimultaneousJobs(t *testing.T) {
	jobs := []jss.Job{
		{Job: gang.Job{Submit: 0, Processors: 4, Estimate: 0}, Number: 1, Runtime: 0},
		{Job: gang.Job{Submit: 0, Processors: 4, Estimate: sec(5)}, Number: 2, Runtime: sec(5)},
		{Job: gang.Job{Submit: 0, Processors: 4, Estimate: 0}, Number: 3, Runtime: 0},
	}
	res, _ := runAll(t, config(4, gang.FCFS), jobs)
	ends := map[int64][2]time.Duration{}
	for _, r := range res {
		ends[r.Number] = [2]time.Duration{r.Start, r.End}
	}
	// Job 1 takes all 4 processors for no time; job 2 starts at once after
	// it, at the same instant; job 3 waits for job 2.
	want := map[int64][2]time.Duration{1: {0, 0}, 2: {0, sec(5)}, 3: {sec(5), sec(5)}}
	for n, w := range want {
		if ends[n] != w {
			t.Errorf("job %d ran %v, want %v", n, ends[n], w)
		}
	}
}

func TestRunErrors(t *testing.T) {
	unsorted := []jss.Job{
		{Job: gang.Job{Submit: sec(10), Processors: 1}, Number: 1},
		{Job: gang.Job{Submit: sec(5), Processors: 1}, Number: 2},
	}
	_, err := jss.Run(context.Background(), config(4, gang.EASY), jss.SliceSource(unsorted), func(jss.Result) error { return nil })
	if !errors.Is(err, jss.ErrUnsorted) {
		t.Errorf("unsorted source: err = %v, want ErrUnsorted", err)
	}

	wide := []jss.Job{{Job: gang.Job{Processors: 5}, Number: 9}}
	_, err = jss.Run(context.Background(), config(4, gang.EASY), jss.SliceSource(wide), func(jss.Result) error { return nil })
	if !errors.Is(err, gang.ErrJobTooWide) || !strings.Contains(err.Error(), "job 9") {
		t.Errorf("too wide: err = %v", err)
	}

	sinkErr := errors.New("disk full")
	_, err = jss.Run(context.Background(), config(4, gang.EASY), jss.SliceSource(randomJobs(1, 10, 4)), func(jss.Result) error { return sinkErr })
	if !errors.Is(err, sinkErr) {
		t.Errorf("sink error: err = %v", err)
	}

	srcErr := errors.New("bad line")
	_, err = jss.Run(context.Background(), config(4, gang.EASY), failingSource{srcErr}, func(jss.Result) error { return nil })
	if !errors.Is(err, srcErr) {
		t.Errorf("source error: err = %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = jss.Run(ctx, config(4, gang.EASY), jss.SliceSource(randomJobs(1, 10, 4)), func(jss.Result) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}

	_, err = jss.Run(context.Background(), jss.Config{Scheduler: gang.Config{MPL: 1, Policy: "x"}}, jss.SliceSource(nil), func(jss.Result) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "unknown policy") {
		t.Errorf("bad config: err = %v", err)
	}
}

type failingSource struct{ err error }

func (f failingSource) Next() (jss.Job, error) { return jss.Job{}, f.err }
