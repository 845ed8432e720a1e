package pmi

import (
	"fmt"
	"strings"
)

// ProcessMapping renders MPICH's PMI_process_mapping value for a job whose
// rank r runs on nodes[r]: "(vector,(node,count,ranks),…)", where each
// block gives count consecutive nodes (numbered in order of first
// appearance) ranks consecutive ranks each. MPICH reads it to learn which
// ranks share a node (shared memory between them).
func ProcessMapping(nodes []string) string {
	ids := map[string]int{}
	type block struct{ node, count, ranks int }
	var blocks []block
	for i := 0; i < len(nodes); {
		n := i
		for n < len(nodes) && nodes[n] == nodes[i] {
			n++
		}
		id, ok := ids[nodes[i]]
		if !ok {
			id = len(ids)
			ids[nodes[i]] = id
		}
		run := n - i
		if k := len(blocks) - 1; k >= 0 && blocks[k].ranks == run && blocks[k].node+blocks[k].count == id {
			blocks[k].count++
		} else {
			blocks = append(blocks, block{id, 1, run})
		}
		i = n
	}
	var b strings.Builder
	b.WriteString("(vector")
	for _, bl := range blocks {
		fmt.Fprintf(&b, ",(%d,%d,%d)", bl.node, bl.count, bl.ranks)
	}
	b.WriteString(")")
	return b.String()
}

// LocalRanks gives each rank's index among the ranks of its node, and the
// number of ranks on its node.
func LocalRanks(nodes []string) (local, perNode []int) {
	seen := map[string]int{}
	local = make([]int, len(nodes))
	for r, n := range nodes {
		local[r] = seen[n]
		seen[n]++
	}
	perNode = make([]int, len(nodes))
	for r, n := range nodes {
		perNode[r] = seen[n]
	}
	return local, perNode
}
