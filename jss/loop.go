package jss

import (
	"context"
	"fmt"
	"time"
)

// loop is the event skeleton every engine shares: it pulls arrivals from
// the source one at a time (so memory grows with the jobs in the system,
// not with the workload), pops events in time order (at one instant:
// completions, then arrivals, then scheduling passes) and hands each to
// its engine. Engines embed it.
type loop struct {
	in     arrivals
	heap   eventHeap
	passes map[time.Duration]struct{} // instants with a pass pending
}

func newLoop(src Source) loop {
	return loop{in: arrivals{src: src}, passes: make(map[time.Duration]struct{})}
}

// steps are an engine's handlers. after, if set, runs after every event
// (invariant checks); left says how many jobs have not finished.
type steps struct {
	complete func(event) error
	arrive   func(event) error
	pass     func(at time.Duration) error
	after    func() error
	left     func() int
}

// run processes every event, counting them and the last instant in st.
// It stops early, with ctx's error, when ctx is cancelled, and fails if
// jobs are left unfinished once there is nothing more to do.
func (l *loop) run(ctx context.Context, st *Stats, s steps) error {
	if err := l.pull(); err != nil {
		return err
	}
	// Every event is checked: one event of a conservative pass over a long
	// queue can take milliseconds, and a signal must stop a run within one.
	done := ctx.Done()
	for l.heap.len() > 0 {
		select {
		case <-done:
			return fmt.Errorf("jss: run stopped at %v: %w", st.End, context.Cause(ctx))
		default:
		}
		ev := l.heap.pop()
		st.Events++
		st.End = ev.at
		var err error
		switch ev.class {
		case classCompletion:
			err = s.complete(ev)
		case classArrival:
			err = s.arrive(ev)
		case classPass:
			delete(l.passes, ev.at)
			st.Passes++
			err = s.pass(ev.at)
		}
		if err == nil && s.after != nil {
			err = s.after()
		}
		if err != nil {
			return err
		}
	}
	if n := s.left(); n > 0 {
		return fmt.Errorf("jss: run ended at %v with %d jobs never finished", st.End, n)
	}
	return nil
}

// pull reads the next job from the source and schedules its arrival.
func (l *loop) pull() error {
	if err := l.in.pull(); err != nil || !l.in.ok {
		return err
	}
	l.heap.push(l.in.next.Submit, classArrival, l.in.next.ID)
	return nil
}

// needPass schedules a scheduling pass at instant at (once).
func (l *loop) needPass(at time.Duration) {
	if _, ok := l.passes[at]; ok {
		return
	}
	l.passes[at] = struct{}{}
	l.heap.push(at, classPass, 0)
}
