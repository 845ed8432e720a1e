package gang

import "time"

// row is one row of the Ousterhout matrix: its free columns and the jobs
// running in it, ordered by estimated end.
type row struct {
	cols    columnSet
	running []*jobState // sorted by (estEnd, seq)
	// keys[i] is running[i]'s (estEnd, seq, processors), kept beside it:
	// the search at every start and end and the shadow time at every EASY
	// pass read only these, contiguous, instead of a record (a cache line
	// of its own) per job looked at.
	keys []runKey
}

type runKey struct {
	estEnd time.Duration
	seq    uint64
	procs  int
}

func newRow(processors int) row {
	return row{cols: newColumnSet(processors)}
}

// runningIndex returns where j is, or goes, in r.running: the first job
// not before it in (estEnd, seq) order. Written out rather than through
// slices.BinarySearchFunc, whose comparison is a call per step: every start
// and end does this, and it was 8 % of a simulation.
func (r *row) runningIndex(j *jobState) int {
	keys := r.keys
	end, seq := j.estEnd, j.seq
	lo, hi := 0, len(keys)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		x := &keys[m]
		if x.estEnd < end || x.estEnd == end && x.seq < seq {
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
	r.keys = append(r.keys, runKey{})
	copy(r.keys[i+1:], r.keys[i:])
	r.keys[i] = runKey{estEnd: j.estEnd, seq: j.seq, procs: j.Processors}
}

func (r *row) removeRunning(j *jobState) {
	i := r.runningIndex(j)
	if n := len(r.keys); i < n && r.keys[i].estEnd == j.estEnd && r.keys[i].seq == j.seq {
		copy(r.keys[i:], r.keys[i+1:])
		r.keys = r.keys[:n-1]
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
	keys := r.keys
	for i := 0; i < len(keys); i++ {
		avail += keys[i].procs
		if avail < procs {
			continue
		}
		at = max(keys[i].estEnd, now)
		// Every job ending at the same instant frees its processors too.
		for i+1 < len(keys) && max(keys[i+1].estEnd, now) == at {
			i++
			avail += keys[i].procs
		}
		return at, avail - procs
	}
	// Unreachable when procs is at most the row's size: once every running
	// job has ended the whole row is free.
	return now, avail - procs
}
