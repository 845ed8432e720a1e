package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/cosched/cosched/gang/hosts"
	"github.com/cosched/cosched/jss"
)

// writeHosts describes each run on hosts of different sizes below the
// table: the hosts, the jobs no host could hold, and what immediate
// service or EQspatial did.
func writeHosts(b *strings.Builder, results []jss.TraceResult) {
	for i := range results {
		h := results[i].Hosts
		if h == nil {
			continue
		}
		pad := strings.Repeat(" ", len(results[i].Policy))
		var hs []string
		for _, x := range h.Hosts {
			hs = append(hs, fmt.Sprintf("%s %d/%s", x.Name, x.Processors, hosts.FormatMemory(x.Memory)))
		}
		fmt.Fprintf(b, "\n%s  hosts (processors/memory): %s\n", results[i].Policy, strings.Join(hs, ", "))
		secs := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
		if is := h.IS; is != nil {
			fmt.Fprintf(b, "%s  immediate service (quantum %v, memory ≤ %s, victims run > %v): %s quanta, %s done in the quantum, %s killed and queued; %s preemptions; %s processor-s lost\n",
				pad, secs(is.Quantum), hosts.FormatMemory(is.Memory), secs(is.MinRun), group(float64(is.Quanta), 0), group(float64(is.Done), 0),
				group(float64(is.Killed), 0), group(float64(is.Preemptions), 0), group(is.Lost, 0))
		}
		if eq := h.EQ; eq != nil {
			full := "off"
			if eq.FullAfter > 0 {
				full = secs(eq.FullAfter).String()
			}
			fmt.Fprintf(b, "%s  repartitions at most every %v (full request after %s): %s repartitions, at most %d jobs on a host\n",
				pad, secs(eq.Interval), full, group(float64(eq.Repartitions), 0), eq.MaxConcurrency)
		}
	}
}
