package node

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/node/journal"
)

// Dead-controller clean-up (Config.DeadControllerAfter), as Consul's and
// Nomad's autopilot: the leader removes a voter whose agent gossip has not
// seen for longer than the setting, one at a time, and never one whose
// removal would leave fewer voters than a majority of the current group.

// goneSince tracks since when each server's agent has been absent from
// gossip (failed or left: memberlist does not tell them apart). It is a
// pure record: the caller gives the time.
type goneSince map[string]time.Time

// observe records who of servers gossip shows alive at now.
func (g goneSince) observe(servers []journal.Server, alive map[string]bool, now time.Time) {
	for _, s := range servers {
		if alive[s.ID] {
			delete(g, s.ID)
		} else if _, ok := g[s.ID]; !ok {
			g[s.ID] = now
		}
	}
	for name := range g {
		if !slices.ContainsFunc(servers, func(s journal.Server) bool { return s.ID == name }) {
			delete(g, name) // no longer in the group
		}
	}
}

// deadVoter is the voter to remove at now ("" if none): gone for longer
// than after, not self, the longest gone first (then by name), and only if
// the voters left after its removal are still a majority of the voters now.
func (g goneSince) deadVoter(servers []journal.Server, self string, now time.Time, after time.Duration) string {
	voters := 0
	for _, s := range servers {
		if s.Voter {
			voters++
		}
	}
	if voters-1 < voters/2+1 {
		return ""
	}
	var best string
	for _, s := range servers {
		since, gone := g[s.ID]
		if !s.Voter || s.ID == self || !gone || now.Sub(since) <= after {
			continue
		}
		if best == "" || since.Before(g[best]) || (since.Equal(g[best]) && strings.Compare(s.ID, best) < 0) {
			best = s.ID
		}
	}
	return best
}

// autopilotEvery is how often the clean-up looks at the group.
func autopilotEvery(after time.Duration) time.Duration {
	return min(max(after/4, 100*time.Millisecond), time.Second)
}

// removeDeadControllers runs the clean-up until ctx ends: every
// controller-eligible agent keeps track of who is gone (so a new leader
// knows), the leader removes.
func (a *Agent) removeDeadControllers(ctx context.Context) {
	after := a.cfg.DeadControllerAfter
	tick := time.NewTicker(autopilotEvery(after))
	defer tick.Stop()
	gone := goneSince{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		j := a.group.Journal()
		servers, err := j.Servers(ctx)
		if err != nil {
			continue // closing, or not yet in a group
		}
		now := time.Now()
		gone.observe(servers, a.alive(), now)
		if !j.IsLeader() {
			continue
		}
		name := gone.deadVoter(servers, a.cfg.Name, now, after)
		if name == "" {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = a.group.Remove(rctx, name)
		cancel()
		if err != nil {
			a.log.Warn("removing a dead controller", zap.String("controller", name), zap.Error(err))
			continue
		}
		a.controllersRemoved.WithLabelValues("autopilot").Inc()
		a.log.Warn("dead controller removed from the group", zap.String("controller", name),
			zap.Duration("gone", now.Sub(gone[name]).Round(time.Millisecond)), zap.Duration("dead_controller_after", after))
	}
}
