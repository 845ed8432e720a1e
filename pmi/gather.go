package pmi

import (
	"fmt"
	"slices"
)

// Gather completes a job's barriers across agents: each agent hosting
// ranks of the job sends its Barrier once all its ranks have entered; the
// barrier ends when every agent has, with the union of their puts. Pure;
// not safe for concurrent use.
type Gather struct {
	nodes   []string
	epoch   uint64
	arrived map[string]bool
	puts    map[string]string
	bytes   int
	last    *Barrier // the barrier that ended last, for a node that asks again
}

// NewGather gathers the barriers of a job whose ranks live on nodes.
func NewGather(nodes []string) *Gather {
	ns := slices.Clone(nodes)
	slices.Sort(ns)
	return &Gather{nodes: slices.Compact(ns), arrived: map[string]bool{}, puts: map[string]string{}}
}

// In records node's part of the current barrier. When it was the last,
// done is the whole job's barrier and to every node of the job; the next
// barrier starts. Agents re-send a pending part to a controller that
// connects, not knowing whether it arrived or whether the end was lost
// with a connection: a part the gather already has is ignored, and a part
// of the barrier that just ended gets that barrier again, to that node
// only. An error (unknown node, another barrier, too many bytes) means the
// job cannot go on.
func (g *Gather) In(node string, b Barrier) (done *Barrier, to []string, err error) {
	if !slices.Contains(g.nodes, node) {
		return nil, nil, fmt.Errorf("PMI barrier from %s, which hosts no rank of the job", node)
	}
	if g.last != nil && b.Epoch == g.last.Epoch {
		return g.last, []string{node}, nil
	}
	if g.last == nil && len(g.arrived) == 0 {
		// A gather that has seen nothing yet starts at the first part's
		// barrier: a restarted controller meets jobs past their first
		// barriers (their ranks outlived agents: node, KeepRanks).
		g.epoch = b.Epoch
	}
	if b.Epoch != g.epoch {
		return nil, nil, fmt.Errorf("PMI barrier %d from %s while barrier %d is open", b.Epoch, node, g.epoch)
	}
	if g.arrived[node] {
		return nil, nil, nil
	}
	g.arrived[node] = true
	for k, v := range b.Puts {
		g.bytes += len(k) + len(v)
		g.puts[k] = v
	}
	if g.bytes > MaxBarrierBytes {
		return nil, nil, fmt.Errorf("PMI barrier %d: the job put %d bytes, more than %d", b.Epoch, g.bytes, MaxBarrierBytes)
	}
	if len(g.arrived) < len(g.nodes) {
		return nil, nil, nil
	}
	done = &Barrier{Epoch: g.epoch, Puts: g.puts}
	g.last = done
	g.epoch++
	g.arrived, g.puts, g.bytes = map[string]bool{}, map[string]string{}, 0
	return done, slices.Clone(g.nodes), nil
}

// Nodes are the agents hosting the job's ranks.
func (g *Gather) Nodes() []string { return slices.Clone(g.nodes) }
