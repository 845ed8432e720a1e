package journal

import (
	"errors"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"
)

// Config says where a journal lives, who it is and whom it replicates with.
type Config struct {
	// Dir holds the journal: raft.db (log and raft's own state) and
	// snapshots/. Created if absent. One journal per directory: a second
	// Open of the same directory fails while the first is open.
	Dir string
	// NodeID names this server in the group. It must stay the same across
	// restarts of the same Dir (the agent's name is the natural choice).
	NodeID string
	// Bind is the TCP address raft listens on ("host:port"; port 0 picks
	// one). Ignored when Listener is set.
	Bind string
	// Listener, when set, is used instead of listening on Bind, so a caller
	// can reserve every peer's address before it opens any of them. Close
	// closes it.
	Listener net.Listener
	// Advertise is the address the other servers dial; default the
	// listener's address, which must then not be a wildcard (0.0.0.0).
	Advertise string
	// Bootstrap starts a new group when Dir holds no journal yet: with
	// Peers as its voters, or this server alone when Peers is empty. Every
	// peer of a new group may bootstrap with the same Peers. A Dir that
	// holds a journal is never bootstrapped again (Peers is then ignored:
	// membership lives in the journal).
	Bootstrap bool
	// Peers are the voters of a new group, this server included.
	Peers []Peer
	// FSM receives committed entries and takes and restores snapshots.
	FSM FSM
	// Timing is raft's clock; zero means DefaultLANTiming().
	Timing Timing
	// SnapshotEvery is how many entries may be committed after a snapshot
	// before the next one is taken (raft checks every SnapshotInterval).
	// Zero means 4096.
	SnapshotEvery uint64
	// SnapshotInterval is how often raft considers a snapshot; zero means
	// 30 s.
	SnapshotInterval time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log, so a
	// follower a little behind catches up without a whole snapshot. Zero
	// means 1024.
	TrailingLogs uint64
	// MaxSnapshotBytes bounds what Restore reads (a damaged size field must
	// not allocate without bound). Zero means 1 GiB.
	MaxSnapshotBytes int64
	// Logger receives raft's log lines under "raft"; nil discards them.
	Logger *zap.Logger
}

// Peer is one voter of a group.
type Peer struct {
	ID   string // its NodeID
	Addr string // its raft address (host:port)
}

// Timing is raft's clock. Failover takes about HeartbeatTimeout to
// 3×HeartbeatTimeout to notice the leader is gone (a follower's timer is
// random in [H, 2H) and restarts if the leader was heard less than H ago),
// plus one vote round trip, plus ElectionTimeout..2×ElectionTimeout again
// per split vote.
type Timing struct {
	// HeartbeatTimeout: a follower that has not heard from the leader for
	// this long stands for election. The leader sends heartbeats every
	// HeartbeatTimeout/10.
	HeartbeatTimeout time.Duration
	// ElectionTimeout: a candidate without a majority for this long (plus
	// up to as much at random) starts a new election.
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout: a leader that has not reached a majority for this
	// long steps down (so a partitioned leader stops acting as one).
	LeaderLeaseTimeout time.Duration
	// CommitTimeout: with no new entries, the leader tells followers the
	// commit index this often.
	CommitTimeout time.Duration
}

// DefaultLANTiming is for controllers on one LAN (round trips well under a
// millisecond) whose raft goroutines are not starved: half of raft's
// defaults (which are sized for WANs and busy Consul servers), so a lost
// leader is replaced in about 0.6 to 1.6 s, inside the 2 s goal even with
// one split vote in a typical case, while a leader still tolerates 250 ms
// (five missed heartbeats) of scheduling noise before stepping down.
func DefaultLANTiming() Timing {
	return Timing{
		HeartbeatTimeout:   500 * time.Millisecond,
		ElectionTimeout:    500 * time.Millisecond,
		LeaderLeaseTimeout: 250 * time.Millisecond,
		CommitTimeout:      20 * time.Millisecond,
	}
}

func (c *Config) withDefaults() Config {
	out := *c
	if out.Timing == (Timing{}) {
		out.Timing = DefaultLANTiming()
	}
	if out.SnapshotEvery == 0 {
		out.SnapshotEvery = 4096
	}
	if out.SnapshotInterval == 0 {
		out.SnapshotInterval = 30 * time.Second
	}
	if out.TrailingLogs == 0 {
		out.TrailingLogs = 1024
	}
	if out.MaxSnapshotBytes == 0 {
		out.MaxSnapshotBytes = 1 << 30
	}
	if out.Logger == nil {
		out.Logger = zap.NewNop()
	}
	return out
}

// validate lists every problem at once.
func (c *Config) validate() error {
	var errs []error
	if c.Dir == "" {
		errs = append(errs, errors.New("empty Dir"))
	}
	if c.NodeID == "" {
		errs = append(errs, errors.New("empty NodeID"))
	}
	if c.Listener == nil && c.Bind == "" {
		errs = append(errs, errors.New("neither Bind nor Listener is set"))
	}
	if c.FSM == nil {
		errs = append(errs, errors.New("nil FSM"))
	}
	seen := map[string]bool{}
	self := false
	for i, p := range c.Peers {
		if p.ID == "" || p.Addr == "" {
			errs = append(errs, fmt.Errorf("peer %d: ID and Addr are required", i))
		}
		if seen[p.ID] {
			errs = append(errs, fmt.Errorf("peer %d: ID %q appears twice", i, p.ID))
		}
		seen[p.ID] = true
		self = self || p.ID == c.NodeID
	}
	if len(c.Peers) > 0 && !self {
		errs = append(errs, fmt.Errorf("this server (%q) is not among Peers", c.NodeID))
	}
	t := c.Timing
	if t.HeartbeatTimeout < 5*time.Millisecond || t.ElectionTimeout < t.HeartbeatTimeout ||
		t.LeaderLeaseTimeout < 5*time.Millisecond || t.LeaderLeaseTimeout > t.HeartbeatTimeout ||
		t.CommitTimeout < time.Millisecond {
		errs = append(errs, fmt.Errorf("timing %+v: want HeartbeatTimeout ≥ 5ms, ElectionTimeout ≥ HeartbeatTimeout, 5ms ≤ LeaderLeaseTimeout ≤ HeartbeatTimeout, CommitTimeout ≥ 1ms", t))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journal: config: %w", err)
	}
	return nil
}
