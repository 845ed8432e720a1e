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
}

// NewGather gathers the barriers of a job whose ranks live on nodes.
func NewGather(nodes []string) *Gather {
	ns := slices.Clone(nodes)
	slices.Sort(ns)
	return &Gather{nodes: slices.Compact(ns), arrived: map[string]bool{}, puts: map[string]string{}}
}

// In records node's part of the current barrier. When it was the last,
// done is the whole job's barrier, to deliver to every node (Nodes); the
// next barrier starts. A node's part arriving again is ignored (an agent
// re-sends pending barriers to a controller that reconnects). An error
// (unknown node, wrong barrier, too many bytes) means the job cannot go
// on.
func (g *Gather) In(node string, b Barrier) (done *Barrier, err error) {
	if !slices.Contains(g.nodes, node) {
		return nil, fmt.Errorf("PMI barrier from %s, which hosts no rank of the job", node)
	}
	if b.Epoch != g.epoch {
		return nil, fmt.Errorf("PMI barrier %d from %s while barrier %d is open", b.Epoch, node, g.epoch)
	}
	if g.arrived[node] {
		// The same part again: the agent re-sends its pending barrier
		// to a controller that connects (it cannot know whether the
		// first copy arrived).
		return nil, nil
	}
	g.arrived[node] = true
	for k, v := range b.Puts {
		g.bytes += len(k) + len(v)
		g.puts[k] = v
	}
	if g.bytes > MaxBarrierBytes {
		return nil, fmt.Errorf("PMI barrier %d: the job put %d bytes, more than %d", b.Epoch, g.bytes, MaxBarrierBytes)
	}
	if len(g.arrived) < len(g.nodes) {
		return nil, nil
	}
	done = &Barrier{Epoch: g.epoch, Puts: g.puts}
	g.epoch++
	g.arrived, g.puts, g.bytes = map[string]bool{}, map[string]string{}, 0
	return done, nil
}

// Nodes are the agents a completed barrier goes to.
func (g *Gather) Nodes() []string { return slices.Clone(g.nodes) }
