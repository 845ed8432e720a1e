package jss

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/verify"
)

// Config configures one simulation run.
type Config struct {
	// Scheduler configures the core that makes every decision.
	Scheduler gang.Config
	// Check verifies every decision with gang/verify, an independent record
	// of the matrix: a started job gets exactly its processors' worth of
	// distinct, free columns, starts no earlier than it was submitted, no
	// slot is ever used by two jobs at once and no column's memory is
	// exceeded. A violation ends the run with an error.
	Check bool
}

// Stats describes a finished run.
type Stats struct {
	Jobs   int64         // jobs submitted to the core
	Events int64         // events processed
	Passes int64         // scheduling passes
	End    time.Duration // time of the last event
}

// ErrUnsorted is returned when a source delivers a job submitted before the
// previous one.
var ErrUnsorted = errors.New("jobs are not in submit order")

type active struct {
	job   Job
	seq   int64
	start time.Duration
	end   time.Duration // real end once started
	on    bool          // started
}

// Run simulates the workload from src under cfg and calls emit with each
// job's result when it ends (in completion order; see Ordered for submit
// order). Arrivals are pulled from src one at a time, so memory grows with
// the jobs in the system, not with the workload. Run stops early, with the
// context's error, when ctx is cancelled.
func Run(ctx context.Context, cfg Config, src Source, emit func(Result) error) (Stats, error) {
	core, err := gang.New(cfg.Scheduler)
	if err != nil {
		return Stats{}, fmt.Errorf("jss: %w", err)
	}
	e := engine{
		core: core,
		loop: newLoop(src),
		emit: emit,
		jobs: make(map[gang.JobID]*active),
	}
	if cfg.Check {
		e.check = verify.New(cfg.Scheduler.Machine, cfg.Scheduler.MPL)
	}
	return e.run(ctx)
}

type engine struct {
	loop
	core  *gang.Scheduler
	emit  func(Result) error
	check *verify.Checker
	jobs  map[gang.JobID]*active // queued and running
	stats Stats
}

func (e *engine) run(ctx context.Context) (Stats, error) {
	err := e.loop.run(ctx, &e.stats, steps{complete: e.complete, arrive: e.arrive, pass: e.pass,
		left: func() int { return len(e.jobs) }})
	return e.stats, err
}

func (e *engine) arrive(ev event) error {
	j := &e.in.next
	if err := e.core.Submit(j.Job, ev.at); err != nil {
		return fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	e.stats.Jobs++
	e.jobs[j.ID] = &active{job: *j, seq: e.in.seqOfNext()}
	if e.check != nil {
		if err := e.check.Submitted(j.Job); err != nil {
			return fmt.Errorf("jss: job %d: %w", j.Number, err)
		}
	}
	e.needPass(ev.at)
	return e.pull()
}

func (e *engine) complete(ev event) error {
	a := e.jobs[ev.job]
	if a == nil || !a.on || a.end != ev.at {
		return nil // superseded by a kill
	}
	delete(e.jobs, ev.job)
	if err := e.core.Finished(ev.job, ev.at); err != nil {
		return fmt.Errorf("jss: job %d: %w", a.job.Number, err)
	}
	if e.check != nil {
		if err := e.check.Finished(ev.job); err != nil {
			return fmt.Errorf("jss: job %d: %w", a.job.Number, err)
		}
	}
	e.needPass(ev.at)
	r := Result{Job: a.job, Seq: a.seq, Start: a.start, End: a.end}
	if err := e.emit(r); err != nil {
		return fmt.Errorf("jss: %w", err)
	}
	return nil
}

func (e *engine) pass(at time.Duration) error {
	ds, err := e.core.Schedule(at)
	if err != nil {
		return fmt.Errorf("jss: %w", err)
	}
	for i := range ds {
		d := &ds[i]
		a := e.jobs[d.Job]
		if a == nil {
			return fmt.Errorf("jss: core decided %v for a job the simulator does not know", d)
		}
		if e.check != nil {
			if err := e.check.Apply(d, at); err != nil {
				return fmt.Errorf("jss: invariant violated for job %d: %w", a.job.Number, err)
			}
		}
		switch d.Kind {
		case gang.Start:
			a.on, a.start, a.end = true, at, at+a.job.Runtime
			e.heap.push(a.end, classCompletion, d.Job)
		case gang.Kill:
			// Only with Config.Scheduler.EnforceLimits: the job ends now.
			a.job.Runtime, a.job.Truncated = at-a.start, true
			a.end = at
			e.heap.push(at, classCompletion, d.Job)
		default:
			return fmt.Errorf("jss: decision %v is not supported in space sharing", d)
		}
	}
	if t, ok := e.core.NextWakeup(); ok {
		e.needPass(t)
	}
	return nil
}
