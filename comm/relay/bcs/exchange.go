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

// Ready is what a job's root tells one of the job's nodes about a slice
// (the relay's sliceReady frame): what the job's nodes transfer to it.
type Ready struct {
	Node  string
	Job   int64
	Msgs  int
	Bytes int64
}

// Answer is a job's root answering a slice once its nodes reported it
// (or its timeout passed): one Ready for each of the job's nodes that has
// not left it, other than the root, with the flows to it that the job's
// nodes announced in the slice (own: the root's; heard: every other
// node's heartbeat, by sender), sorted by node. A node's flow to itself
// is not announced: it never crosses the network.
func Answer(j Job, self string, own []Flow, heard map[string][]Flow) []Ready {
	out := map[string]*Ready{}
	var nodes []string
	for _, h := range j.Hosts {
		if h != self && !j.Left[h] {
			out[h] = &Ready{Node: h, Job: j.ID}
			nodes = append(nodes, h)
		}
	}
	add := func(from string, flows []Flow) {
		for _, f := range flows {
			if r := out[f.Node]; r != nil && f.Job == j.ID && f.Node != from {
				r.Msgs += f.Msgs
				r.Bytes += f.Bytes
			}
		}
	}
	add(self, own)
	for from, flows := range heard {
		add(from, flows)
	}
	rs := make([]Ready, 0, len(nodes))
	for _, n := range nodes {
		rs = append(rs, *out[n])
	}
	return rs
}

// Redirect is a heartbeat that a job's root hears too late for the
// slice's Answer (its timeout passed, it never cut the slice, or it left
// the job and the sender did not know yet): each of its flows of a job
// the root announces (mine) goes to its destination in a Ready of its
// own, so that what is announced is what arrives. Flows to the root
// itself, or that the sender sends itself, are not.
func Redirect(flows []Flow, from, self string, mine func(f Flow) bool) []Ready {
	var rs []Ready
	for _, f := range flows {
		if f.Node == self || f.Node == from || !mine(f) {
			continue
		}
		rs = append(rs, Ready(f))
	}
	return rs
}
