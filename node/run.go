package node

import (
	"context"

	"go.uber.org/zap"
)

// Run is the life of an agent process: it starts an agent (StartContext),
// calls ready with it once it serves (a ready file for whoever started the
// process; nil: none), keeps it until ctx ends (a signal) or it stops by
// itself, and shuts it down; with Config.KeepRanks a signal detaches it
// instead (Detach: its ranks go on for its next start).
func Run(ctx context.Context, cfg Config, ready func(*Agent) error) error {
	a, err := StartContext(ctx, cfg)
	if err != nil {
		return err
	}
	if ready != nil {
		if err := ready(a); err != nil {
			a.Shutdown()
			return err
		}
	}
	select {
	case <-ctx.Done():
		if cfg.KeepRanks {
			// A restart or an upgrade must not cost the jobs: the ranks
			// stay with their keepers (docs/runtime.md).
			a.log.Info("signal received: leaving the cluster; kept ranks go on for the next start", zap.Error(context.Cause(ctx)))
			return a.Detach()
		}
		a.log.Info("signal received: leaving the cluster and stopping ranks", zap.Error(context.Cause(ctx)))
	case <-a.Done():
	}
	return a.Shutdown()
}
