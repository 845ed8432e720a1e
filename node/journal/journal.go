package journal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// MaxBatchBytes bounds one Append's encoded entries: a batch is one raft
// entry, replicated in one message and applied in one call.
const MaxBatchBytes = 8 << 20

// snapshotsRetained is how many snapshots stay on disk (the newest is used;
// the one before it is the fallback an operator may restore by hand).
const snapshotsRetained = 2

var (
	// ErrNotLeader: this server does not lead, so it cannot append; the
	// entries were not written. errors.As gives a *NotLeaderError naming
	// the leader if one is known.
	ErrNotLeader = errors.New("journal: not the leader")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("journal: closed")
)

// NotLeaderError says who leads instead (Leader is zero while no one does).
type NotLeaderError struct{ Leader Leader }

func (e *NotLeaderError) Error() string {
	if e.Leader.ID == "" {
		return "journal: not the leader (no leader elected)"
	}
	return fmt.Sprintf("journal: not the leader (%s at %s leads)", e.Leader.ID, e.Leader.Addr)
}

func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// Leader names the server that leads (zero when none is known).
type Leader struct {
	ID   string
	Addr string
}

// Server is a member of the group.
type Server struct {
	ID    string
	Addr  string
	Voter bool
}

// Journal is a durable log of opaque entries, replicated over a raft group
// of one or more servers. It is safe for concurrent use.
type Journal struct {
	cfg   Config
	raft  *raft.Raft
	store stores
	trans *raft.NetworkTransport
	fsm   *fsm

	obs      *raft.Observer
	done     chan struct{} // closed by Close
	observed chan raft.Observation
	changed  chan struct{} // capacity 1: "leadership changed, look again"

	mu          sync.Mutex
	closed      bool
	wg          sync.WaitGroup // the observer loop
	waiters     sync.WaitGroup // the goroutines awaiting raft's futures (await)
	leader      Leader
	leadersSeen uint64

	closeOnce sync.Once
	closeErr  error
}

// Open opens (or creates) the journal in cfg.Dir, checks it whole, restores
// the newest snapshot into cfg.FSM and joins the group.
//
// A damaged journal — a file that is not a journal database, a truncated
// one, a record whose checksum fails, a hole in the log, a snapshot whose
// description or data is damaged — fails Open with an error naming the file
// and the damage; Open never starts from an empty state instead.
//
// When this server is the group's only voter, Open returns once it leads
// and every committed entry has been applied to cfg.FSM (or ctx ends).
// With several voters it returns at once; the owner waits for LeaderChanged
// and, when it leads, calls Barrier before acting on its state.
func Open(ctx context.Context, cfg Config) (*Journal, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	snapIndex, _, err := verifySnapshots(c.Dir)
	if err != nil {
		return nil, err
	}
	store, err := openBoltStore(filepath.Join(c.Dir, logFile), snapIndex)
	if err != nil {
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(c.Dir, snapshotsRetained, newRaftLogger(c.Logger))
	if err != nil {
		_ = store.close()
		return nil, fmt.Errorf("journal: %s: %w", filepath.Join(c.Dir, snapshotDir), err)
	}
	return open(ctx, c, stores{logs: store, stable: store, snaps: snaps, close: store.close, size: store.size})
}

// stores are what raft keeps its state in.
type stores struct {
	logs   raft.LogStore
	stable raft.StableStore
	snaps  raft.SnapshotStore
	close  func() error
	size   func() int64 // the log's bytes on disk
}

// open starts raft over store. It owns store (and c.Listener): when it
// fails, they are closed.
func open(ctx context.Context, c Config, store stores) (*Journal, error) {
	hl := newRaftLogger(c.Logger)
	ln := c.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", c.Bind); err != nil {
			_ = store.close()
			return nil, fmt.Errorf("journal: %w", err)
		}
	}
	stream, err := newStreamLayer(ln, c.Advertise)
	if err != nil {
		_ = ln.Close()
		_ = store.close()
		return nil, err
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		MaxPool: 3,
		Timeout: time.Second,
		Logger:  hl,
	})
	fail := func(err error) (*Journal, error) {
		_ = trans.Close()
		_ = store.close()
		return nil, err
	}
	snaps := store.snaps
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout = c.Timing.HeartbeatTimeout
	rc.ElectionTimeout = c.Timing.ElectionTimeout
	rc.LeaderLeaseTimeout = c.Timing.LeaderLeaseTimeout
	rc.CommitTimeout = c.Timing.CommitTimeout
	rc.SnapshotThreshold = c.SnapshotEvery
	rc.SnapshotInterval = c.SnapshotInterval
	rc.TrailingLogs = c.TrailingLogs
	rc.Logger = hl
	rc.NoLegacyTelemetry = true

	if c.Bootstrap {
		has, err := raft.HasExistingState(store.logs, store.stable, snaps)
		if err != nil {
			return fail(fmt.Errorf("journal: %s: %w", c.Dir, err))
		}
		if !has {
			servers := []raft.Server{{ID: rc.LocalID, Address: trans.LocalAddr(), Suffrage: raft.Voter}}
			if len(c.Peers) > 0 {
				servers = servers[:0]
				for _, p := range c.Peers {
					servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr), Suffrage: raft.Voter})
				}
			}
			if err := raft.BootstrapCluster(rc, store.logs, store.stable, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
				return fail(fmt.Errorf("journal: bootstrapping %s: %w", c.Dir, err))
			}
		}
	}

	f := &fsm{owner: c.FSM, maxBytes: c.MaxSnapshotBytes}
	r, err := raft.NewRaft(rc, f, store.logs, store.stable, snaps, trans)
	if err != nil {
		if rerr := f.firstError(); rerr != nil {
			err = rerr
		}
		return fail(fmt.Errorf("journal: %s: %w", c.Dir, err))
	}
	j := &Journal{
		cfg:      c,
		raft:     r,
		store:    store,
		trans:    trans,
		fsm:      f,
		done:     make(chan struct{}),
		observed: make(chan raft.Observation, 16),
		changed:  make(chan struct{}, 1),
	}
	j.obs = raft.NewObserver(j.observed, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(j.obs)
	j.wg.Add(1)
	go j.observe()

	if err := j.awaitLone(ctx); err != nil {
		_ = j.closeRaft()
		return nil, err
	}
	return j, nil
}

// awaitLone waits, when this server is the only voter, until it leads and
// has applied every committed entry.
func (j *Journal) awaitLone(ctx context.Context) error {
	fut := j.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	voters := 0
	self := false
	for _, s := range fut.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters++
			self = self || s.ID == raft.ServerID(j.cfg.NodeID)
		}
	}
	if voters != 1 || !self {
		return nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for j.raft.State() != raft.Leader {
		select {
		case <-ctx.Done():
			return fmt.Errorf("journal: %s: waiting to lead: %w", j.cfg.Dir, ctx.Err())
		case <-tick.C:
		}
	}
	if err := j.Barrier(ctx); err != nil {
		return err
	}
	return j.fsm.firstError()
}

// observe keeps the leader current and counts elections. It exits when
// the journal closes.
func (j *Journal) observe() {
	defer j.wg.Done()
	addr, id := j.raft.LeaderWithID()
	j.setLeader(Leader{ID: string(id), Addr: string(addr)})
	for {
		select {
		case <-j.done:
			return
		case o := <-j.observed:
			if lo, ok := o.Data.(raft.LeaderObservation); ok {
				j.setLeader(Leader{ID: string(lo.LeaderID), Addr: string(lo.LeaderAddr)})
			}
		}
	}
}

func (j *Journal) setLeader(l Leader) {
	j.mu.Lock()
	if l == j.leader {
		j.mu.Unlock()
		return
	}
	j.leader = l
	if l.ID != "" {
		j.leadersSeen++
	}
	j.mu.Unlock()
	select {
	case j.changed <- struct{}{}:
	default:
	}
}

// Leader is the server this one believes leads (zero while none does).
func (j *Journal) Leader() Leader {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.leader
}

// IsLeader reports whether this server leads now. A new leader should
// call Barrier before it acts on its state.
func (j *Journal) IsLeader() bool { return j.raft.State() == raft.Leader }

// LeaderChanged is signalled (coalesced: capacity 1) after the leader
// changes; the owner then reads Leader and IsLeader. One owner reads it.
func (j *Journal) LeaderChanged() <-chan struct{} { return j.changed }

// ID is this server's NodeID; Addr is the raft address it advertises.
func (j *Journal) ID() string   { return j.cfg.NodeID }
func (j *Journal) Addr() string { return string(j.trans.LocalAddr()) }

// Append writes entries as one batch and returns once the batch is
// committed — on the disks (fsync'd) of a majority of the voters — and
// applied to this server's FSM; the FSM's Apply error, if any, is returned.
// Only the leader appends: elsewhere it returns a *NotLeaderError (nothing
// was written). Concurrent Appends are grouped into one disk write.
//
// If ctx ends first, or leadership is lost while committing, the batch may
// still commit: the owner learns it through Apply.
func (j *Journal) Append(ctx context.Context, entries [][]byte) error {
	if len(entries) == 0 {
		return nil
	}
	data := encodeBatch(entries)
	if len(data) > MaxBatchBytes {
		return fmt.Errorf("journal: batch of %d bytes exceeds %d", len(data), MaxBatchBytes)
	}
	timeout, err := timeoutOf(ctx)
	if err != nil {
		return err
	}
	f := j.raft.Apply(data, timeout)
	if err := j.await(ctx, f); err != nil {
		return err
	}
	if resp, ok := f.Response().(error); ok && resp != nil {
		return fmt.Errorf("journal: applying entry %d: %w", f.Index(), resp)
	}
	return nil
}

// Barrier returns once every entry committed before it has been applied
// to this server's FSM. Only the leader can; elsewhere it returns a
// *NotLeaderError.
func (j *Journal) Barrier(ctx context.Context) error {
	timeout, err := timeoutOf(ctx)
	if err != nil {
		return err
	}
	return j.await(ctx, j.raft.Barrier(timeout))
}

// Snapshot takes a snapshot now (raft also takes them on its own, every
// SnapshotEvery entries), so the log is compacted.
func (j *Journal) Snapshot(ctx context.Context) error {
	err := j.await(ctx, j.raft.Snapshot())
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil
	}
	return err
}

// Bootstrap starts a new group with peers as its voters (this server among
// them), for a journal opened without Bootstrap because its peers were not
// known yet (e.g. learned through gossip). Every peer may call it with the
// same peers. On a journal that already belongs to a group it does nothing
// and returns nil.
func (j *Journal) Bootstrap(ctx context.Context, peers []Peer) error {
	servers := make([]raft.Server, 0, len(peers))
	self := false
	for _, p := range peers {
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr), Suffrage: raft.Voter})
		self = self || p.ID == j.cfg.NodeID
	}
	if !self {
		return fmt.Errorf("journal: bootstrap: this server (%q) is not among the peers", j.cfg.NodeID)
	}
	err := j.await(ctx, j.raft.BootstrapCluster(raft.Configuration{Servers: servers}))
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil
	}
	return err
}

// AddVoter makes the server id at addr a voter (the leader only). Adding a
// member that is already one with the same address does nothing.
func (j *Journal) AddVoter(ctx context.Context, id, addr string) error {
	timeout, err := timeoutOf(ctx)
	if err != nil {
		return err
	}
	return j.await(ctx, j.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout))
}

// RemoveServer removes the server id from the group (the leader only).
func (j *Journal) RemoveServer(ctx context.Context, id string) error {
	timeout, err := timeoutOf(ctx)
	if err != nil {
		return err
	}
	return j.await(ctx, j.raft.RemoveServer(raft.ServerID(id), 0, timeout))
}

// Servers lists the group's latest membership.
func (j *Journal) Servers(ctx context.Context) ([]Server, error) {
	f := j.raft.GetConfiguration()
	if err := j.await(ctx, f); err != nil {
		return nil, err
	}
	var out []Server
	for _, s := range f.Configuration().Servers {
		out = append(out, Server{ID: string(s.ID), Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// Stats is a journal's state for metrics and `cosched nodes`.
type Stats struct {
	State         string // Leader, Follower, Candidate or Shutdown
	Term          uint64 // raft's election term: grows with every election
	Leader        Leader
	Failovers     uint64 // leaders seen after the first since Open
	LastIndex     uint64 // the log's last entry
	AppliedIndex  uint64 // the last entry applied to the FSM
	LogBytes      int64  // raft.db on disk
	SnapshotBytes int64  // retained snapshots on disk
	ApplyErr      error  // the first FSM Apply error since Open
}

// Stats reads the journal's state.
func (j *Journal) Stats() Stats {
	j.mu.Lock()
	leader, seen := j.leader, j.leadersSeen
	j.mu.Unlock()
	st := Stats{
		State:        j.raft.State().String(),
		Leader:       leader,
		LastIndex:    j.raft.LastIndex(),
		AppliedIndex: j.raft.AppliedIndex(),
		LogBytes:     j.store.size(),
		ApplyErr:     j.fsm.firstError(),
	}
	if seen > 1 {
		st.Failovers = seen - 1
	}
	st.Term, _ = strconv.ParseUint(j.raft.Stats()["term"], 10, 64)
	st.SnapshotBytes = snapshotsSize(j.cfg.Dir)
	return st
}

// Close stops this server abruptly (no leadership transfer: to the others
// it looks like a crash, which raft is built for) and closes its files.
// It waits for every goroutine the journal started. Idempotent.
func (j *Journal) Close() error {
	j.closeOnce.Do(func() { j.closeErr = j.closeRaft() })
	return j.closeErr
}

// closeWaiters bounds how long Close waits for raft to answer the futures
// under way before it shuts raft down.
const closeWaiters = 2 * time.Second

func (j *Journal) closeRaft() error {
	j.mu.Lock()
	j.closed = true
	j.mu.Unlock()
	// The futures under way are answered first, while raft still runs:
	// its shutdown answers every other future, but not an entry it has
	// committed and queued for the FSM (hashicorp/raft#498), whose waiter
	// would wait for ever, and Close with it. A raft that cannot answer
	// in time (no quorum) is shut down anyway: its leader loop answers
	// those then.
	waited := make(chan struct{})
	go func() {
		j.waiters.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(closeWaiters):
	}
	err := j.raft.Shutdown().Error() // also closes the transport
	select {
	case <-waited:
	case <-time.After(closeWaiters):
		// Only an entry committed in the instant before the shutdown is
		// left so: its waiter is raft's to end, which it never does.
		if j.cfg.Logger != nil {
			j.cfg.Logger.Warn("journal: a waiter for an entry raft committed as it shut down is left (hashicorp/raft#498)")
		}
	}
	j.raft.DeregisterObserver(j.obs)
	j.trans.CloseStreams()
	close(j.done)
	j.wg.Wait()
	if cerr := j.store.close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("journal: closing %s: %w", j.cfg.Dir, cerr))
	}
	return err
}

// await waits for a raft future or ctx. The waiting goroutine outlives an
// ended ctx only until raft resolves the future; Close waits for it (see
// closeRaft for the one raft would not resolve at its shutdown).
func (j *Journal) await(ctx context.Context, f raft.Future) error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return ErrClosed
	}
	j.waiters.Add(1)
	j.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		defer j.waiters.Done()
		done <- f.Error()
	}()
	select {
	case err := <-done:
		return j.translate(err)
	case <-ctx.Done():
		return fmt.Errorf("journal: %w", ctx.Err())
	}
}

func (j *Journal) translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return &NotLeaderError{Leader: j.Leader()}
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("journal: %w (the entries may still commit under the next leader)", err)
	}
	return fmt.Errorf("journal: %w", err)
}

// timeoutOf turns ctx's deadline into raft's enqueue timeout (0: none).
func timeoutOf(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("journal: %w", err)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, nil
	}
	d := time.Until(dl)
	if d <= 0 {
		return 0, fmt.Errorf("journal: %w", context.DeadlineExceeded)
	}
	return d, nil
}

// snapshotsSize sums the retained snapshots' data files.
func snapshotsSize(dir string) int64 {
	var n int64
	matches, _ := filepath.Glob(filepath.Join(dir, snapshotDir, "*", snapshotStateFile))
	for _, m := range matches {
		if info, err := os.Stat(m); err == nil {
			n += info.Size()
		}
	}
	return n
}
