package node_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/sharing"
)

// BenchmarkOpenMPIGangSlices runs the Open MPI check program in its
// communication-heavy loop (a ring, a 256 KiB ping-pong and six
// collectives per round; pmix/testdata/check.c), two ranks on two agents
// of one processor, alone and as two copies at MPL 2 in gang mode, for
// 10 ms and 100 ms slices: whether SIGSTOP between slices breaks or
// stalls Open MPI's TCP and shared-memory transports, and what sharing
// costs. The program times its own rounds; it reports dedicated-s,
// mpl2-s (the mean of the two copies) and their ratio (ideal 2).
//
//	go test -run=^$ -bench=OpenMPIGangSlices -benchtime=1x -timeout 30m ./node/
func BenchmarkOpenMPIGangSlices(b *testing.B) {
	lib, check := pmixKit(b)
	const rounds = "300"
	for _, slice := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond} {
		b.Run(slice.String(), func(b *testing.B) {
			var dedicated, shared float64
			for range b.N {
				c := pmixCluster(b, lib, clusterOpts{agents: 2, processors: 1, mode: sharing.Gang, mpl: 2, slice: slice, priority: 50})
				run := func(copies int) float64 {
					var ids []int64
					for range copies {
						ids = append(ids, c.submit(api.JobSpec{Command: []string{check, "loop", rounds}, Processors: 2, MPI: api.MPIPMIx, Env: ompiEnv,
							TimeLimit: api.Duration{D: 10 * time.Minute}}))
					}
					sum := 0.0
					for _, id := range ids {
						c.waitState(id, api.Completed, 10*time.Minute)
						sum += checksSeconds(b, c.rankOutput(id, 0))
						c.waitGone(id)
					}
					return sum / float64(copies)
				}
				run(1) // warm-up
				dedicated += run(1)
				shared += run(2)
				c.stop()
			}
			n := float64(b.N)
			b.ReportMetric(dedicated/n, "dedicated-s")
			b.ReportMetric(shared/n, "mpl2-s")
			b.ReportMetric(shared/dedicated, "mpl2/dedicated")
		})
	}
}

var checksRE = regexp.MustCompile(`checks ([0-9.]+) s`)

func checksSeconds(b *testing.B, out string) float64 {
	b.Helper()
	m := checksRE.FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("no timing in %q", out)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		b.Fatal(fmt.Errorf("timing %q: %w", m[1], err))
	}
	return v
}
