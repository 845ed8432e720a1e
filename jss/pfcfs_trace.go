package jss

import (
	"context"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/pfcfs"
	"github.com/cosched/cosched/jss/metrics"
)

// PFCFSSummary describes a pfcfs run over a trace: its parameters, what
// preemption did, and (once Compare is called) its flow-time metrics
// relative to plain FCFS on the same jobs.
type PFCFSSummary struct {
	WidePercent float64 `json:"wide_percent"`
	WideFrom    int     `json:"wide_from_processors"` // the smallest wide job
	Delay       float64 `json:"delay_s"`
	Switch      float64 `json:"switch_s"`
	Switches    int     `json:"switches"`
	Penalty     float64 `json:"penalty_s"`

	WideJobs    int64 `json:"wide_jobs"`
	Preempting  int64 `json:"preempting_wide_jobs"` // wide jobs that started by preempting
	Preemptions int64 `json:"preemptions"`          // every Preempt decision, switches included

	// VsFCFS holds this run's metrics divided by plain FCFS's.
	VsFCFS *Relative `json:"relative_to_fcfs,omitempty"`
}

// Relative holds ratios of a run's metrics to a baseline's (1 = equal,
// below 1 = better than the baseline).
type Relative struct {
	Makespan     float64 `json:"makespan"`
	SumFlow      float64 `json:"sum_flow"`
	WeightedFlow float64 `json:"weighted_flow"`
}

// RelativeTo returns m's makespan, sum of flow times and weighted flow time
// divided by base's. A zero baseline gives a ratio of 1 when both are zero,
// else +Inf.
func RelativeTo(m, base metrics.Summary) Relative {
	ratio := func(a, b float64) float64 {
		if b == 0 {
			if a == 0 {
				return 1
			}
			return a / b // +Inf
		}
		return a / b
	}
	return Relative{
		Makespan:     ratio(m.Makespan, base.Makespan),
		SumFlow:      ratio(m.SumFlow, base.SumFlow),
		WeightedFlow: ratio(m.WeightedFlow, base.WeightedFlow),
	}
}

// SimulateTracePFCFS runs pfcfs over a trace. cfg.Scheduler.Processors is
// ignored: the machine is the trace's (or opt.Processors). The result's
// Policy is "pfcfs" and its PFCFS field holds the summary; VsFCFS is left
// for the caller, who runs FCFS on the same input (see RelativeTo).
func SimulateTracePFCFS(ctx context.Context, opt TraceOptions, cfg PFCFSConfig) (TraceResult, error) {
	var st PFCFSStats
	opt.Engine = func(ctx context.Context, procs int, src Source, emit func(Result) error) (Stats, error) {
		c := cfg
		c.Scheduler.Processors = procs
		c.Check = opt.Check
		cfg = c
		var err error
		st, err = RunPFCFS(ctx, c, src, emit)
		return st.Stats, err
	}
	res, err := SimulateTrace(ctx, opt, gang.Policy(pfcfs.Name))
	if err != nil {
		return res, err
	}
	sc := cfg.Scheduler
	res.PFCFS = &PFCFSSummary{
		WidePercent: sc.WidePercent,
		WideFrom:    sc.WideFrom(),
		Delay:       sc.Delay.Seconds(),
		Switch:      sc.Switch.Seconds(),
		Switches:    sc.Switches,
		Penalty:     cfg.Penalty.Seconds(),
		WideJobs:    st.WideJobs,
		Preempting:  st.Preempting,
		Preemptions: st.Preemptions,
	}
	return res, nil
}
