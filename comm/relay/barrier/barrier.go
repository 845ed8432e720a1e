// Package barrier counts a BCS job's barrier arrivals at one node, the
// job's root, instead of at every node of the job. It is pure: no I/O,
// clock or goroutines. The relay (package relay) is its shell: it feeds
// the arrival reports that heartbeats carry, and when a barrier completes
// it releases its own ranks and sends the release to the job's other
// nodes. The scale simulation in package strobe drives the same code.
//
// Why a root: when every node counts every other node's reports, a job
// of J nodes needs each node's heartbeat at each of the others (J² reports
// a slice) before all of them release, and a node that missed one report
// waits a slice more. Counted at the root, a barrier needs J reports at
// one node and J − 1 releases from it.
package barrier

import "slices"

// MaxAhead bounds how far past the last released barrier a report may be:
// a rank arrives at barrier s+1 only after s was released on its node, so
// an honest report is at most a couple of barriers ahead. Reports come
// off the network; further ones are ignored so that they cannot grow the
// table without bound.
const MaxAhead = 8

// Root returns the node that counts a job's barriers: the first of its
// hosts (sorted node names) that has not left the job (its ranks all
// ended there). It returns "" when every host has left.
func Root(hosts []string, left func(node string) bool) string {
	for _, h := range hosts {
		if left == nil || !left(h) {
			return h
		}
	}
	return ""
}

// Counter is one job's barrier count at its root. Nodes report their
// arrivals cumulatively (a node's count at a barrier only grows until the
// barrier is released), so a report that is lost or repeated only delays
// or repeats, never double-counts. The zero value is not usable: use
// NewCounter.
type Counter struct {
	size     int
	released uint64
	reports  map[uint64]map[string]int // by barrier, by node: ranks arrived
}

// NewCounter returns a counter for a job of size ranks.
func NewCounter(size int) *Counter {
	return &Counter{size: size, reports: map[uint64]map[string]int{}}
}

// Report records that arrived ranks of node are in barrier seq. It
// returns true when that completes the barrier: every rank of the job is
// in it and it was not released before. The caller then releases it
// (Release) and tells the job's nodes.
func (c *Counter) Report(node string, seq uint64, arrived int) (complete bool) {
	if seq <= c.released || seq > c.released+MaxAhead || arrived <= 0 {
		return false
	}
	rep := c.reports[seq]
	if rep == nil {
		rep = map[string]int{}
		c.reports[seq] = rep
	}
	if arrived <= rep[node] {
		return false
	}
	rep[node] = arrived
	total := 0
	for _, n := range rep {
		total += n
	}
	return total >= c.size
}

// Release marks every barrier up to seq done (this node released it, or
// learnt that another did) and forgets their reports. It returns false
// if seq was released already.
func (c *Counter) Release(seq uint64) bool {
	if seq <= c.released {
		return false
	}
	c.released = seq
	for s := range c.reports {
		if s <= seq {
			delete(c.reports, s)
		}
	}
	return true
}

// Released is the highest barrier released.
func (c *Counter) Released() uint64 { return c.released }

// Open returns the barriers with reports not yet released, in order.
func (c *Counter) Open() []uint64 {
	open := make([]uint64, 0, len(c.reports))
	for s := range c.reports {
		open = append(open, s)
	}
	slices.Sort(open)
	return open
}
