// Package experiment runs a benchmark workload on a cosched cluster in real
// time and records how every job ran: the measured half of a
// measured-versus-simulated comparison. The workload comes from the
// simulator's generator (jss/sweep), so the same jobs can be simulated.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// Job is one job of a workload, as it is submitted.
type Job struct {
	Seq        int           `json:"seq"`        // position in the workload, from 0
	Submit     time.Duration `json:"submit_ns"`  // offset from the start of the run
	Processors int           `json:"processors"` // ranks
	Template   string        `json:"template"`   // ⟨g,v,comm,sync⟩
	Runtime    time.Duration `json:"runtime_ns"` // dedicated runtime drawn by the generator
	Iterations int           `json:"iterations"` // what makes Runtime on the relays' network model
	// Dedicated is the runtime of the job's program alone on its
	// processors, as the simulator runs it (its iterations and compute
	// draws, the nominal network): what execution slowdown divides by, on
	// both sides.
	Dedicated time.Duration `json:"dedicated_ns"`
	Estimate  time.Duration `json:"estimate_ns"`
	Seed      uint64        `json:"seed"` // of the compute-time draws: the simulator's for this job
	// Program, Command and MPI make the job an MPI program's (bench run
	// --mpi-programs): Command is submitted with MPI instead of a
	// benchmark rank, and Template is the program's calibrated model.
	Program string   `json:"program,omitempty"`
	Command []string `json:"command,omitempty"`
	MPI     string   `json:"mpi,omitempty"`
	Dir     string   `json:"dir,omitempty"` // its ranks' working directory
	// SoloCompute is an MPI program's useful computation summed over its
	// ranks, from its model: what processor utilization counts for it,
	// since its ranks report none.
	SoloCompute time.Duration `json:"solo_compute_ns,omitempty"`
}

// Workload returns the jobs of point p on machine m: the generator's jobs,
// each with the iterations that make its runtime and, as its time limit,
// the estimate of those iterations.
func Workload(m sweep.Machine, p sweep.Point) ([]Job, error) {
	gen, err := m.Generator(p)
	if err != nil {
		return nil, fmt.Errorf("experiment: workload: %w", err)
	}
	var jobs []Job
	for {
		j, err := gen.Next()
		if err == io.EOF {
			return jobs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("experiment: workload: %w", err)
		}
		t, err := bench.ParseTemplate(j.Template)
		if err != nil {
			return nil, fmt.Errorf("experiment: workload job %d: %w", j.Number, err)
		}
		it := bench.IterationEstimate(t, j.Processors, m.Network)
		n := bench.Iterations(t, j.Processors, m.Network, j.Runtime) // as the simulator's programs
		seed := jss.ProgramSeed(p.Seed, j.Number)
		ded := jss.NewProgram(t, j.Processors, n, seed).RunDedicated(m.Network)
		jobs = append(jobs, Job{
			Seq: len(jobs), Submit: j.Submit, Processors: j.Processors, Template: j.Template,
			Runtime: j.Runtime, Iterations: n, Dedicated: ded.Runtime, Estimate: time.Duration(n) * it, Seed: seed,
		})
	}
}

// Record is how one job ran. Times are offsets from the start of the run;
// Start and End are -1 when the job never started or ended.
type Record struct {
	Job
	ID       int64         `json:"id"`
	State    api.State     `json:"state"`
	Reason   string        `json:"reason,omitempty"`
	Start    time.Duration `json:"start_ns"`
	End      time.Duration `json:"end_ns"`
	Compute  time.Duration `json:"compute_ns"`   // summed over the ranks' reports
	CommWait time.Duration `json:"comm_wait_ns"` // summed over the ranks' reports
	Reports  int           `json:"reports"`      // ranks that reported
}

// Completed reports whether the job ran to its end.
func (r Record) Completed() bool { return r.State == api.Completed }

// Progress is the state of a run, for display.
type Progress struct {
	Submitted, Done, Total int
	Elapsed                time.Duration
}

// Options tune Replay.
type Options struct {
	Work     string        // the ranks' work: "cpu" or "wall"
	Poll     time.Duration // how often the cluster is asked about the jobs (default 200 ms)
	Progress func(Progress)
	// StallAfter, if positive, ends the run with ErrStalled when jobs are
	// running but none has ended for that long: a hung job fails the run
	// instead of holding it forever.
	StallAfter time.Duration
}

// ErrStalled is returned by Replay when no job ended for Options.StallAfter.
var ErrStalled = errors.New("experiment: stalled")

// Replay submits jobs to the cluster behind c at their offsets from now,
// waits for every one to end, and returns their records in workload order.
// If ctx ends first, the jobs not yet ended are cancelled and the records
// of those that ended are returned with ctx's error.
func Replay(ctx context.Context, c *api.Client, jobs []Job, o Options) ([]Record, error) {
	if o.Poll <= 0 {
		o.Poll = 200 * time.Millisecond
	}
	if o.Work == "" {
		o.Work = "cpu"
	}
	t0 := time.Now()
	recs := make([]Record, len(jobs))
	running := map[int64]int{} // job id → index
	serverSubmit := map[int64]time.Time{}
	next, done := 0, 0
	lastEnd := t0 // when a job last ended, or the run began
	report := func() {
		if o.Progress != nil {
			o.Progress(Progress{Submitted: next, Done: done, Total: len(jobs), Elapsed: time.Since(t0)})
		}
	}
	for done < len(jobs) {
		for next < len(jobs) && time.Since(t0) >= jobs[next].Submit {
			j := jobs[next]
			spec := api.JobSpec{
				Name: fmt.Sprintf("w%d", j.Seq), Bench: j.Template, BenchIterations: j.Iterations,
				BenchSeed: j.Seed, BenchWork: o.Work, Processors: j.Processors,
				TimeLimit: api.Duration{D: j.Estimate}, Overrun: "extend",
			}
			if len(j.Command) > 0 {
				spec.Name = fmt.Sprintf("w%d-%s", j.Seq, j.Program)
				spec.Bench, spec.BenchIterations, spec.BenchSeed, spec.BenchWork = "", 0, 0, ""
				spec.Command, spec.MPI, spec.Dir = j.Command, j.MPI, j.Dir
			}
			id, err := c.Submit(ctx, spec)
			if err != nil {
				return finish(recs, running, c, fmt.Errorf("experiment: submit job %d: %w", j.Seq, err))
			}
			recs[next] = Record{Job: j, ID: id, Start: -1, End: -1}
			running[id] = next
			next++
		}
		if len(running) > 0 {
			list, err := c.Jobs(ctx, true)
			if err != nil {
				return finish(recs, running, c, fmt.Errorf("experiment: list jobs: %w", err))
			}
			for _, nj := range list {
				i, ok := running[nj.ID]
				if !ok {
					continue
				}
				serverSubmit[nj.ID] = nj.Submit
				if !nj.State.Done() {
					continue
				}
				full, err := c.Job(ctx, nj.ID) // with every rank's report
				if err != nil {
					return finish(recs, running, c, fmt.Errorf("experiment: job %d: %w", nj.ID, err))
				}
				recs[i] = record(recs[i], full)
				delete(running, nj.ID)
				done++
				lastEnd = time.Now()
			}
		}
		if o.StallAfter > 0 && len(running) > 0 && time.Since(lastEnd) > o.StallAfter {
			ids := slices.Sorted(maps.Keys(running))
			return finish(recs, running, c, fmt.Errorf("%w: no job ended for %v; still running: jobs %v (cancelled)",
				ErrStalled, time.Since(lastEnd).Round(time.Second), ids))
		}
		report()
		if done == len(jobs) {
			break
		}
		wait := o.Poll
		if next < len(jobs) {
			wait = min(wait, max(0, jobs[next].Submit-time.Since(t0)))
		}
		select {
		case <-ctx.Done():
			return finish(recs, running, c, ctx.Err())
		case <-time.After(wait):
		}
	}
	return recs, nil
}

// record fills r from the cluster's account of its job. Offsets are taken
// from the controller's own submit time, so the two clocks need not agree.
func record(r Record, j api.Job) Record {
	r.State, r.Reason = j.State, j.Reason
	if j.Start != nil {
		r.Start = r.Submit + j.Start.Sub(j.Submit)
	}
	if j.End != nil {
		r.End = r.Submit + j.End.Sub(j.Submit)
	}
	for _, rk := range j.Ranks {
		if rk.Bench != nil {
			r.Compute += rk.Bench.Compute.D
			r.CommWait += rk.Bench.CommWait.D
			r.Reports++
		}
	}
	if r.Reports == 0 && r.State == api.Completed {
		r.Compute = r.SoloCompute // an MPI program: its calibrated work
	}
	return r
}

// finish cancels the jobs still running after a failed or interrupted
// run and returns the records of the jobs that ended.
func finish(recs []Record, running map[int64]int, c *api.Client, err error) ([]Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for id := range running {
		if e := c.Cancel(ctx, id); e != nil {
			errs = append(errs, fmt.Errorf("cancel job %d: %w", id, e))
		}
	}
	var ended []Record
	for _, r := range recs {
		if r.ID != 0 && r.State.Done() {
			ended = append(ended, r)
		}
	}
	return ended, errors.Join(append([]error{err}, errs...)...)
}

// Summary is a run's metrics: over its completed jobs, and processor
// utilization as the useful computation the ranks reported over the
// processors' time from the first submission to the last end.
type Summary struct {
	Jobs          int             `json:"jobs"`
	Completed     int             `json:"completed"`
	Metrics       metrics.Summary `json:"metrics"`
	ProcessorUtil float64         `json:"processor_util"`
	Compute       time.Duration   `json:"compute_ns"`
	CommWait      time.Duration   `json:"comm_wait_ns"`
}

// Summarize computes the metrics of recs on a machine of procs
// processors; tau is the bounded slowdown's threshold.
func Summarize(recs []Record, procs int, tau time.Duration) Summary {
	col := metrics.NewCollector(procs, tau)
	s := Summary{Jobs: len(recs)}
	for _, r := range recs {
		s.Compute += r.Compute
		s.CommWait += r.CommWait
		if !r.Completed() || r.Start < 0 || r.End < r.Start {
			continue
		}
		s.Completed++
		runtime := r.Dedicated
		if runtime <= 0 {
			runtime = r.Runtime
		}
		col.Add(metrics.Job{Submit: r.Submit, Start: r.Start, End: r.End, Processors: r.Processors, Runtime: runtime})
	}
	s.Metrics = col.Summary()
	if s.Metrics.Makespan > 0 && procs > 0 {
		s.ProcessorUtil = s.Compute.Seconds() / (float64(procs) * s.Metrics.Makespan)
	}
	return s
}

// Simulate predicts the run of point p's workload on machine m in mode:
// the same jobs, the same scheduler core, the simulator's model of the
// mode.
func Simulate(ctx context.Context, m sweep.Machine, p sweep.Point, mode sharing.Mode) (sweep.Row, error) {
	if err := jss.CheckMode(mode); err != nil {
		return sweep.Row{}, fmt.Errorf("experiment: %w", err)
	}
	p.Mode = mode
	if mode == sharing.Space {
		p.MPL, p.Slice = 1, 0
	}
	return sweep.RunPoint(ctx, m, p)
}

// SimJob is one job's simulated run, in workload order (Seq is the
// workload position, as in Job).
type SimJob struct {
	Seq     int           `json:"seq"`
	Start   time.Duration `json:"start_ns"`
	End     time.Duration `json:"end_ns"`
	Runtime time.Duration `json:"runtime_ns"` // dedicated runtime on the machine's network
}

// SimulateJobs is Simulate with every job's simulated start and end, for a
// job-by-job comparison with the measured records.
func SimulateJobs(ctx context.Context, m sweep.Machine, p sweep.Point, mode sharing.Mode) ([]SimJob, error) {
	if err := jss.CheckMode(mode); err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	p.Mode = mode
	if mode == sharing.Space {
		p.MPL, p.Slice = 1, 0
	}
	gen, err := m.Generator(p)
	if err != nil {
		return nil, fmt.Errorf("experiment: simulate: %w", err)
	}
	var out []SimJob
	if _, err := jss.RunModel(ctx, m.Config(p), gen, func(r jss.Result) error {
		out = append(out, SimJob{Seq: int(r.Number) - 1, Start: r.Start, End: r.End, Runtime: r.Runtime})
		return nil
	}); err != nil {
		return nil, fmt.Errorf("experiment: simulate %v: %w", p, err)
	}
	slices.SortFunc(out, func(a, b SimJob) int { return a.Seq - b.Seq })
	return out, nil
}

// listSource delivers a fixed list of jobs to the simulator.
type listSource struct{ jobs []jss.Job }

func (s *listSource) Next() (jss.Job, error) {
	if len(s.jobs) == 0 {
		return jss.Job{}, io.EOF
	}
	j := s.jobs[0]
	s.jobs = s.jobs[1:]
	return j, nil
}

// SimulateList is Simulate and SimulateJobs for a workload of the
// caller's (jobs in submit order, each with a template and a dedicated
// Runtime, as bench run --mpi-programs makes from its calibration)
// instead of p's generated one: the row and every job's run.
func SimulateList(ctx context.Context, m sweep.Machine, p sweep.Point, mode sharing.Mode, jobs []Job) (sweep.Row, []SimJob, error) {
	if err := jss.CheckMode(mode); err != nil {
		return sweep.Row{}, nil, fmt.Errorf("experiment: %w", err)
	}
	p.Mode = mode
	if mode == sharing.Space {
		p.MPL, p.Slice = 1, 0
	}
	src := &listSource{}
	for _, j := range jobs {
		src.jobs = append(src.jobs, jss.Job{
			Job:    gang.Job{ID: gang.JobID(j.Seq + 1), Submit: j.Submit, Processors: j.Processors, Estimate: j.Estimate, Template: j.Template},
			Number: int64(j.Seq + 1), Runtime: j.Runtime,
		})
	}
	var out []SimJob
	row, err := sweep.RunSource(ctx, m, p, src, func(r jss.Result) {
		out = append(out, SimJob{Seq: int(r.Number) - 1, Start: r.Start, End: r.End, Runtime: r.Runtime})
	})
	if err != nil {
		return sweep.Row{}, nil, fmt.Errorf("experiment: simulate %v: %w", p, err)
	}
	slices.SortFunc(out, func(a, b SimJob) int { return a.Seq - b.Seq })
	return row, out, nil
}
