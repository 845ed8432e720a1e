package node

import (
	"time"
)

// jobRecord is the controller's record of a job. Only the controller's
// loop goroutine touches it.
type jobRecord struct {
	id     int64
	spec   JobSpec
	state  State
	reason string // failure reason; for pending jobs the core explains instead
	submit time.Time
	start  time.Time
	end    time.Time
	row    int
	rows   []int      // rows it runs in (own + alternates)
	ranks  []RankInfo // by rank
	agents []string   // agents hosting ranks, sorted
	ending State      // the final state decided while ranks are still being stopped ("" if none)
	exited int        // ranks reported ended
	usage  *JobUsage  // from the agents' cgroups, as their last ranks end
}

// account folds in a node's cgroup accounting, if the exit carries it.
func (j *jobRecord) account(m rankExit) {
	if m.Usage == nil {
		return
	}
	if j.usage == nil {
		j.usage = &JobUsage{}
	}
	j.usage.add(*m.Usage)
}

// view renders the record for the API.
func (j *jobRecord) view(now time.Time) Job {
	v := Job{
		ID:     j.id,
		Spec:   j.spec,
		State:  j.state,
		Reason: j.reason,
		Submit: j.submit,
		Row:    j.row,
		Ranks:  append([]RankInfo(nil), j.ranks...),
	}
	if j.usage != nil {
		u := *j.usage
		v.Usage = &u
	}
	if !j.start.IsZero() {
		start := j.start
		v.Start = &start
		end := now
		if !j.end.IsZero() {
			e := j.end
			v.End = &e
			end = e
		}
		v.Elapsed = Duration{end.Sub(start)}
		for _, r := range j.ranks {
			v.Nodes = append(v.Nodes, r.Node)
		}
	}
	return v
}

// finishing reports whether the job is being ended (cancelled, failed,
// timed out) and waits only for its ranks to go.
func (j *jobRecord) finishing() bool { return j.ending != "" }
