package jss

import (
	"context"
	"fmt"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/hosts"
)

// Engines are the settings of the engines beyond the matrix that
// SimulatePolicy may run a policy on.
type Engines struct {
	PFCFS PFCFSConfig // pfcfs
	// Hosts is the machine of hosts of different sizes (a machine file);
	// nil runs the hosts engine on one host of the trace's machine size
	// with unlimited memory.
	Hosts []hosts.Host
	// OnHosts runs the priority-backfill policies on the hosts engine
	// too (a machine file or immediate service is given); IS, when set, is
	// their immediate service.
	OnHosts bool
	IS      *ImmediateService
	EQ      EQSpatial // eqspatial
}

// SimulatePolicy runs policy p over the trace on the engine the registry
// names for it: pfcfs, the hosts engine (eqspatial, and the
// priority-backfill policies when e.OnHosts), or the matrix.
func SimulatePolicy(ctx context.Context, opt TraceOptions, p gang.Policy, e Engines) (TraceResult, error) {
	info, err := LookupPolicy(string(p))
	if err != nil {
		return TraceResult{}, err
	}
	switch {
	case info.Engine == EnginePFCFS:
		return SimulateTracePFCFS(ctx, opt, e.PFCFS)
	case info.Engine == EngineHosts || (e.OnHosts && gang.IsPriorityBackfill(p)):
		return simulateOnHosts(ctx, opt, p, e)
	}
	return SimulateTrace(ctx, opt, p)
}

// simulateOnHosts runs a priority-backfill policy or eqspatial on e's
// hosts, or on a single host of the trace's machine size.
func simulateOnHosts(ctx context.Context, opt TraceOptions, p gang.Policy, e Engines) (TraceResult, error) {
	machine := e.Hosts
	if machine == nil {
		rd, closer, err := opt.Input.Open(ctx)
		if err != nil {
			return TraceResult{}, err
		}
		procs, _, err := MachineSize(opt.Processors, rd.Header())
		closer.Close()
		if err != nil {
			return TraceResult{}, fmt.Errorf("%s: %w", opt.Input.Name, err)
		}
		machine = []hosts.Host{{Name: "machine", Processors: procs}}
	}
	cfg := HostsConfig{Scheduler: hosts.Config{Hosts: machine, Policy: p, Backfill: opt.Backfill}}
	if p == PolicyEQSpatial {
		cfg.Scheduler.Policy = gang.FCFSBF // unused by eqspatial
		eq := e.EQ
		cfg.EQ = &eq
	} else if e.IS != nil {
		is := *e.IS
		cfg.IS = &is
	}
	return SimulateTraceHosts(ctx, opt, cfg)
}

// AddFCFSRatios fills in each pfcfs result's metrics relative to plain
// FCFS on the same input: the fcfs result among results, else a run of
// fcfs with opt made for the purpose (opt's schedule writers are not
// used).
func AddFCFSRatios(ctx context.Context, opt TraceOptions, results []TraceResult) error {
	var base *TraceResult
	need := false
	for i := range results {
		switch {
		case results[i].Policy == gang.FCFS:
			base = &results[i]
		case results[i].PFCFS != nil:
			need = true
		}
	}
	if !need {
		return nil
	}
	if base == nil {
		opt.SWFOut, opt.JobsCSV, opt.Backfill, opt.ByRuntimeBin, opt.Engine = nil, nil, gang.Backfill{}, false, nil
		res, err := SimulateTrace(ctx, opt, gang.FCFS)
		if err != nil {
			return fmt.Errorf("fcfs baseline for pfcfs: %w", err)
		}
		base = &res
	}
	for i := range results {
		if p := results[i].PFCFS; p != nil {
			rel := RelativeTo(results[i].Metrics, base.Metrics)
			p.VsFCFS = &rel
		}
	}
	return nil
}
