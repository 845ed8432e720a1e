package jss

import (
	"context"
	"fmt"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/sharing"
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
	o := coreOptions{penalty: cfg.Penalty, wide: cfg.Scheduler.Wide}
	if cfg.Check {
		o.check = newColumnCheck(cfg.Scheduler.Processors)
	}
	return runCore(ctx, core, o, src, byValue(emit))
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

func (c *columnCheck) apply(d *gang.Decision, j *Job, at time.Duration) error {
	if err := c.applyDecision(d, j.Processors); err != nil {
		return fmt.Errorf("jss: invariant violated for job %d at %v: %w", j.Number, at, err)
	}
	return nil
}

func (c *columnCheck) submitted(*Job) error { return nil }

func (c *columnCheck) applyDecision(d *gang.Decision, procs int) error {
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
func (c *columnCheck) passDone(at time.Duration) error {
	for col, n := range c.held {
		if n > 1 {
			return fmt.Errorf("jss: invariant violated at %v: column %d holds %d preempted jobs", at, col, n)
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

func (c *columnCheck) finished(j *Job) error {
	id := j.ID
	if _, ok := c.cols[id]; !ok || c.suspended[id] {
		return fmt.Errorf("jss: job %d: ended while not running", j.Number)
	}
	c.setRunning(id, false)
	delete(c.cols, id)
	return nil
}

func (c *ModelConfig) isPFCFS() bool { return c.Scheduler.Policy == PolicyPFCFS }

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
	if c.Mode != sharing.Space {
		errs = append(errs, fmt.Errorf("policy pfcfs is space sharing: it runs in mode space, not %s", c.Mode))
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

// runPFCFS runs benchmark jobs (space sharing, BF) under pfcfs. SlotTime counts the
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
