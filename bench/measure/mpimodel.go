package measure

import (
	"fmt"
	"math"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/bench/experiment"
)

// collMessages is the messages one collective call of a rank sends on
// cosched's library, by the Allreduce the workloads use (a reduce to the
// root, then a broadcast: 2(n−1) messages over n ranks): what is taken
// off a blocking program's exchanges.
func collMessages(n int) float64 { return 2 * float64(n-1) / float64(n) }

// DeriveMPIModel maps a calibration onto the simulator's templates:
//
//   - comm: news (the nearest-neighbour exchange, MessagesPerIteration
//     messages per rank per iteration) when the ranks sent messages
//     beyond their collectives; barrier when they only met at
//     collectives, or never communicated (then one iteration).
//   - sync: NB (exchanges posted together, completed at a collective)
//     when the ranks made at least one collective per two iterations'
//     worth of exchanges, else B; p.Sync overrides it.
//   - iterations: NB and barrier, the collectives per rank (each
//     completes an iteration); B, the exchanges per rank (messages less
//     those of the collectives) over the pattern's messages per iteration.
//   - g: the calibrated runtime over the iterations, less the simulated
//     network's cost of an iteration; v: p.Imbalance (0 unless given).
//
// The model's dedicated runtime on net is then the calibrated runtime,
// whatever part of it was computation.
func DeriveMPIModel(p MPIProgram, c experiment.MPICalibration, net bench.Network) (experiment.MPIModel, error) {
	n := max(c.Ranks, 1)
	if c.Runtime <= 0 {
		return experiment.MPIModel{}, fmt.Errorf("%s: calibration: runtime %v", p.Name, c.Runtime)
	}
	perRank := func(x uint64) float64 { return float64(x) / float64(n) }
	coll := perRank(c.Collectives)
	t := bench.Template{Imbalance: p.Imbalance, Pattern: bench.News, Sync: bench.Blocking}
	m := experiment.MPIModel{}
	perIter := float64(bench.MessagesPerIteration(bench.News, 0, n))
	exchanges := 0.0 // point-to-point messages per rank
	if n > 1 {
		exchanges = math.Max(0, perRank(c.Sent)-coll*collMessages(n))
	}
	rounds := 0.0 // exchange rounds
	if perIter > 0 {
		rounds = exchanges / perIter
	}
	iters := 0.0
	switch {
	case n == 1 || (exchanges < 1 && coll < 1):
		t.Pattern, iters = bench.Barrier, 1
		m.Why = "no messages: one compute phase"
		if n == 1 {
			m.Why = "one rank: one compute phase"
		}
	case rounds < 1:
		t.Pattern, iters = bench.Barrier, coll
		m.Why = fmt.Sprintf("only collectives (%.0f per rank): barrier, one per iteration", coll)
	default:
		t.Sync = bench.Blocking
		if coll >= rounds/2 {
			t.Sync = bench.NonBlocking
		}
		if p.Sync != "" {
			t.Sync = p.Sync
		}
		iters = rounds
		if t.Sync == bench.NonBlocking {
			iters = coll
		}
		m.Why = fmt.Sprintf("%.0f exchanges and %.0f collectives per rank, %.0f B each: %s", exchanges, coll, float64(c.SentBytes)/math.Max(float64(c.Sent), 1),
			map[bench.Sync]string{bench.Blocking: "blocking rounds of news", bench.NonBlocking: "news posted together, one collective per iteration"}[t.Sync])
		if p.Sync != "" {
			m.Why += " (sync given)"
		}
	}
	if t.Pattern == bench.Barrier {
		t.Sync = bench.NonBlocking
		if p.Sync != "" {
			t.Sync = p.Sync
		}
	}
	m.Iterations = max(1, int(math.Round(iters)))
	// g: what is left of an iteration once the network's share is paid.
	per := c.Runtime / time.Duration(m.Iterations)
	comm := bench.IterationEstimate(bench.Template{Imbalance: t.Imbalance, Pattern: t.Pattern, Sync: t.Sync}, n, net)
	t.Grain = (per - comm).Round(time.Microsecond)
	if floor := max(t.Imbalance/2, 10*time.Microsecond); t.Grain < floor {
		t.Grain = floor
		m.Why += "; faster than the simulated network: compute floored"
	}
	if err := t.Validate(); err != nil {
		return experiment.MPIModel{}, fmt.Errorf("%s: model: %w", p.Name, err)
	}
	m.Template = t.String()
	m.Runtime = time.Duration(m.Iterations) * bench.IterationEstimate(t, n, net)
	if got := bench.Iterations(t, n, net, m.Runtime); got != m.Iterations {
		return experiment.MPIModel{}, fmt.Errorf("%s: model: %d iterations round-trip to %d", p.Name, m.Iterations, got)
	}
	return m, nil
}
