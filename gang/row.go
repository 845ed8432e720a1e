package gang

import (
	"cmp"
	"time"
)

// row is one row of the Ousterhout matrix: its free columns and the jobs
// running in it, ordered by estimated end.
type row struct {
	cols    columnSet
	running []*jobState // sorted by (estEnd, seq)
}

func newRow(processors int) row {
	return row{cols: newColumnSet(processors)}
}

func byEstEnd(a, b *jobState) int {
	if c := cmp.Compare(a.estEnd, b.estEnd); c != 0 {
		return c
	}
	return cmp.Compare(a.seq, b.seq)
}

// runningIndex returns where j is, or goes, in r.running: the first job
// not before it in (estEnd, seq) order. Written out rather than through
// slices.BinarySearchFunc, whose comparison is a call per step: every start
// and end does this, and it was 8 % of a simulation.
func (r *row) runningIndex(j *jobState) int {
	lo, hi := 0, len(r.running)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		x := r.running[m]
		if x.estEnd < j.estEnd || x.estEnd == j.estEnd && x.seq < j.seq {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (r *row) addRunning(j *jobState) {
	i := r.runningIndex(j)
	r.running = append(r.running, nil)
	copy(r.running[i+1:], r.running[i:])
	r.running[i] = j
}

func (r *row) removeRunning(j *jobState) {
	i := r.runningIndex(j)
	if n := len(r.running); i < n && byEstEnd(r.running[i], j) == 0 {
		copy(r.running[i:], r.running[i+1:])
		r.running[n-1] = nil // the record may be reused: do not keep it here
		r.running = r.running[:n-1]
	}
}

// shadow computes, from running jobs' estimates, the earliest time at which
// procs processors are free (the shadow time) and how many processors are
// free beyond procs at that time (the extra processors). A job running past
// its estimate is taken to end now. free is the number free now. When that
// is already enough (the job waits for memory, not processors), the shadow
// time is now.
func (r *row) shadow(procs, free int, now time.Duration) (at time.Duration, extra int) {
	if free >= procs {
		return now, free - procs
	}
	avail := free
	for i := 0; i < len(r.running); i++ {
		j := r.running[i]
		avail += j.Processors
		if avail < procs {
			continue
		}
		at = max(j.estEnd, now)
		// Every job ending at the same instant frees its processors too.
		for i+1 < len(r.running) && max(r.running[i+1].estEnd, now) == at {
			i++
			avail += r.running[i].Processors
		}
		return at, avail - procs
	}
	// Unreachable when procs is at most the row's size: once every running
	// job has ended the whole row is free.
	return now, avail - procs
}
