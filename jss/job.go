package jss

import (
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/swf"
)

// Job is one job of a workload, as a Source delivers it.
type Job struct {
	// Job is what the scheduler core sees. The simulator replaces its ID
	// with the arrival sequence number, so workloads with repeated job
	// numbers still simulate; Number keeps the workload's own.
	gang.Job
	// Number is the job's number in its workload (SWF field 1).
	Number int64
	// Runtime is how long the job really runs once started.
	Runtime time.Duration
	// Truncated reports that the source cut Runtime to the estimate (the
	// overrun "kill" convention): the job is counted as killed at its limit.
	Truncated bool
	// Record is the SWF line the job came from, or nil.
	Record *swf.Record
	// Compute is a benchmark job's useful computation, summed over its
	// processes (execution models only; see ModelSource).
	Compute time.Duration

	program *Program // execution models: the job's behaviour
}

// Result is a job's simulated outcome.
type Result struct {
	Job
	// Seq is the job's arrival order in the run, from 0.
	Seq        int64
	Start, End time.Duration
}

// MetricsJob is what the metrics collector reads of a result.
func (r *Result) MetricsJob() metrics.Job {
	return metrics.Job{Submit: r.Submit, Start: r.Start, End: r.End, Processors: r.Processors, Runtime: r.Runtime}
}

// Wait returns the time from submission to start.
func (r *Result) Wait() time.Duration { return r.Start - r.Submit }

// Source delivers a workload's jobs in non-decreasing submit order.
type Source interface {
	// Next returns the next job, or io.EOF after the last.
	Next() (Job, error)
}
