package jss

import (
	"context"
	"fmt"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/pfcfs"
)

// PFCFSConfig configures RunPFCFS.
type PFCFSConfig struct {
	// Scheduler configures the preemptive FCFS core.
	Scheduler pfcfs.Config
	// Penalty is added to a job's remaining runtime each time it is
	// preempted (the cost of stopping and later resuming it).
	Penalty time.Duration
	// Check verifies every decision against an independent record of the
	// machine: a started job gets its processors' worth of distinct columns
	// no running job uses; only running jobs are preempted and only
	// preempted ones resumed, on columns no running job uses; after each
	// pass no column holds two preempted jobs; a job ends only while
	// running.
	Check bool
}

// PFCFSStats describes a finished preemptive FCFS run.
type PFCFSStats struct {
	Stats
	WideJobs    int64 // jobs at least the wide threshold
	Preempting  int64 // wide jobs that started by preempting
	Preemptions int64 // Preempt decisions, each charged the penalty
	// Busy is the processor time jobs spent running (not preempted),
	// penalties included, in processor-seconds.
	Busy float64
}

type pfJob struct {
	job   Job
	seq   int64
	start time.Duration
	end   time.Duration // while running: when it will end
	left  time.Duration // while preempted: what it has left to run
	on    bool          // running
	since time.Duration // while running: when it last started or resumed
}

// RunPFCFS simulates the workload from src under preemptive FCFS with gang
// scheduling for wide jobs (package gang/pfcfs) and calls emit with each
// job's result when it ends. A job's Start is its first start; a preempted
// job keeps its remaining runtime, plus cfg.Penalty per preemption, and
// resumes on the same columns. Results are in completion order.
func RunPFCFS(ctx context.Context, cfg PFCFSConfig, src Source, emit func(Result) error) (PFCFSStats, error) {
	if cfg.Penalty < 0 {
		return PFCFSStats{}, fmt.Errorf("jss: pfcfs: penalty must not be negative, got %v", cfg.Penalty)
	}
	core, err := pfcfs.New(cfg.Scheduler)
	if err != nil {
		return PFCFSStats{}, fmt.Errorf("jss: %w", err)
	}
	e := pfEngine{cfg: cfg, core: core, loop: newLoop(src), emit: emit, jobs: map[gang.JobID]*pfJob{}}
	if cfg.Check {
		e.check = newColumnCheck(cfg.Scheduler.Processors)
	}
	err = e.run(ctx)
	return e.stats, err
}

type pfEngine struct {
	loop
	cfg   PFCFSConfig
	core  *pfcfs.Scheduler
	emit  func(Result) error
	check *columnCheck
	jobs  map[gang.JobID]*pfJob
	stats PFCFSStats
}

func (e *pfEngine) run(ctx context.Context) error {
	err := e.loop.run(ctx, &e.stats.Stats, steps{complete: e.complete, arrive: e.arrive, pass: e.pass,
		left: func() int { return len(e.jobs) }})
	return err
}

func (e *pfEngine) arrive(ev event) error {
	j := &e.in.next
	if err := e.core.Submit(j.Job, ev.at); err != nil {
		return fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	e.stats.Jobs++
	if e.cfg.Scheduler.Wide(j.Processors) {
		e.stats.WideJobs++
	}
	e.jobs[j.ID] = &pfJob{job: *j, seq: e.in.seqOfNext()}
	e.needPass(ev.at)
	return e.pull()
}

func (e *pfEngine) complete(ev event) error {
	a := e.jobs[ev.job]
	if a == nil || !a.on || a.end != ev.at {
		return nil // superseded by a preemption
	}
	delete(e.jobs, ev.job)
	e.stats.Busy += float64(a.job.Processors) * (ev.at - a.since).Seconds()
	if err := e.core.Finished(ev.job, ev.at); err != nil {
		return fmt.Errorf("jss: job %d: %w", a.job.Number, err)
	}
	if e.check != nil {
		if err := e.check.finished(ev.job); err != nil {
			return fmt.Errorf("jss: job %d: %w", a.job.Number, err)
		}
	}
	e.needPass(ev.at)
	if err := e.emit(Result{Job: a.job, Seq: a.seq, Start: a.start, End: ev.at}); err != nil {
		return fmt.Errorf("jss: %w", err)
	}
	return nil
}

func (e *pfEngine) pass(at time.Duration) error {
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
			if err := e.check.apply(d, a.job.Processors); err != nil {
				return fmt.Errorf("jss: invariant violated for job %d at %v: %w", a.job.Number, at, err)
			}
		}
		switch d.Kind {
		case gang.Start:
			a.on, a.start, a.end, a.since = true, at, at+a.job.Runtime, at
			if d.Why.Rule == gang.RuleWidePreempts {
				e.stats.Preempting++
			}
		case gang.Preempt:
			a.on, a.left = false, a.end-at+e.cfg.Penalty
			e.stats.Preemptions++
			e.stats.Busy += float64(a.job.Processors) * (at - a.since).Seconds()
			continue
		case gang.Resume:
			a.on, a.end, a.since = true, at+a.left, at
		default:
			return fmt.Errorf("jss: decision %v is not supported under pfcfs", d)
		}
		e.heap.push(a.end, classCompletion, d.Job)
	}
	if e.check != nil {
		if err := e.check.passDone(); err != nil {
			return fmt.Errorf("jss: invariant violated at %v: %w", at, err)
		}
	}
	if t, ok := e.core.NextWakeup(); ok {
		e.needPass(t)
	}
	return nil
}

// columnCheck is an independent record of who uses each column. Decision
// by decision: at most one running job per column. After each pass: at
// most one preempted job per column (within a pass's batch, a side is
// preempted before the other resumes, so a column briefly holds both).
type columnCheck struct {
	run       []gang.JobID // column → running job (0: none)
	held      []int        // column → preempted jobs holding it
	cols      map[gang.JobID][]int
	suspended map[gang.JobID]bool
}

func newColumnCheck(processors int) *columnCheck {
	return &columnCheck{run: make([]gang.JobID, processors), held: make([]int, processors),
		cols: map[gang.JobID][]int{}, suspended: map[gang.JobID]bool{}}
}

func (c *columnCheck) apply(d *gang.Decision, procs int) error {
	switch d.Kind {
	case gang.Start:
		if _, ok := c.cols[d.Job]; ok {
			return fmt.Errorf("started twice")
		}
		if len(d.Columns) != procs {
			return fmt.Errorf("needs %d processors, got %d columns", procs, len(d.Columns))
		}
		seen := map[int]bool{}
		for _, col := range d.Columns {
			if col < 0 || col >= len(c.run) || seen[col] {
				return fmt.Errorf("column %d is outside the machine or given twice", col)
			}
			seen[col] = true
			if c.run[col] != 0 {
				return fmt.Errorf("column %d is in use by running job %d", col, c.run[col])
			}
		}
		c.cols[d.Job] = d.Columns
		c.setRunning(d.Job, true)
	case gang.Preempt:
		if _, ok := c.cols[d.Job]; !ok || c.suspended[d.Job] {
			return fmt.Errorf("preempted while not running")
		}
		c.suspended[d.Job] = true
		c.setRunning(d.Job, false)
		for _, col := range c.cols[d.Job] {
			c.held[col]++
		}
	case gang.Resume:
		if !c.suspended[d.Job] {
			return fmt.Errorf("resumed while not preempted")
		}
		for _, col := range c.cols[d.Job] {
			if c.run[col] != 0 {
				return fmt.Errorf("resumed on column %d, in use by running job %d", col, c.run[col])
			}
		}
		delete(c.suspended, d.Job)
		for _, col := range c.cols[d.Job] {
			c.held[col]--
		}
		c.setRunning(d.Job, true)
	default:
		return fmt.Errorf("unexpected decision %v", d)
	}
	return nil
}

// passDone checks the state a pass left.
func (c *columnCheck) passDone() error {
	for col, n := range c.held {
		if n > 1 {
			return fmt.Errorf("column %d holds %d preempted jobs", col, n)
		}
	}
	return nil
}

func (c *columnCheck) setRunning(id gang.JobID, on bool) {
	for _, col := range c.cols[id] {
		if on {
			c.run[col] = id
		} else {
			c.run[col] = 0
		}
	}
}

func (c *columnCheck) finished(id gang.JobID) error {
	if _, ok := c.cols[id]; !ok || c.suspended[id] {
		return fmt.Errorf("ended while not running")
	}
	c.setRunning(id, false)
	delete(c.cols, id)
	return nil
}

func (c *ModelConfig) isPFCFS() bool { return c.Scheduler.Policy == gang.Policy(pfcfs.Name) }

// pfcfsConfig is the pfcfs configuration of a model run: PFCFS on the
// scheduler's machine.
func (c *ModelConfig) pfcfsConfig() PFCFSConfig {
	p := c.PFCFS
	p.Scheduler.Processors = c.Scheduler.Machine.Processors
	p.Check = c.Check
	return p
}

func (c *ModelConfig) validatePFCFS() []error {
	var errs []error
	if c.Mode != BF {
		errs = append(errs, fmt.Errorf("policy pfcfs is space sharing: it runs in mode bf, not %s", c.Mode))
	}
	p := c.pfcfsConfig()
	if err := p.Scheduler.Validate(); err != nil {
		errs = append(errs, err)
	}
	if p.Penalty < 0 {
		errs = append(errs, fmt.Errorf("pfcfs: penalty must not be negative, got %v", p.Penalty))
	}
	return errs
}

// runPFCFS runs benchmark jobs (BF) under pfcfs. SlotTime counts the
// processors jobs run on, not those a preempted job holds; Switches
// counts preemptions.
func (c *ModelConfig) runPFCFS(ctx context.Context, src Source, emit func(Result) error) (ModelStats, error) {
	var compute time.Duration
	st, err := RunPFCFS(ctx, c.pfcfsConfig(), src, func(r Result) error {
		compute += r.Compute
		return emit(r)
	})
	ms := ModelStats{Jobs: st.Jobs, Passes: st.Passes, Steps: st.Events, Compute: compute, End: st.End,
		Switches: st.Preemptions, SlotTime: st.Busy / float64(c.Scheduler.Machine.Processors)}
	return ms, err
}
