// Package gangtest records what a gang.Scheduler is told and what it
// decides, replays recorded logs into fresh schedulers, and runs small
// workloads through a deliberately simple event loop. It is a non-test
// package so that other packages' tests (the simulator's, the runtime's) can
// assert on decisions rather than internals.
package gangtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/gang/verify"
)

// Op is the kind of a recorded input.
type Op uint8

// Recorded operations.
const (
	OpSubmit Op = iota + 1
	OpFinished
	OpSchedule
	OpOffline // columns leave service
	OpOnline  // columns return
)

// Event is one recorded input to a scheduler.
type Event struct {
	Op   Op
	Now  time.Duration
	Job  gang.Job   // OpSubmit
	ID   gang.JobID // OpFinished
	Cols []int      // OpOffline, OpOnline
}

// Recorder wraps a Scheduler and records every input and every decision.
// Every accepted input and every decision is also checked by an
// independent verify.Checker; a violation is returned as the call's error.
type Recorder struct {
	S         *gang.Scheduler
	Log       []Event
	Decisions []gang.Decision // every decision, in order, deep-copied
	check     *verify.Checker
}

// NewRecorder returns a Recorder around a new Scheduler for cfg.
func NewRecorder(cfg gang.Config) (*Recorder, error) {
	s, err := gang.New(cfg)
	if err != nil {
		return nil, err
	}
	return &Recorder{S: s, check: verify.New(cfg.Machine, cfg.MPL)}, nil
}

// Submit forwards to the scheduler and records the call.
func (r *Recorder) Submit(j gang.Job, now time.Duration) error {
	r.Log = append(r.Log, Event{Op: OpSubmit, Now: now, Job: j})
	if err := r.S.Submit(j, now); err != nil {
		return err
	}
	return r.check.Submitted(j)
}

// Finished forwards to the scheduler and records the call.
func (r *Recorder) Finished(id gang.JobID, now time.Duration) error {
	r.Log = append(r.Log, Event{Op: OpFinished, Now: now, ID: id})
	if err := r.S.Finished(id, now); err != nil {
		return err
	}
	return r.check.Finished(id)
}

// Schedule forwards to the scheduler and records the call and its decisions.
func (r *Recorder) Schedule(now time.Duration) ([]gang.Decision, error) {
	r.Log = append(r.Log, Event{Op: OpSchedule, Now: now})
	ds, err := r.S.Schedule(now)
	if err != nil {
		return ds, err
	}
	for i := range ds {
		d := ds[i]
		d.Columns = slices.Clone(d.Columns)
		r.Decisions = append(r.Decisions, d)
		if err := r.check.Apply(&d, now); err != nil {
			return ds, err
		}
	}
	return ds, nil
}

// SetOffline forwards to the scheduler and records the call.
func (r *Recorder) SetOffline(cols []int, offline bool, now time.Duration) error {
	op := OpOnline
	if offline {
		op = OpOffline
	}
	r.Log = append(r.Log, Event{Op: op, Now: now, Cols: slices.Clone(cols)})
	if err := r.S.SetOffline(cols, offline, now); err != nil {
		return err
	}
	r.check.SetOffline(cols, offline)
	return nil
}

// Replay feeds log into a fresh Scheduler for cfg and returns every decision
// it makes. Replaying a Recorder's log must reproduce its Decisions exactly.
func Replay(cfg gang.Config, log []Event) ([]gang.Decision, error) {
	return ReplayWith(cfg, log, nil)
}

// ReplayWith is Replay into a scheduler that prepare (if not nil) sets up
// first: a test compares a way of deciding that it switches on (or off)
// with the decisions of the recorded run.
func ReplayWith(cfg gang.Config, log []Event, prepare func(*gang.Scheduler)) ([]gang.Decision, error) {
	r, err := NewRecorder(cfg)
	if err != nil {
		return nil, err
	}
	if prepare != nil {
		prepare(r.S)
	}
	for i, e := range log {
		switch e.Op {
		case OpSubmit:
			err = r.Submit(e.Job, e.Now)
		case OpFinished:
			err = r.Finished(e.ID, e.Now)
		case OpSchedule:
			_, err = r.Schedule(e.Now)
		case OpOffline, OpOnline:
			err = r.SetOffline(e.Cols, e.Op == OpOffline, e.Now)
		default:
			err = fmt.Errorf("unknown op %d", e.Op)
		}
		if err != nil {
			return r.Decisions, fmt.Errorf("gangtest: replay event %d: %w", i, err)
		}
	}
	return r.Decisions, nil
}

// Run is one job of a workload for Simulate: the job, and how long it really
// runs once started.
type Run struct {
	gang.Job
	Runtime time.Duration
}

// Outcome is when a job started and ended in Simulate.
type Outcome struct {
	Start, End time.Duration
	Columns    []int
	Killed     bool
}

// Simulate runs jobs (sorted by Submit) to completion through a Recorder
// with a deliberately plain loop: at each instant, report the jobs that
// ended, then those that arrived, then schedule; repeat until nothing is
// left. Killed jobs end at the instant of their Kill decision. It is the
// independent driver that the simulator's engine is checked against.
func Simulate(cfg gang.Config, jobs []Run) (map[gang.JobID]Outcome, *Recorder, error) {
	rec, err := NewRecorder(cfg)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[gang.JobID]Outcome, len(jobs))
	runtime := make(map[gang.JobID]time.Duration, len(jobs))
	ends := map[gang.JobID]time.Duration{} // running jobs' real ends
	next := 0
	now := time.Duration(0)
	if len(jobs) > 0 {
		now = jobs[0].Submit
	}
	for next < len(jobs) || len(ends) > 0 || len(rec.S.Queued()) > 0 {
		var ended []gang.JobID
		for id, end := range ends {
			if end == now {
				ended = append(ended, id)
			}
		}
		slices.Sort(ended)
		for _, id := range ended {
			delete(ends, id)
			if err := rec.Finished(id, now); err != nil {
				return out, rec, err
			}
		}
		for next < len(jobs) && jobs[next].Submit == now {
			runtime[jobs[next].ID] = jobs[next].Runtime
			if err := rec.Submit(jobs[next].Job, now); err != nil {
				return out, rec, err
			}
			next++
		}
		ds, err := rec.Schedule(now)
		if err != nil {
			return out, rec, err
		}
		for _, d := range ds {
			switch d.Kind {
			case gang.Start:
				ends[d.Job] = now + runtime[d.Job]
				out[d.Job] = Outcome{Start: now, End: now + runtime[d.Job], Columns: slices.Clone(d.Columns)}
			case gang.Kill:
				ends[d.Job] = now
				o := out[d.Job]
				o.End, o.Killed = now, true
				out[d.Job] = o
			}
		}
		// Next instant: the earliest of an end, an arrival, a wakeup.
		t, ok := rec.S.NextWakeup()
		for _, end := range ends {
			if !ok || end < t {
				t, ok = end, true
			}
		}
		if next < len(jobs) && (!ok || jobs[next].Submit < t) {
			t, ok = jobs[next].Submit, true
		}
		if !ok {
			if q := rec.S.Queued(); len(q) > 0 {
				return out, rec, fmt.Errorf("gangtest: stuck at %v with queued jobs %v and nothing running", now, q)
			}
			break
		}
		if t < now {
			return out, rec, fmt.Errorf("gangtest: next instant %v is before now %v", t, now)
		}
		if t == now && len(ds) == 0 && !hasEndAt(ends, now) {
			return out, rec, fmt.Errorf("gangtest: no progress at %v", now)
		}
		now = t
	}
	return out, rec, nil
}

func hasEndAt(ends map[gang.JobID]time.Duration, t time.Duration) bool {
	for _, e := range ends {
		if e == t {
			return true
		}
	}
	return false
}

// Format renders decisions one per line, for golden comparisons.
func Format(ds []gang.Decision) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}
