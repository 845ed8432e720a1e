package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/cosched/cosched/jss"
)

// writePFCFS describes each pfcfs run below the table: its parameters,
// what preemption did, and its flow metrics relative to plain FCFS.
func writePFCFS(b *strings.Builder, results []jss.TraceResult) {
	for i := range results {
		p := results[i].PFCFS
		if p == nil {
			continue
		}
		secs := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
		fmt.Fprintf(b, "\n%s  wide: ≥ %g%% of the machine (≥ %d processors); start delay %v, switch every %v, at most %d switches, penalty %v\n",
			results[i].Policy, p.WidePercent, p.WideFrom, secs(p.Delay), secs(p.Switch), p.Switches, secs(p.Penalty))
		fmt.Fprintf(b, "%s  %s wide jobs, %s started by preempting; %s preemptions\n", strings.Repeat(" ", len(results[i].Policy)),
			group(float64(p.WideJobs), 0), group(float64(p.Preempting), 0), group(float64(p.Preemptions), 0))
		if r := p.VsFCFS; r != nil {
			fmt.Fprintf(b, "%s  relative to fcfs: makespan %.3f, sum of flow times %.3f, weighted flow time %.3f\n", strings.Repeat(" ", len(results[i].Policy)),
				r.Makespan, r.SumFlow, r.WeightedFlow)
		}
	}
}
