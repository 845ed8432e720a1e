package jss

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/atomicfile"
)

// Comparison is several policies run over one trace (cosched sim).
type Comparison struct {
	// Trace is every run's options; its SWFOut and JobsCSV are not used
	// (SWFPath, JobsCSVPath).
	Trace    TraceOptions
	Policies []gang.Policy
	Engines  Engines
	// Parallel is how many policies run at once (at least 1).
	Parallel int
	// SWFPath and JobsCSVPath, when set, receive each policy's schedule
	// (TraceOptions.SWFOut, JobsCSV); with several policies the policy's
	// name goes before the extension (WithPolicy).
	SWFPath, JobsCSVPath string
}

// Compare runs c's policies, each on the engine the registry names for it
// (SimulatePolicy), and relates pfcfs to fcfs (AddFCFSRatios). A policy's
// schedule files are written atomically: a failed or interrupted run
// leaves none behind. A trace that fails every policy (unreadable,
// corrupt, no machine size) or leaves no job to simulate is a
// *TraceError, said once and not as a policy's.
func Compare(ctx context.Context, c Comparison) ([]TraceResult, error) {
	results := make([]TraceResult, len(c.Policies))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(c.Parallel, 1))
	// With a core to spare (one policy on two cores, the usual `cosched
	// sim --policy easy`), each run overlaps its reading and summary with
	// its simulation; with every core busy that would only add work.
	c.Trace.Overlap = min(len(c.Policies), max(c.Parallel, 1)) < runtime.GOMAXPROCS(0)
	for i, p := range c.Policies {
		g.Go(func() error {
			res, err := c.simulate(gctx, p)
			if err != nil && len(c.Policies) > 1 {
				return fmt.Errorf("policy %s: %w", p, err)
			}
			results[i] = res
			return err
		})
	}
	if err := g.Wait(); err != nil {
		// A trace that fails every policy is the trace's error, said once.
		if _, terr := CheckTrace(ctx, c.Trace); terr != nil && ctx.Err() == nil {
			return nil, terr
		}
		return nil, err
	}
	if len(results) > 0 && results[0].Metrics.Jobs == 0 {
		return nil, noJobs(c.Trace.Input.Name, results[0].Jobs)
	}
	return results, AddFCFSRatios(ctx, c.Trace, results)
}

// simulate runs one policy, its schedule files written to temporary files
// renamed into place only on success.
func (c Comparison) simulate(ctx context.Context, p gang.Policy) (TraceResult, error) {
	opt := c.Trace
	opt.SWFOut, opt.JobsCSV = nil, nil // shared by every run: SWFPath and JobsCSVPath instead
	var outs atomicfile.Group
	defer outs.Abort()
	open := func(path string) (io.Writer, error) {
		if len(c.Policies) > 1 {
			path = WithPolicy(path, p)
		}
		f, err := outs.Create(path)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", path, err)
		}
		return f, nil
	}
	var err error
	if c.SWFPath != "" {
		if opt.SWFOut, err = open(c.SWFPath); err != nil {
			return TraceResult{}, err
		}
	}
	if c.JobsCSVPath != "" {
		if opt.JobsCSV, err = open(c.JobsCSVPath); err != nil {
			return TraceResult{}, err
		}
	}
	res, err := SimulatePolicy(ctx, opt, p, c.Engines)
	if err != nil {
		return res, err
	}
	return res, outs.Commit()
}

// WithPolicy inserts the policy's name before a path's extension:
// out.swf → out.easy.swf.
func WithPolicy(path string, p gang.Policy) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + string(p) + ext
}
