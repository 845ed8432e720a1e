package jss

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/hosts"
)

// ImmediateService configures the limited preemption of the NCSA study
// (simulator only). A job that cannot start when it arrives, and needs at
// most Memory, gets a Quantum at once on one host: on the host's free
// processors and on processors preempted (not memory) from jobs that have
// run uninterrupted longer than MinRun and have more than MinRun left by
// their estimates, lowest current slowdown first. If it has not finished
// after its quantum it is killed and queued as a normal job (the quantum
// is lost work); the preempted jobs resume when it ends.
type ImmediateService struct {
	Quantum time.Duration
	Memory  int64 // bytes in all (JobMemory); 0: any
	MinRun  time.Duration
}

// DefaultImmediateService is the study's: a 1 minute quantum, up to 1 GB,
// victims that have run and have left more than 10 minutes.
func DefaultImmediateService() ImmediateService {
	return ImmediateService{Quantum: time.Minute, Memory: 1 << 30, MinRun: 10 * time.Minute}
}

// ReadMachineFile reads the machine file at path: hosts of different
// sizes, one per line (hosts.ParseMachine).
func ReadMachineFile(path string) ([]hosts.Host, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return hosts.ParseMachine(f, path)
}

// HostsConfig configures RunHosts.
type HostsConfig struct {
	Scheduler hosts.Config
	// IS, when set, adds immediate service.
	IS *ImmediateService
	// EQ, when set, runs EQspatial instead of the priority-backfill core
	// (Scheduler.Policy and Backfill and IS are then ignored).
	EQ *EQSpatial
	// Check verifies after every event that no host runs more processors
	// than it has or holds more memory (preempted jobs' included).
	Check bool
}

// HostsStats describes a finished multi-host run.
type HostsStats struct {
	Stats
	Unfit       int64 // jobs no host could hold (processors and memory): dropped
	ISStarts    int64 // jobs given a quantum
	ISDone      int64 // of those, finished within it
	ISKilled    int64 // killed at the end of the quantum and queued again
	Preemptions int64 // jobs preempted for a quantum
	// ISLost is the processor time of killed quanta, in processor-seconds.
	ISLost float64
	// EQspatial: repartitions made, and the most jobs on one host at once.
	Repartitions int64
	MaxOnHost    int
}

type hjState uint8

const (
	hjQueued hjState = iota
	hjRunning
	hjSuspended
	hjQuantum // running in an immediate-service quantum
)

type hJob struct {
	job      Job
	seq      int64
	mem      int64
	state    hjState
	host     int
	start    time.Duration
	end      time.Duration // running: when it ends
	left     time.Duration // suspended: runtime left
	since    time.Duration // running: when it last started or resumed
	received time.Duration // runtime received before since
	estEnd   time.Duration // running or suspended: the end by estimate (unsuspended)
	stopped  time.Duration // suspended: since when
	victims  []*hJob       // quantum: the jobs it preempted
	fresh    bool          // arrived since the last pass
}

// RunHosts simulates the workload from src on hosts of different sizes
// (package gang/hosts), optionally with immediate service, and calls emit
// with each job's result when it ends. Jobs no host can hold are dropped
// and counted (HostsStats.Unfit). A job's Start is the start of the run
// that completed it: its quantum if it finished there, else its start
// from the queue.
func RunHosts(ctx context.Context, cfg HostsConfig, src Source, emit func(Result) error) (HostsStats, error) {
	if cfg.EQ != nil {
		return runEQ(ctx, cfg, src, emit)
	}
	if is := cfg.IS; is != nil && (is.Quantum <= 0 || is.Memory < 0 || is.MinRun < 0) {
		return HostsStats{}, fmt.Errorf("jss: immediate service: quantum must be positive, memory and minimum run not negative (got %v, %d, %v)", is.Quantum, is.Memory, is.MinRun)
	}
	core, err := hosts.New(cfg.Scheduler)
	if err != nil {
		return HostsStats{}, fmt.Errorf("jss: %w", err)
	}
	e := hEngine{cfg: cfg, core: core, loop: newLoop(src), emit: emit, jobs: map[gang.JobID]*hJob{}}
	err = e.run(ctx)
	return e.stats, err
}

type hEngine struct {
	loop
	cfg   HostsConfig
	core  *hosts.Scheduler
	emit  func(Result) error
	jobs  map[gang.JobID]*hJob
	fresh []*hJob
	stats HostsStats
}

func (e *hEngine) run(ctx context.Context) error {
	var after func() error
	if e.cfg.Check {
		after = e.checkHosts
	}
	err := e.loop.run(ctx, &e.stats.Stats, steps{complete: e.complete, arrive: e.arrive, pass: e.pass, after: after,
		left: func() int { return len(e.jobs) }})
	return err
}

func (e *hEngine) arrive(ev event) error {
	j := e.in.next
	if !e.core.FitsSomeHost(j.Job) {
		e.stats.Unfit++
		return e.pull()
	}
	if err := e.core.Submit(j.Job, ev.at); err != nil {
		return fmt.Errorf("jss: job %d: %w", j.Number, err)
	}
	e.stats.Jobs++
	a := &hJob{job: j, seq: e.in.seqOfNext(), mem: hosts.JobMemory(j.Job), fresh: true}
	e.jobs[j.ID] = a
	e.fresh = append(e.fresh, a)
	e.needPass(ev.at)
	return e.pull()
}

func (e *hEngine) pass(at time.Duration) error {
	ds, err := e.core.Schedule(at)
	if err != nil {
		return fmt.Errorf("jss: %w", err)
	}
	for _, d := range ds {
		a := e.jobs[d.Job]
		if a == nil || a.state != hjQueued {
			return fmt.Errorf("jss: core started job %d, which the simulator does not have queued", d.Job)
		}
		a.state, a.host, a.start, a.since, a.received = hjRunning, d.Host, at, at, 0
		a.end, a.estEnd = at+a.job.Runtime, at+a.job.Estimate
		e.heap.push(a.end, classCompletion, d.Job)
	}
	if e.cfg.IS != nil {
		for _, a := range e.fresh {
			if a.state == hjQueued {
				if err := e.immediate(a, at); err != nil {
					return err
				}
			}
			a.fresh = false
		}
	}
	e.fresh = e.fresh[:0]
	if t, ok := e.core.NextWakeup(); ok {
		e.needPass(t)
	}
	return nil
}

// immediate gives a job that could not start a quantum, if some host has
// its memory free and enough free and preemptible processors: the host
// that preempts the fewest processors, then has the fewest free, then the
// lowest index.
func (e *hEngine) immediate(a *hJob, at time.Duration) error {
	is := e.cfg.IS
	if is.Memory > 0 && a.mem > is.Memory {
		return nil
	}
	best, bestCost, bestFree := -1, 0, 0
	var bestVictims []*hJob
	for h, hs := range e.core.Hosts() {
		free, freeMem := e.core.Free(h)
		if !hs.Fits(a.job.Processors, a.mem) || a.mem > freeMem {
			continue
		}
		var victims []*hJob
		cost := 0
		if need := a.job.Processors - free; need > 0 {
			var ok bool
			if victims, cost, ok = e.victims(h, need, at); !ok {
				continue
			}
		}
		if best < 0 || cost < bestCost || (cost == bestCost && free < bestFree) {
			best, bestCost, bestFree, bestVictims = h, cost, free, victims
		}
	}
	if best < 0 {
		return nil
	}
	if err := e.core.Finished(a.job.ID, at); err != nil { // leaves the queue
		return fmt.Errorf("jss: job %d: %w", a.job.Number, err)
	}
	for _, v := range bestVictims {
		v.state, v.left, v.received, v.stopped = hjSuspended, v.end-at, v.received+at-v.since, at
		if err := e.core.SetEstimatedEnd(v.job.ID, v.estEnd+is.Quantum); err != nil {
			return fmt.Errorf("jss: job %d: %w", v.job.Number, err)
		}
		e.stats.Preemptions++
	}
	j := a.job.Job
	j.Estimate = is.Quantum
	if err := e.core.Place(j, min(bestFree, j.Processors), best, at); err != nil {
		return fmt.Errorf("jss: job %d: %w", a.job.Number, err)
	}
	a.state, a.host, a.start, a.since, a.victims = hjQuantum, best, at, at, bestVictims
	a.end = at + min(a.job.Runtime, is.Quantum)
	e.heap.push(a.end, classCompletion, j.ID)
	e.stats.ISStarts++
	return nil
}

// victims picks, on host h, jobs to preempt for need processors: running
// jobs (not in a quantum) that have run uninterrupted longer than MinRun
// and have more than MinRun left by their estimates, lowest current
// slowdown first ((now − submit) / runtime received; ties: the earlier
// arrival). It reports the processors they free and whether that is enough.
func (e *hEngine) victims(h, need int, at time.Duration) ([]*hJob, int, bool) {
	type cand struct {
		a    *hJob
		slow float64
	}
	var cs []cand
	minRun := e.cfg.IS.MinRun
	for _, a := range e.jobs {
		if a.state != hjRunning || a.host != h {
			continue
		}
		ran := at - a.since
		got := a.received + ran
		if ran <= minRun || a.job.Estimate-got <= minRun {
			continue
		}
		cs = append(cs, cand{a, (at - a.job.Submit).Seconds() / got.Seconds()})
	}
	slices.SortFunc(cs, func(x, y cand) int {
		if c := cmp.Compare(x.slow, y.slow); c != 0 {
			return c
		}
		return cmp.Compare(x.a.seq, y.a.seq)
	})
	var out []*hJob
	sum := 0
	for _, c := range cs {
		if sum >= need {
			break
		}
		out = append(out, c.a)
		sum += c.a.job.Processors
	}
	return out, sum, sum >= need
}

func (e *hEngine) complete(ev event) error {
	a := e.jobs[ev.job]
	if a == nil || (a.state != hjRunning && a.state != hjQuantum) || a.end != ev.at {
		return nil // superseded by a preemption
	}
	at := ev.at
	if err := e.core.Finished(ev.job, at); err != nil {
		return fmt.Errorf("jss: job %d: %w", a.job.Number, err)
	}
	e.needPass(at)
	if a.state == hjQuantum {
		for _, v := range a.victims {
			v.estEnd += at - v.stopped
			v.state, v.since, v.end = hjRunning, at, at+v.left
			if err := e.core.SetEstimatedEnd(v.job.ID, v.estEnd); err != nil {
				return fmt.Errorf("jss: job %d: %w", v.job.Number, err)
			}
			e.heap.push(v.end, classCompletion, v.job.ID)
		}
		a.victims = nil
		if a.job.Runtime > e.cfg.IS.Quantum {
			e.stats.ISKilled++
			e.stats.ISLost += float64(a.job.Processors) * (at - a.since).Seconds()
			a.state = hjQueued
			if err := e.core.Submit(a.job.Job, at); err != nil {
				return fmt.Errorf("jss: job %d: queue again after its quantum: %w", a.job.Number, err)
			}
			return nil
		}
		e.stats.ISDone++
	}
	delete(e.jobs, ev.job)
	if err := e.emit(Result{Job: a.job, Seq: a.seq, Start: a.start, End: at}); err != nil {
		return fmt.Errorf("jss: %w", err)
	}
	return nil
}

// checkHosts verifies that no host runs more processors than it has, nor
// holds more memory than it has (preempted jobs keep theirs).
func (e *hEngine) checkHosts() error {
	hs := e.core.Hosts()
	procs := make([]int, len(hs))
	mem := make([]int64, len(hs))
	for _, a := range e.jobs {
		switch a.state {
		case hjRunning, hjQuantum:
			procs[a.host] += a.job.Processors
			mem[a.host] += a.mem
		case hjSuspended:
			mem[a.host] += a.mem
		}
	}
	var errs []error
	for h := range hs {
		if procs[h] > hs[h].Processors || (hs[h].Memory > 0 && mem[h] > hs[h].Memory) {
			errs = append(errs, fmt.Errorf("host %s: %d processors running of %d, %d bytes held of %d", hs[h].Name, procs[h], hs[h].Processors, mem[h], hs[h].Memory))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("jss: invariant violated at %v: %w", e.stats.End, err)
	}
	return nil
}
