// Package nowsim simulates the online policies of package gang/now on a
// network of workstations with nodes of different speeds: an event loop in
// virtual time, a workload generator after Arndt et al. (shares of
// sequential and large parallel jobs, a creation span, uniform processing
// times) and SWF traces as an alternative input. Results are makespan, mean
// flow time and maximum wait, with jss/metrics' definitions.
package nowsim

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"github.com/cosched/cosched/internal/ctxslices"
	"math/rand/v2"
	"time"

	"github.com/cosched/cosched/gang/now"
	"github.com/cosched/cosched/jss/metrics"
)

// Job is one job of a workload.
type Job struct {
	ID     int64
	Submit time.Duration
	Tasks  int
	// Work is the true processing time: one task's time on a node of speed 1.
	Work time.Duration
	// Balanced: the job spreads its work over its nodes by speed.
	Balanced bool
	// Program names the program the job runs ("" unknown); learned
	// estimates are kept per program.
	Program string
}

// Config configures one run.
type Config struct {
	Speeds   []float64
	Policy   now.Policy
	Estimate now.EstimateSpec
	// Prior is the learned estimator's prior when Estimate has none.
	Prior time.Duration
	// Seed seeds the random policy and fuzzy estimates (separate streams),
	// so every policy of one seed sees the same fuzzy estimates.
	Seed uint64
}

// Record is one finished job.
type Record struct {
	Job
	Estimate   time.Duration
	Start, End time.Duration
	Nodes      []int
	Speed      float64
}

// Result summarises a run. Times are in seconds.
type Result struct {
	Policy   now.Policy `json:"policy"`
	Estimate string     `json:"estimate"`
	Seed     uint64     `json:"seed"`
	Jobs     int        `json:"jobs"`
	Makespan float64    `json:"makespan_s"`
	MeanFlow float64    `json:"mean_flow_s"`
	MaxWait  float64    `json:"max_wait_s"`
	MeanWait float64    `json:"mean_wait_s"`
}

// Random streams: one per use, so adding draws to one leaves the others.
const (
	streamPolicy   = 0x6e6f772d706f6c // "now-pol"
	streamEstimate = 0x6e6f772d657374 // "now-est"
	streamGenerate = 0x6e6f772d67656e // "now-gen"
)

// Run simulates jobs under cfg and calls emit (if not nil) with each job
// when it ends, in completion order (ties: job ID). Jobs may come in any
// order; they are submitted in (Submit, ID) order. At one instant, jobs end,
// then jobs arrive, then the policy runs once.
func Run(ctx context.Context, cfg Config, jobs []Job, emit func(Record) error) (Result, error) {
	core, err := now.New(now.Config{Speeds: cfg.Speeds, Policy: cfg.Policy, Rand: rand.New(rand.NewPCG(cfg.Seed, streamPolicy))})
	if err != nil {
		return Result{}, fmt.Errorf("nowsim: %w", err)
	}
	est, err := cfg.Estimate.New(rand.New(rand.NewPCG(cfg.Seed, streamEstimate)), cfg.Prior)
	if err != nil {
		return Result{}, fmt.Errorf("nowsim: %w", err)
	}
	order := make([]*Job, len(jobs))
	byID := make(map[int64]*Job, len(jobs))
	for i := range jobs {
		if i&0xffff == 0 && ctx.Err() != nil {
			return Result{}, fmt.Errorf("nowsim: run stopped: %w", context.Cause(ctx))
		}
		j := &jobs[i]
		if _, dup := byID[j.ID]; dup {
			return Result{}, fmt.Errorf("nowsim: job %d appears twice", j.ID)
		}
		if j.Work < 0 || j.Submit < 0 {
			return Result{}, fmt.Errorf("nowsim: job %d: negative submit time or processing time", j.ID)
		}
		byID[j.ID] = j
		order[i] = j
	}
	if err := ctxslices.SortFunc(ctx, order, func(a, b *Job) int { return cmp.Or(cmp.Compare(a.Submit, b.Submit), cmp.Compare(a.ID, b.ID)) }); err != nil {
		return Result{}, fmt.Errorf("nowsim: run stopped: %w", context.Cause(ctx))
	}

	col := metrics.NewCollector(len(cfg.Speeds), 0)
	estimates := make(map[int64]time.Duration)
	var ends endHeap
	next := 0
	// Every step is checked: a pass over a long queue can take milliseconds.
	done := ctx.Done()
	for next < len(order) || len(ends) > 0 {
		select {
		case <-done:
			return Result{}, fmt.Errorf("nowsim: run stopped: %w", context.Cause(ctx))
		default:
		}
		at := time.Duration(1<<63 - 1)
		if next < len(order) {
			at = order[next].Submit
		}
		if len(ends) > 0 {
			at = min(at, ends[0].end)
		}
		for len(ends) > 0 && ends[0].end == at {
			e := heap.Pop(&ends).(end)
			d, err := core.Finished(now.JobID(e.id), at)
			if err != nil {
				return Result{}, fmt.Errorf("nowsim: %w", err)
			}
			j := byID[e.id]
			est.Observe(j.Program, d.Normalized)
			col.Add(metrics.Job{Submit: j.Submit, Start: d.At, End: at, Processors: j.Tasks, Runtime: at - d.At})
			if emit != nil {
				if err := emit(Record{Job: *j, Estimate: estimates[e.id], Start: d.At, End: at, Nodes: d.Nodes, Speed: d.Speed}); err != nil {
					return Result{}, err
				}
			}
			delete(estimates, e.id)
		}
		for next < len(order) && order[next].Submit == at {
			j := order[next]
			next++
			e := est.Estimate(j.Program, j.Work)
			estimates[j.ID] = e
			if err := core.Submit(now.Job{ID: now.JobID(j.ID), Tasks: j.Tasks, Estimate: e, Balanced: j.Balanced}, at); err != nil {
				return Result{}, fmt.Errorf("nowsim: %w", err)
			}
		}
		starts, err := core.Schedule(at)
		if err != nil {
			return Result{}, fmt.Errorf("nowsim: %w", err)
		}
		for _, s := range starts {
			id := int64(s.Job.ID)
			heap.Push(&ends, end{end: at + now.Runtime(byID[id].Work, s.Speed), id: id})
		}
	}
	if core.Queued() > 0 || core.Running() > 0 {
		return Result{}, errors.New("nowsim: run ended with jobs left") // unreachable: every job fits
	}
	sum := col.Summary()
	return Result{
		Policy:   cfg.Policy,
		Estimate: cfg.Estimate.String(),
		Seed:     cfg.Seed,
		Jobs:     sum.Jobs,
		Makespan: sum.Makespan,
		MeanFlow: sum.Response.Mean,
		MaxWait:  sum.Wait.Max,
		MeanWait: sum.Wait.Mean,
	}, nil
}

type end struct {
	end time.Duration
	id  int64
}

type endHeap []end

func (h endHeap) Len() int { return len(h) }
func (h endHeap) Less(i, j int) bool {
	return h[i].end < h[j].end || (h[i].end == h[j].end && h[i].id < h[j].id)
}
func (h endHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)   { *h = append(*h, x.(end)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
