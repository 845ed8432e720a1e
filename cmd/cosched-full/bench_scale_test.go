package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cosched/cosched/bench/measure"
)

// BenchmarkStrobe32Agents runs `cosched bench strobe` with 32 real agent
// processes on this machine (loopback) at 10 ms slices, strobed directly
// (today's design, the baseline) and along a 4-ary tree, and reports per
// run: lost/kslice, strobes lost per 1,000 applied; skew-p99-µs and
// latency-p99-µs, the switch skew across agents and the controller's send
// to an agent's switch. One run per sub-benchmark (b.N is not used: a run
// starts a cluster). It is a benchmark, not a test, because a 2-core
// machine shared with other work decides the figures: `make test` does
// not start 32 agents.
func BenchmarkStrobe32Agents(b *testing.B) {
	for _, k := range []int{0, 4} {
		name := "direct"
		if k > 0 {
			name = fmt.Sprintf("tree-k%d", k)
		}
		b.Run(name, func(b *testing.B) {
			cmd := coschedCmd("bench", "strobe", "-n", "32", "--slice", "10ms", "--duration", "5s", "--mpl", "2",
				"--strobe-fanout", fmt.Sprint(k), "--json")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("bench strobe: %v\n%s", err, stderr.String())
			}
			var rep measure.StrobeReport
			if err := json.Unmarshal(out, &rep); err != nil {
				b.Fatalf("report: %v\n%s", err, out)
			}
			if rep.Agents != 32 || rep.Fanout != k || rep.Applied == 0 {
				b.Fatalf("report %+v", rep)
			}
			b.ReportMetric(float64(rep.Lost)*1000/float64(rep.Applied), "lost/kslice")
			b.ReportMetric(float64(rep.Lost), "lost")
			b.ReportMetric(float64(rep.Skew.P99.Microseconds()), "skew-p99-µs")
			b.ReportMetric(float64(rep.Skew.P50.Microseconds()), "skew-p50-µs")
			b.ReportMetric(float64(rep.Latency.P99.Microseconds()), "latency-p99-µs")
			b.ReportMetric(float64(rep.Slices), "slices")
		})
	}
}
