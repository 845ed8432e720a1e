package jss

import (
	"fmt"
	"io"
	"time"

	"github.com/cosched/cosched/gang"
)

// arrivals pulls a workload's jobs one at a time, so an engine holds only
// the next arrival, never the workload. It checks submit order and numbers
// the jobs: the core's JobID is the arrival sequence (so workloads with
// repeated job numbers still simulate), Seq counts from 0.
type arrivals struct {
	src  Source
	next Job  // the job pulled and not yet submitted
	ok   bool // whether next holds one
	seq  int64
	last time.Duration
	// into is src as an intoSource, if it is one: looked up once
	// (newArrivals), not at each pull (an assertion to an interface is a
	// table lookup).
	into intoSource
}

func newArrivals(src Source) arrivals {
	into, _ := src.(intoSource)
	return arrivals{src: src, into: into}
}

// intoSource is a Source that can also write its next job into the
// caller's storage (the read-ahead one): a Job is about 140 bytes, and
// Next's result was copied twice more on its way into next, once per job
// on the simulation's critical path. It delivers what Next would.
type intoSource interface {
	Source
	nextInto(j *Job) error
}

// pull reads the next job, or notes the end of the workload.
func (a *arrivals) pull() error {
	if a.src == nil {
		return nil
	}
	var err error
	if a.into != nil {
		// next is overwritten only by a job; after an error the run ends.
		err = a.into.nextInto(&a.next)
	} else {
		var j Job
		if j, err = a.src.Next(); err == nil {
			a.next = j
		}
	}
	if err == io.EOF {
		a.ok, a.src, a.into = false, nil, nil
		return nil
	}
	if err != nil {
		return fmt.Errorf("jss: %w", err)
	}
	j := &a.next
	if j.Submit < a.last {
		return fmt.Errorf("jss: job %d submitted at %v, before the previous job (%v): %w", j.Number, j.Submit, a.last, ErrUnsorted)
	}
	a.last = j.Submit
	a.seq++
	j.ID = gang.JobID(a.seq)
	a.ok = true
	return nil
}

// seqOfNext is the arrival order (from 0) of the job in next.
func (a *arrivals) seqOfNext() int64 { return a.seq - 1 }
