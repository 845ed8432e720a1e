package jss

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// loop is the event skeleton every engine shares: it pulls arrivals from
// the source one at a time (so memory grows with the jobs in the system,
// not with the workload), pops events in time order (at one instant:
// completions, then arrivals, then scheduling passes) and hands each to
// its engine. Engines embed it.
type loop struct {
	in   arrivals
	heap eventHeap
	// The next arrival waits here rather than in the heap: arrivals are
	// pulled one at a time, so there is at most one, and a push and a pop
	// per job were a third of the heap's work.
	arrival    event
	arrivalSet bool
	// The instants with a pass pending: one in passAt (nearly always the
	// only one, the current instant's), any others in passes. Every event
	// asks for a pass at its instant: a map insert and delete per instant
	// cost more than the rest of the loop. The pass in passAt waits beside
	// the heap, as the arrival does (a push and a pop fewer per instant);
	// those in passes are in the heap.
	passAt    time.Duration
	passSeq   uint64 // passAt's insertion number, as the heap would give it
	passAtSet bool
	passes    map[time.Duration]struct{}
}

func newLoop(src Source) loop {
	return loop{in: newArrivals(src)}
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
	// The check is a flag that ctx's end sets, not a look at its channel:
	// a receive attempt per event was 3 % of an EASY run.
	var stopped atomic.Bool
	stopped.Store(ctx.Err() != nil)
	if ctx.Done() != nil {
		defer context.AfterFunc(ctx, func() { stopped.Store(true) })()
	}
	for l.heap.len() > 0 || l.arrivalSet || l.passAtSet {
		if stopped.Load() {
			return fmt.Errorf("jss: run stopped at %v: %w", st.End, context.Cause(ctx))
		}
		ev := l.next()
		st.Events++
		st.End = ev.at
		var err error
		switch ev.class() {
		case classCompletion:
			err = s.complete(ev)
		case classArrival:
			err = s.arrive(ev)
		case classPass:
			l.passDue(ev.at)
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
	if l.arrivalSet { // not so today; the heap keeps any second one in order
		l.heap.push(l.in.next.Submit, classArrival, l.in.next.ID)
		return nil
	}
	// The same insertion number the heap would give it, so ties break as
	// they did when it was there.
	l.heap.seq++
	l.arrival = event{at: l.in.next.Submit, order: eventOrder(classArrival, l.heap.seq), job: l.in.next.ID}
	l.arrivalSet = true
	return nil
}

// next removes and returns the first event: the pending arrival, the pass
// pending in passAt or the heap's top, whichever comes first.
func (l *loop) next() event {
	// The pass in passAt goes first unless another event is at its instant
	// or earlier: at one instant every class precedes a pass, and no other
	// pass is ever at passAt (needPass keeps one per instant). So a look at
	// two instants tells, not a comparison of whole events.
	if l.passAtSet && (l.heap.len() == 0 || l.passAt < l.heap.items[0].at) && (!l.arrivalSet || l.passAt < l.arrival.at) {
		l.passAtSet = false
		return event{at: l.passAt, order: eventOrder(classPass, l.passSeq)}
	}
	if l.arrivalSet && (l.heap.len() == 0 || l.arrival.before(&l.heap.items[0])) {
		l.arrivalSet = false
		return l.arrival
	}
	return l.heap.pop()
}

// needPass schedules a scheduling pass at instant at (once).
func (l *loop) needPass(at time.Duration) {
	if l.passAtSet && l.passAt == at {
		return
	}
	if len(l.passes) > 0 { // nearly always empty: no map lookup per event
		if _, ok := l.passes[at]; ok {
			return
		}
	}
	if !l.passAtSet {
		l.heap.seq++ // the number the heap would have given it
		l.passAt, l.passSeq, l.passAtSet = at, l.heap.seq, true
		return
	}
	if l.passes == nil {
		l.passes = make(map[time.Duration]struct{})
	}
	l.passes[at] = struct{}{}
	l.heap.push(at, classPass, 0)
}

// passDue notes that the pass pending at instant at is running. One taken
// from passAt was cleared there by next.
func (l *loop) passDue(at time.Duration) {
	if len(l.passes) > 0 {
		delete(l.passes, at)
	}
}
