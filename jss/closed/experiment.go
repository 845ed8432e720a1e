package closed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/cosched/cosched/internal/fielderr"
)

// Experiment is a set of (policy, N) points, each run for the same number
// of independent replications.
type Experiment struct {
	Procs        int      `json:"procs"`
	Jobs         []int    `json:"jobs"`
	Policies     []Policy `json:"policies"`
	Service      Service  `json:"service"`
	IOMean       float64  `json:"io_mean"`
	Warmup       int      `json:"warmup"`
	Completions  int      `json:"completions"`
	Replications int      `json:"replications"`
	Seed         uint64   `json:"seed"`
	Ties         Ties     `json:"-"`
}

// Row is one (policy, N) point's estimates. Gains is set when the
// experiment includes FCFS (zero for FCFS itself).
type Row struct {
	Policy Policy `json:"policy"`
	Jobs   int    `json:"jobs"`
	Summary
	Gains *Gains `json:"gains,omitempty"`
}

// Validate reports every problem with the experiment at once, each an
// error keyed by its field (internal/fielderr): Procs, Jobs, Policies,
// Service.Dist, Service.Mean, Service.CV, IOMean, Warmup, Completions,
// Replications.
func (e *Experiment) Validate() error {
	var errs []error
	add := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
	}
	if e.Procs < 1 || e.Procs > MaxProcs {
		add("Procs", e.Procs, "must be from 1 to %d", MaxProcs)
	}
	if len(e.Jobs) == 0 {
		add("Jobs", nil, "no N given")
	}
	for _, n := range e.Jobs {
		if n < 1 || n > MaxJobs {
			add("Jobs", n, "must be from 1 to %d", MaxJobs)
		}
	}
	if len(e.Policies) == 0 {
		add("Policies", nil, "none given")
	}
	for _, p := range e.Policies {
		if !slices.Contains(Policies(), p) {
			add("Policies", strconv.Quote(string(p)), "unknown (valid: %s)", PolicyNames())
		}
	}
	errs = append(errs, e.Service.fieldErrors()...)
	if !(e.IOMean > 0) || math.IsInf(e.IOMean, 1) {
		add("IOMean", e.IOMean, "must be positive and finite")
	}
	if e.Warmup < 0 || e.Warmup > MaxCompletions {
		add("Warmup", e.Warmup, "must be from 0 to %d", MaxCompletions)
	}
	if e.Completions < 1 || e.Completions > MaxCompletions {
		add("Completions", e.Completions, "must be from 1 to %d", MaxCompletions)
	}
	if e.Replications < 2 || e.Replications > MaxReplications {
		add("Replications", e.Replications, "must be from 2 to %d (a confidence interval needs at least 2)", MaxReplications)
	}
	return errors.Join(errs...)
}

func (e *Experiment) config(p Policy, n, rep int) Config {
	return Config{
		Procs: e.Procs, Jobs: n, Policy: p,
		Service: e.Service, IOMean: e.IOMean,
		Warmup: e.Warmup, Completions: e.Completions,
		Seed: ReplicationSeed(e.Seed, rep), Ties: e.Ties,
	}
}

// Run simulates every replication of every point, at most parallel at
// once, and returns one row per (policy, N), policies outermost, each list
// in its given order. Results depend only on the experiment, never on
// parallel.
func (e *Experiment) Run(ctx context.Context, parallel int) ([]Row, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	type point struct {
		p Policy
		n int
	}
	var points []point
	for _, p := range e.Policies {
		for _, n := range e.Jobs {
			points = append(points, point{p, n})
		}
	}
	results := make([][]Result, len(points))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	for i, pt := range points {
		results[i] = make([]Result, e.Replications)
		for r := range e.Replications {
			g.Go(func() error {
				res, err := Run(gctx, e.config(pt.p, pt.n, r))
				if err != nil {
					return fmt.Errorf("policy %s, N=%d, replication %d: %w", pt.p, pt.n, r+1, err)
				}
				results[i][r] = res
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rows := make([]Row, len(points))
	for i, pt := range points {
		s, err := Summarize(results[i])
		if err != nil {
			return nil, err
		}
		rows[i] = Row{Policy: pt.p, Jobs: pt.n, Summary: s}
	}
	if slices.Contains(e.Policies, FCFS) {
		fcfs := map[int]Summary{}
		for _, r := range rows {
			if r.Policy == FCFS {
				fcfs[r.Jobs] = r.Summary
			}
		}
		for i := range rows {
			g := GainsOver(fcfs[rows[i].Jobs], rows[i].Summary)
			rows[i].Gains = &g
		}
	}
	return rows, nil
}
