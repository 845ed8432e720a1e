package metrics

import (
	"fmt"
	"time"
)

// RuntimeBinEdges are the upper edges of the runtime bins: decades of
// minutes. Bin i holds the jobs with edges[i-1] ≤ runtime < edges[i]
// (edges[-1] = 0); the last bin, from the last edge up, is open.
var RuntimeBinEdges = []time.Duration{time.Minute, 10 * time.Minute, 100 * time.Minute, 1000 * time.Minute}

// RuntimeBin returns the bin of a dedicated runtime (see RuntimeBinEdges).
func RuntimeBin(runtime time.Duration) int {
	for i, e := range RuntimeBinEdges {
		if runtime < e {
			return i
		}
	}
	return len(RuntimeBinEdges)
}

// RuntimeBinLabel names bin i: "[0,1m)", "[1m,10m)", …, "[1000m,∞)".
func RuntimeBinLabel(i int) string {
	lo := "0"
	if i > 0 {
		lo = fmt.Sprintf("%dm", int(RuntimeBinEdges[i-1]/time.Minute))
	}
	hi := "∞"
	if i < len(RuntimeBinEdges) {
		hi = fmt.Sprintf("%dm", int(RuntimeBinEdges[i]/time.Minute))
	}
	return "[" + lo + "," + hi + ")"
}

// Bin holds the metrics of the jobs of one runtime bin.
type Bin struct {
	Label           string `json:"runtime"`
	Jobs            int    `json:"jobs"`
	Wait            Stat   `json:"wait_s"`
	Response        Stat   `json:"response_s"`
	Slowdown        Stat   `json:"slowdown"`
	BoundedSlowdown Stat   `json:"bounded_slowdown"`
	// Utilization is the bin's share of the machine over the whole run's
	// makespan: Σ processors × runtime of its jobs / (processors × makespan).
	// The bins' utilizations add up to the run's.
	Utilization float64 `json:"utilization"`
	SumFlow     float64 `json:"sum_flow_s"`
}

// ByRuntime computes the metrics of every runtime bin, the empty ones
// included, in bin order.
func (c *Collector) ByRuntime() []Bin {
	n := len(RuntimeBinEdges) + 1
	idx := make([][]int, n)
	wait, resp, run := c.columns()
	for i := range c.n {
		b := RuntimeBin(time.Duration(run(i) * float64(time.Second)))
		idx[b] = append(idx[b], i)
	}
	makespan := (c.last - c.first).Seconds()
	bins := make([]Bin, n)
	so := new(sorter)
	for b := range bins {
		bins[b] = Bin{Label: RuntimeBinLabel(b), Jobs: len(idx[b])}
		if len(idx[b]) == 0 {
			continue
		}
		fill := func(f func(i int) float64) Stat {
			return so.stat(len(idx[b]), func(k int) float64 { return f(idx[b][k]) })
		}
		tau := c.tau.Seconds()
		bins[b].Wait = fill(wait)
		bins[b].Response = fill(resp)
		bins[b].Slowdown = fill(func(i int) float64 { return slowdown(resp(i), run(i)) })
		bins[b].BoundedSlowdown = fill(func(i int) float64 { return boundedSlowdown(resp(i), run(i), tau) })
		for _, i := range idx[b] {
			bins[b].SumFlow += resp(i)
		}
		if makespan > 0 && c.procs > 0 {
			bins[b].Utilization = c.binWork[b] / (float64(c.procs) * makespan)
		}
	}
	return bins
}
