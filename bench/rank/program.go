package rank

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/comm"
)

// Program is one rank of a benchmark job run as its own process: it
// connects to its agent's relay (comm.Init), runs the iterations, reports
// its statistics to the agent and prints one summary line.
type Program struct {
	Config Config
	// Runtime, when positive, is a target dedicated runtime that gives
	// Config.Iterations from the job's size (known only once connected),
	// over the default network with Config's message size.
	Runtime time.Duration
	// SeedFromJob makes the job id the seed (the simulator's per-job seed
	// for job number COSCHED_JOB in a workload of seed 0).
	SeedFromJob bool
}

// Run runs the rank and writes its summary line to out.
func (p Program) Run(ctx context.Context, out io.Writer) error {
	cm, err := comm.Init(ctx)
	if err != nil {
		return fmt.Errorf("bench-rank: connecting to the agent's relay (COSCHED_RELAY): %w", err)
	}
	cfg := p.Config
	if p.Runtime > 0 {
		net := bench.DefaultNetwork()
		net.MessageSize = cfg.messageSize()
		cfg.Iterations = bench.Iterations(cfg.Template, cm.Size(), net, p.Runtime)
	}
	if p.SeedFromJob {
		cfg.Seed = uint64(cm.Job())
	}
	// On an error the rank exits without Finalize: its relay fails the job,
	// so the other ranks do not wait for it forever.
	stats, err := Run(ctx, cm, cfg)
	if err != nil {
		return err
	}
	if err := cm.ReportStats(stats); err != nil {
		return fmt.Errorf("bench-rank: reporting statistics: %w", err)
	}
	if err := cm.Finalize(ctx); err != nil {
		return fmt.Errorf("bench-rank: finalize: %w", err)
	}
	_, err = fmt.Fprintln(out, Summary(cm.Rank(), cm.Size(), stats))
	return err
}

// Summary is the line a rank prints at the end.
func Summary(rank, size int, s comm.Stats) string {
	d := func(ns int64) time.Duration { return time.Duration(ns).Round(time.Microsecond) }
	return fmt.Sprintf("rank %d of %d: %d iterations, compute %v, comm wait %v, wall %v",
		rank, size, s.Iterations, d(s.Compute), d(s.CommWait), d(s.Wall))
}
