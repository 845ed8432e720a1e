package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/cosched/cosched/node/journal"
)

// controlGroupConfig places a controller-eligible agent's journal.
type controlGroupConfig struct {
	Name      string       // the agent's name: its id in the group
	Dir       string       // the journal's directory
	Bind      string       // the raft TCP address to listen on
	Listener  net.Listener // or this listener (then Bind is ignored)
	Advertise string       // the raft address others dial ("" = the listener's)
	// Expect is how many controller-eligible agents form a new group
	// (bootstrap-expect): 1 starts a lone controller at once; N waits until
	// gossip shows N eligible agents, then they all bootstrap with the same
	// N (the first N by name). A journal that already belongs to a group
	// ignores it: membership lives in the journal.
	Expect int
	// Compact returns the fewest records that rebuild what records build
	// (the controller's snapshot); nil keeps every record.
	Compact func(records [][]byte) ([][]byte, error)
	Timing  journal.Timing
	Log     *zap.Logger
}

// controlGroup is a controller-eligible agent's seat in the controllers'
// raft group: its journal and record log, how the group forms and grows
// from gossip, and who leads. The agent that leads runs the controller over
// the records; the others only keep the records current.
//
// Growth: the leader makes every eligible agent gossip shows a voter (a
// new one, or one whose raft address changed). Removal: a controller that
// is gone for good stays a voter (and counts toward the majority) until an
// operator removes it (Remove: `cosched operator raft remove-peer`), or
// the leader does after Config.DeadControllerAfter (autopilot.go).
type controlGroup struct {
	cfg     controlGroupConfig
	j       *journal.Journal
	records *recordLog

	mu           sync.Mutex
	bootstrapped bool
}

// openControlGroup opens the agent's journal. A lone controller (Expect 1)
// returns once it leads with every record restored.
func openControlGroup(ctx context.Context, cfg controlGroupConfig) (*controlGroup, error) {
	if cfg.Expect < 1 {
		return nil, fmt.Errorf("node: %d controllers expected: want at least 1", cfg.Expect)
	}
	g := &controlGroup{cfg: cfg, records: &recordLog{compact: cfg.Compact}}
	j, err := journal.Open(ctx, journal.Config{
		Dir: cfg.Dir, NodeID: cfg.Name, Bind: cfg.Bind, Listener: cfg.Listener, Advertise: cfg.Advertise,
		Bootstrap: cfg.Expect == 1, FSM: g.records, Timing: cfg.Timing, Logger: cfg.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("node: controller journal: %w", err)
	}
	g.j = j
	g.bootstrapped = cfg.Expect == 1
	return g, nil
}

// RaftAddr is the address the other controllers reach this one's journal at.
func (g *controlGroup) RaftAddr() string { return g.j.Addr() }

// Journal is the group's journal.
func (g *controlGroup) Journal() *journal.Journal { return g.j }

// Records are the controller's records, to rebuild it from.
func (g *controlGroup) Records() [][]byte {
	r, _ := g.records.Records()
	return r
}

// Eligible is a controller-eligible agent gossip knows.
type Eligible struct {
	Name     string
	RaftAddr string
}

// MembersChanged tells the group which controller-eligible agents gossip
// shows now (this one included). It bootstraps a new group once Expect of
// them are known, and, on the leader, adds the ones the group lacks. It
// may wait for a commit: call it from the membership loop, not a lock.
func (g *controlGroup) MembersChanged(ctx context.Context, eligible []Eligible) error {
	eligible = slices.Clone(eligible)
	slices.SortFunc(eligible, func(a, b Eligible) int { return strings.Compare(a.Name, b.Name) })
	g.mu.Lock()
	bootstrapped := g.bootstrapped
	g.mu.Unlock()
	if !bootstrapped && len(eligible) >= g.cfg.Expect {
		peers := make([]journal.Peer, 0, g.cfg.Expect)
		for _, e := range eligible[:g.cfg.Expect] {
			peers = append(peers, journal.Peer{ID: e.Name, Addr: e.RaftAddr})
		}
		if slices.ContainsFunc(peers, func(p journal.Peer) bool { return p.ID == g.cfg.Name }) {
			if err := g.j.Bootstrap(ctx, peers); err != nil {
				return fmt.Errorf("node: forming the controller group: %w", err)
			}
			g.cfg.Log.Info("controller group formed", zap.Any("voters", peers))
		}
		// An agent beyond the first Expect is added by the leader.
		g.mu.Lock()
		g.bootstrapped = true
		g.mu.Unlock()
	}
	if !g.j.IsLeader() {
		return nil
	}
	servers, err := g.j.Servers(ctx)
	if err != nil {
		return fmt.Errorf("node: controller group: %w", err)
	}
	for _, e := range eligible {
		if e.RaftAddr == "" || slices.Contains(servers, journal.Server{ID: e.Name, Addr: e.RaftAddr, Voter: true}) {
			continue
		}
		if err := g.j.AddVoter(ctx, e.Name, e.RaftAddr); err != nil {
			return fmt.Errorf("node: adding controller %s: %w", e.Name, err)
		}
		g.cfg.Log.Info("controller joined the group", zap.String("controller", e.Name), zap.String("raft", e.RaftAddr))
	}
	return nil
}

// Errors of Remove.
var (
	errUnknownPeer  = errors.New("not in the controllers' raft group")
	errRemoveLeader = errors.New("leads the controllers' raft group, and the leader is not removed (stop its agent: once another controller leads, remove it)")
)

// Remove removes the controller name from the group (the leader only:
// elsewhere a *journal.NotLeaderError). It refuses this server, the
// leader, and a name the group does not have. It waits for the new
// configuration to commit.
func (g *controlGroup) Remove(ctx context.Context, name string) error {
	if !g.j.IsLeader() {
		return &journal.NotLeaderError{Leader: g.j.Leader()}
	}
	if name == g.cfg.Name {
		return fmt.Errorf("controller %s %w", name, errRemoveLeader)
	}
	servers, err := g.j.Servers(ctx)
	if err != nil {
		return fmt.Errorf("node: controller group: %w", err)
	}
	if !slices.ContainsFunc(servers, func(s journal.Server) bool { return s.ID == name }) {
		return fmt.Errorf("controller %s: %w", name, errUnknownPeer)
	}
	if err := g.j.RemoveServer(ctx, name); err != nil {
		return fmt.Errorf("node: removing controller %s: %w", name, err)
	}
	g.cfg.Log.Info("controller removed from the group", zap.String("controller", name))
	return nil
}

// Close leaves abruptly (to the others it looks like a crash; a leader is
// replaced within about a second).
func (g *controlGroup) Close() error { return g.j.Close() }
