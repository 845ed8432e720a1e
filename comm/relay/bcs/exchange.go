package bcs

import "github.com/cosched/cosched/comm/relay/barrier"

// The rooted exchange's readiness: whether a slice's control data is
// complete at a node, so that it may send the slice's transfer (and, at a
// job's root, the job's sliceReady) before the heartbeat timeout.

// Job is a job as a node's exchange sees it.
type Job struct {
	ID    int64
	Hosts []string        // its nodes, sorted
	Left  map[string]bool // those that left it (their ranks all ended there)
}

// Root is the node that hears the job's heartbeats and answers each
// slice with the job's sliceReady (barrier.Root): its first node that has
// not left it.
func (j Job) Root() string { return barrier.Root(j.Hosts, func(n string) bool { return j.Left[n] }) }

// Heard is what a node has heard of one slice.
type Heard struct {
	Self     string
	Known    func(node string) bool // the node's relay address is known (unknown ones are not waited for)
	Reported func(node string) bool // its heartbeat for the slice is in
	Ready    func(job int64) bool   // the job's sliceReady for the slice is in (from its root)
}

// AllReported says whether every other node of j, known and not left,
// has sent its heartbeat for the slice: a root may answer it.
func AllReported(j Job, h Heard) bool {
	for _, n := range j.Hosts {
		if n != h.Self && !j.Left[n] && h.Known(n) && !h.Reported(n) {
			return false
		}
	}
	return true
}

// Exchanged says whether the slice's control data is complete at the
// node for every job: at a job's root, every other node's heartbeat is
// in (or the job's sliceReady came from its previous root, which answered
// the slice before leaving); elsewhere, the root's sliceReady is in,
// unless the root is not known by address yet.
func Exchanged(jobs []Job, h Heard) bool {
	for _, j := range jobs {
		root := j.Root()
		switch {
		case root == h.Self:
			if !h.Ready(j.ID) && !AllReported(j, h) {
				return false
			}
		case h.Known(root) && !h.Ready(j.ID):
			return false
		}
	}
	return true
}
