package jss

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/verify"
	"github.com/cosched/cosched/internal/freelist"
	"github.com/cosched/cosched/internal/idtable"
	"github.com/cosched/cosched/jss/metrics"
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

// active is a job the engine knows: queued, running or preempted. Its
// Result is filled in as the job goes (Start: its first start; End, while
// running: when it will end) and emitted in place when it ends: a Result
// is about 170 bytes, and building one per job and passing it by value
// through the sinks was a twentieth of a run.
type active struct {
	Result
	left  time.Duration // while preempted: what it has left to run
	on    bool          // running
	since time.Duration // while running: when it last started or resumed
}

// Run simulates the workload from src under cfg and calls emit with each
// job's result when it ends (in completion order; see Ordered for submit
// order). Arrivals are pulled from src one at a time, so memory grows with
// the jobs in the system, not with the workload. Run stops early, with the
// context's error, when ctx is cancelled.
func Run(ctx context.Context, cfg Config, src Source, emit func(Result) error) (Stats, error) {
	return runRef(ctx, cfg, src, byValue(emit))
}

// runRef is Run with an emit that takes the result by reference, valid
// only during the call (SimulateTrace's, which copies what it keeps).
func runRef(ctx context.Context, cfg Config, src Source, emit func(*Result) error) (Stats, error) {
	core, err := gang.New(cfg.Scheduler)
	if err != nil {
		return Stats{}, fmt.Errorf("jss: %w", err)
	}
	core.ReuseColumns() // the engine keeps no decision's columns (the check copies them)
	var check decisionCheck
	if cfg.Check {
		check = matrixCheck{verify.New(cfg.Scheduler.Machine, cfg.Scheduler.MPL)}
	}
	st, err := runCore(ctx, core, coreOptions{check: check}, src, emit)
	return st.Stats, err
}

// byValue adapts an emit taking a Result to the engine's, which lends one.
func byValue(emit func(Result) error) func(*Result) error {
	return func(r *Result) error { return emit(*r) }
}

// coreOptions are what the event loop needs beyond the core.
type coreOptions struct {
	check decisionCheck // nil: none
	// penalty is added to a job's remaining runtime at each preemption.
	penalty time.Duration
	// wide, if set, says which jobs count as wide (PFCFSStats.WideJobs).
	wide func(processors int) bool
}

// decisionCheck is an independent record of the machine that checks every
// decision (Config.Check, PFCFSConfig.Check). Its errors are final: they
// name the job and the instant.
type decisionCheck interface {
	submitted(j *Job) error
	apply(d *gang.Decision, j *Job, at time.Duration) error
	passDone(at time.Duration) error
	finished(j *Job) error
}

// runCore is the simulator's one event loop over a scheduler core: it
// feeds the core arrivals and completions, runs a pass at every instant
// that needs one (and at the core's wakeups), and carries out the
// decisions: Start, Kill (a time limit), Preempt and Resume (a preempted
// job keeps its remaining runtime, plus the penalty, and resumes later).
// emit's Result is the engine's, valid only during the call.
func runCore(ctx context.Context, core gang.Core, o coreOptions, src Source, emit func(*Result) error) (PFCFSStats, error) {
	e := engine{core: core, opts: o, loop: newLoop(src), emit: emit}
	err := e.loop.run(ctx, &e.stats.Stats, steps{complete: e.complete, arrive: e.arrive, pass: e.pass,
		left: e.jobs.Len})
	return e.stats, err
}

type engine struct {
	loop
	core  gang.Core
	opts  coreOptions
	emit  func(*Result) error               // lent: valid only during the call
	jobs  idtable.Table[gang.JobID, active] // queued, running and preempted (IDs are the arrival order: no hashing)
	spare freelist.List[active]             // finished jobs' records, reused: no allocation per job once warm
	stats PFCFSStats
}

func (e *engine) arrive(ev event) error {
	j := &e.in.next
	if err := e.core.Submit(j.Job, ev.at); err != nil {
		return fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	e.stats.Jobs++
	if e.opts.wide != nil && e.opts.wide(j.Processors) {
		e.stats.WideJobs++
	}
	// A finished job's record, if any, cleared in place, then two fields:
	// a whole active literal Go builds aside and copies in, twice the
	// writes.
	a := e.spare.Get()
	*a = active{}
	a.Job, a.Seq = *j, e.in.seqOfNext()
	e.jobs.Put(j.ID, a)
	if e.opts.check != nil {
		if err := e.opts.check.submitted(j); err != nil {
			return err
		}
	}
	e.needPass(ev.at)
	return e.pull()
}

func (e *engine) complete(ev event) error {
	a := e.jobs.Get(ev.job)
	if a == nil || !a.on || a.End != ev.at {
		return nil // superseded by a kill or a preemption
	}
	e.jobs.Delete(ev.job)
	e.stats.Busy += float64(a.Job.Processors) * metrics.Seconds(ev.at-a.since)
	if err := e.core.Finished(ev.job, ev.at); err != nil {
		return fmt.Errorf("jss: job %d: %w", a.Job.Number, err)
	}
	if e.opts.check != nil {
		if err := e.opts.check.finished(&a.Job); err != nil {
			return err
		}
	}
	e.needPass(ev.at)
	err := e.emit(&a.Result)
	e.spare.Put(a)
	if err != nil {
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
		a := e.jobs.Get(d.Job)
		if a == nil {
			return fmt.Errorf("jss: core decided %v for a job the simulator does not know", d)
		}
		if e.opts.check != nil {
			if err := e.opts.check.apply(d, &a.Job, at); err != nil {
				return err
			}
		}
		switch d.Kind {
		case gang.Start:
			a.on, a.Start, a.End, a.since = true, at, at+a.Job.Runtime, at
			if d.Why.Rule == gang.RuleWidePreempts {
				e.stats.Preempting++
			}
		case gang.Kill:
			// Only with gang.Config.EnforceLimits: the job ends now.
			a.Job.Runtime, a.Job.Truncated = at-a.Start, true
			a.End = at
		case gang.Preempt:
			a.on, a.left = false, a.End-at+e.opts.penalty
			e.stats.Preemptions++
			e.stats.Busy += float64(a.Job.Processors) * metrics.Seconds(at-a.since)
			continue
		case gang.Resume:
			a.on, a.End, a.since = true, at+a.left, at
		default:
			return fmt.Errorf("jss: decision %v is not supported by the event engine (the slice-stepped one runs the time-shared modes)", d)
		}
		e.heap.push(a.End, classCompletion, d.Job)
	}
	if e.opts.check != nil {
		if err := e.opts.check.passDone(at); err != nil {
			return err
		}
	}
	if t, ok := e.core.NextWakeup(); ok {
		e.needPass(t)
	}
	return nil
}

// matrixCheck checks the matrix core's decisions with gang/verify.
type matrixCheck struct{ c *verify.Checker }

func (m matrixCheck) submitted(j *Job) error {
	if err := m.c.Submitted(j.Job); err != nil {
		return fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	return nil
}

func (m matrixCheck) apply(d *gang.Decision, j *Job, at time.Duration) error {
	if err := m.c.Apply(d, at); err != nil {
		return fmt.Errorf("jss: invariant violated for job %d: %w", j.Number, err)
	}
	return nil
}

func (m matrixCheck) passDone(time.Duration) error { return nil }

func (m matrixCheck) finished(j *Job) error {
	if err := m.c.Finished(j.ID); err != nil {
		return fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	return nil
}
