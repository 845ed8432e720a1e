package jss

import (
	"context"
	"fmt"
)

// HostsSummary describes a run on hosts of different sizes: the machine,
// the jobs no host could hold, and what immediate service or EQspatial
// did.
type HostsSummary struct {
	Hosts []HostInfo `json:"hosts"`
	// Unfit counts the jobs dropped because no host has both their
	// processors and their memory (also in Jobs.Dropped.NoHost; jobs
	// wider than all the hosts together are in Jobs.Dropped.TooWide as
	// usual).
	Unfit int64 `json:"unfit_jobs"`
	// IS is set when immediate service was on.
	IS *ISSummary `json:"immediate_service,omitempty"`
	// EQ is set for eqspatial.
	EQ *EQSummary `json:"eqspatial,omitempty"`
}

// HostInfo is one host of the machine.
type HostInfo struct {
	Name       string `json:"name"`
	Processors int    `json:"processors"`
	Memory     int64  `json:"memory_bytes"` // 0: unlimited
}

// ISSummary describes immediate service in a run.
type ISSummary struct {
	Quantum     float64 `json:"quantum_s"`
	Memory      int64   `json:"memory_bytes"`
	MinRun      float64 `json:"min_run_s"`
	Quanta      int64   `json:"quanta"`
	Done        int64   `json:"done_in_quantum"`
	Killed      int64   `json:"killed_and_queued"`
	Preemptions int64   `json:"preemptions"`
	Lost        float64 `json:"lost_processor_s"`
}

// EQSummary describes an EQspatial run.
type EQSummary struct {
	Interval       float64 `json:"interval_s"`
	FullAfter      float64 `json:"full_after_s,omitempty"` // 0: off
	Repartitions   int64   `json:"repartitions"`
	MaxConcurrency int     `json:"max_jobs_on_a_host"`
}

// SimulateTraceHosts runs a trace on cfg's hosts: the priority-backfill
// policy cfg.Scheduler.Policy (with immediate service if cfg.IS is set),
// or EQspatial if cfg.EQ is set. The machine size for the metrics is the
// hosts' processors in all; opt.Processors is ignored. The result's policy
// is cfg.Scheduler.Policy, or "eqspatial".
func SimulateTraceHosts(ctx context.Context, opt TraceOptions, cfg HostsConfig) (TraceResult, error) {
	if len(cfg.Scheduler.Hosts) == 0 {
		return TraceResult{}, fmt.Errorf("jss: no hosts")
	}
	total := 0
	for _, h := range cfg.Scheduler.Hosts {
		total += h.Processors
	}
	opt.Processors = total
	var st HostsStats
	opt.Engine = func(ctx context.Context, _ int, src Source, emit func(Result) error) (Stats, error) {
		c := cfg
		c.Check = opt.Check
		var err error
		st, err = RunHosts(ctx, c, src, emit)
		return st.Stats, err
	}
	policy := cfg.Scheduler.Policy
	if cfg.EQ != nil {
		policy = PolicyEQSpatial
	}
	res, err := SimulateTrace(ctx, opt, policy)
	if err != nil {
		return res, err
	}
	res.Jobs.Dropped.NoHost = st.Unfit
	res.Jobs.Delivered -= st.Unfit
	res.ProcessorsFrom = "the hosts"
	sum := &HostsSummary{Unfit: st.Unfit}
	for _, h := range cfg.Scheduler.Hosts {
		sum.Hosts = append(sum.Hosts, HostInfo{Name: h.Name, Processors: h.Processors, Memory: h.Memory})
	}
	if is := cfg.IS; is != nil && cfg.EQ == nil {
		sum.IS = &ISSummary{Quantum: is.Quantum.Seconds(), Memory: is.Memory, MinRun: is.MinRun.Seconds(),
			Quanta: st.ISStarts, Done: st.ISDone, Killed: st.ISKilled, Preemptions: st.Preemptions, Lost: st.ISLost}
	}
	if eq := cfg.EQ; eq != nil {
		sum.EQ = &EQSummary{Interval: eq.Interval.Seconds(), FullAfter: eq.FullAfter.Seconds(), Repartitions: st.Repartitions, MaxConcurrency: st.MaxOnHost}
	}
	res.Hosts = sum
	return res, nil
}
