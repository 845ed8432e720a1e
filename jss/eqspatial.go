package jss

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/hosts"
)

// EQSpatialName is the policy's name wherever policies are selected by name.
const EQSpatialName = "eqspatial"

// EQSpatial configures equal spatial partitioning (simulator only): every
// host's processors are split equally among the jobs on it, repartitioned
// at arrivals and departures but no more often than Interval; a job given
// a of its p processors progresses at a/p of its dedicated speed; memory
// is allocated in full, so a job joins a host only if its memory fits.
// With FullAfter > 0, jobs that have run longer than FullAfter get their
// whole request first.
type EQSpatial struct {
	Interval  time.Duration
	FullAfter time.Duration
}

// DefaultEQSpatial is the study's: repartitions at most every 5 minutes,
// no full-request variant.
func DefaultEQSpatial() EQSpatial { return EQSpatial{Interval: 5 * time.Minute} }

type eqJob struct {
	job   Job
	seq   int64
	mem   int64
	host  int
	alloc int           // processors given
	work  time.Duration // dedicated runtime left, as of since
	since time.Duration
	start time.Duration // first time it got processors, -1 before
	end   time.Duration // when it ends at the current allocation, -1 if never
}

type eqHost struct {
	hosts.Host
	freeMem int64
	jobs    []*eqJob // admission order
	last    time.Duration
	parted  bool // repartitioned at least once
	touched bool // an arrival or a departure since the last pass
	pending bool // a repartition is due at last + interval
}

type eqEngine struct {
	loop
	cfg   EQSpatial
	check bool
	hs    []eqHost
	emit  func(Result) error
	jobs  map[gang.JobID]*eqJob
	queue []*eqJob
	stats HostsStats
}

func runEQ(ctx context.Context, cfg HostsConfig, src Source, emit func(Result) error) (HostsStats, error) {
	eq := *cfg.EQ
	if eq.Interval < 0 || eq.FullAfter < 0 {
		return HostsStats{}, fmt.Errorf("jss: eqspatial: interval and full-after must not be negative (got %v, %v)", eq.Interval, eq.FullAfter)
	}
	if len(cfg.Scheduler.Hosts) == 0 {
		return HostsStats{}, errors.New("jss: eqspatial: no hosts")
	}
	e := eqEngine{cfg: eq, check: cfg.Check, loop: newLoop(src), emit: emit, jobs: map[gang.JobID]*eqJob{}}
	for _, h := range cfg.Scheduler.Hosts {
		if h.Processors < 1 || h.Memory < 0 {
			return HostsStats{}, fmt.Errorf("jss: eqspatial: host %s: bad size %d processors, %d bytes", h.Name, h.Processors, h.Memory)
		}
		fm := h.Memory
		if fm == 0 {
			fm = math.MaxInt64 / 2
		}
		e.hs = append(e.hs, eqHost{Host: h, freeMem: fm})
	}
	err := e.run(ctx)
	return e.stats, err
}

func (e *eqEngine) run(ctx context.Context) error {
	var after func() error
	if e.check {
		after = e.verify
	}
	err := e.loop.run(ctx, &e.stats.Stats, steps{complete: e.complete, arrive: e.arrive, pass: e.pass, after: after,
		left: func() int { return len(e.jobs) }})
	return err
}

func (e *eqEngine) arrive(ev event) error {
	j := e.in.next
	mem := hosts.JobMemory(j.Job)
	fits := false
	for _, h := range e.hs {
		fits = fits || h.Fits(j.Processors, mem)
	}
	if !fits {
		e.stats.Unfit++
		return e.pull()
	}
	e.stats.Jobs++
	a := &eqJob{job: j, seq: e.in.seqOfNext(), mem: mem, host: -1, work: j.Runtime, start: -1, end: -1}
	e.jobs[j.ID] = a
	e.queue = append(e.queue, a)
	e.needPass(ev.at)
	return e.pull()
}

func (e *eqEngine) complete(ev event) error {
	a := e.jobs[ev.job]
	if a == nil || a.end != ev.at {
		return nil // superseded by a new allocation
	}
	h := &e.hs[a.host]
	h.jobs = slices.DeleteFunc(h.jobs, func(q *eqJob) bool { return q == a })
	h.freeMem += a.mem
	h.touched = true
	delete(e.jobs, ev.job)
	e.needPass(ev.at)
	if err := e.emit(Result{Job: a.job, Seq: a.seq, Start: a.start, End: ev.at}); err != nil {
		return fmt.Errorf("jss: %w", err)
	}
	return nil
}

// admittable reports whether a job can join host h now: it fits the host,
// its memory is free there, and the host has fewer jobs than processors.
func (e *eqEngine) admittable(a *eqJob, h int) bool {
	hs := &e.hs[h]
	return hs.Fits(a.job.Processors, a.mem) && a.mem <= hs.freeMem && len(hs.jobs) < hs.Processors
}

// pass admits queued jobs in arrival order (the first that cannot join
// any host blocks the rest), each to the host where its equal share
// P/(n+1) is largest (ties: the lower index), then repartitions every host
// with an arrival or a departure, or a repartition due, whose last
// repartition is at least the interval ago. A host that must wait gives
// its idle processors to its jobs that have none, in admission order, each
// up to its equal share (at least 1) and its request, and repartitions at
// last + interval.
func (e *eqEngine) pass(at time.Duration) error {
	for len(e.queue) > 0 {
		a := e.queue[0]
		best := -1
		for h := range e.hs {
			if !e.admittable(a, h) {
				continue
			}
			// share P_h/(n_h+1) > P_b/(n_b+1), compared without division
			if best < 0 || e.hs[h].Processors*(len(e.hs[best].jobs)+1) > e.hs[best].Processors*(len(e.hs[h].jobs)+1) {
				best = h
			}
		}
		if best < 0 {
			break
		}
		e.queue = e.queue[1:]
		hs := &e.hs[best]
		a.host, a.since = best, at
		hs.jobs = append(hs.jobs, a)
		hs.freeMem -= a.mem
		hs.touched = true
		e.stats.MaxOnHost = max(e.stats.MaxOnHost, len(hs.jobs))
	}
	for h := range e.hs {
		hs := &e.hs[h]
		if !hs.touched && !hs.pending {
			continue
		}
		if len(hs.jobs) == 0 {
			// Nothing to share; an empty host keeps its last repartition.
			hs.touched, hs.pending = false, false
			continue
		}
		due := hs.last + e.cfg.Interval
		if !hs.parted || at >= due {
			e.repartition(h, at)
			continue
		}
		hs.touched = false
		e.fillIdle(h, at)
		if !hs.pending {
			hs.pending = true
			e.needPass(due)
		}
	}
	return nil
}

// repartition gives host h's processors to its jobs: with FullAfter, jobs
// that have run longer get their whole request first (admission order,
// while enough is left); the rest is split equally, a job never getting
// more than its request (what it leaves is split among the others), and
// the remainder of the integer split going one each to the earliest
// admitted.
func (e *eqEngine) repartition(h int, at time.Duration) {
	hs := &e.hs[h]
	hs.last, hs.parted, hs.touched, hs.pending = at, true, false, false
	e.stats.Repartitions++
	alloc := make([]int, len(hs.jobs))
	left := hs.Processors
	var rest []int // indexes into hs.jobs sharing equally
	for i, a := range hs.jobs {
		if e.cfg.FullAfter > 0 && a.start >= 0 && at-a.start > e.cfg.FullAfter && a.job.Processors <= left {
			alloc[i] = a.job.Processors
			left -= a.job.Processors
			continue
		}
		rest = append(rest, i)
	}
	for len(rest) > 0 {
		share := left / len(rest)
		var still []int
		for _, i := range rest {
			if p := hs.jobs[i].job.Processors; p <= share {
				alloc[i] = p
				left -= p
			} else {
				still = append(still, i)
			}
		}
		if len(still) == len(rest) {
			for k, i := range still {
				alloc[i] = share
				if k < left%len(still) {
					alloc[i]++
				}
			}
			break
		}
		rest = still
	}
	for i, a := range hs.jobs {
		e.setAlloc(a, alloc[i], at)
	}
}

// fillIdle gives host h's idle processors to its jobs without any, in
// admission order, each up to max(1, P/n) and its request.
func (e *eqEngine) fillIdle(h int, at time.Duration) {
	hs := &e.hs[h]
	idle := hs.Processors
	for _, a := range hs.jobs {
		idle -= a.alloc
	}
	share := max(1, hs.Processors/max(len(hs.jobs), 1))
	for _, a := range hs.jobs {
		if idle <= 0 {
			break
		}
		if a.alloc == 0 {
			n := min(idle, share, a.job.Processors)
			e.setAlloc(a, n, at)
			idle -= n
		}
	}
}

// setAlloc gives a job n processors from at: it has progressed at
// alloc/p since its last change, and from now ends after work·p/n.
func (e *eqEngine) setAlloc(a *eqJob, n int, at time.Duration) {
	if n == a.alloc && a.end >= 0 {
		return
	}
	p := a.job.Processors
	if a.alloc > 0 {
		done := time.Duration(math.Round(float64(at-a.since) * float64(a.alloc) / float64(p)))
		a.work = max(a.work-done, 0)
	}
	a.alloc, a.since = n, at
	if n == 0 {
		a.end = -1
		return
	}
	if a.start < 0 {
		a.start = at
	}
	a.end = at + time.Duration(math.Round(float64(a.work)*float64(p)/float64(n)))
	e.heap.push(a.end, classCompletion, a.job.ID)
}

// verify checks that no host gives more processors than it has, holds
// more memory, or gives a job more than it asked for.
func (e *eqEngine) verify() error {
	for _, hs := range e.hs {
		procs, mem := 0, int64(0)
		for _, a := range hs.jobs {
			if a.alloc > a.job.Processors || a.alloc < 0 {
				return fmt.Errorf("jss: invariant violated at %v: job %d has %d processors of %d", e.stats.End, a.job.Number, a.alloc, a.job.Processors)
			}
			procs += a.alloc
			mem += a.mem
		}
		if procs > hs.Processors || (hs.Memory > 0 && mem > hs.Memory) {
			return fmt.Errorf("jss: invariant violated at %v: host %s gives %d of %d processors, holds %d of %d bytes", e.stats.End, hs.Name, procs, hs.Processors, mem, hs.Memory)
		}
	}
	return nil
}
