package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/cosched/cosched/telemetry"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/comm/relay/barrier"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/internal/ratelog"
)

// Delivery is how a relay forwards messages: the sharing mode's need
// (sharing.BCS buffers, every other mode forwards at once), not the mode.
type Delivery int

// The deliveries.
const (
	Immediate Delivery = iota // forward at once (space, gang, local)
	Buffered                  // buffer per slice, deliver after the strobe (bcs)
)

func (m Delivery) String() string {
	if m == Buffered {
		return "bcs"
	}
	return "immediate"
}

// Stats counts what a relay has done: plain data of package telemetry,
// which the API carries without importing this package.
type Stats = telemetry.RelayStats

// Config configures a Relay.
type Config struct {
	Node       string // this agent's name, as the other agents know it
	SocketPath string // Unix socket the ranks connect to (COSCHED_RELAY); created, removed by Close
	Listen     string // TCP host:port for the other relays ("10.0.0.1:0" picks a port)
	Log        *zap.Logger
	// OnBlocked learns, in order, when a local rank becomes blocked in
	// communication (a Wait for undelivered receives, or a barrier) and
	// when it can proceed again. Called from one goroutine; it may block
	// briefly but must not call back into the Relay.
	OnBlocked func(job int64, rank int, blocked bool)
	// OnHeartbeatNodes, optional, learns that HeartbeatNodes may have
	// changed for a reason other than AddJob or RemoveJob: a job's root
	// left it, or this node left a job it finished (FinishJob), which in
	// buffered mode happens once the job's last slice from here has gone.
	// Called from the goroutine that calls OnBlocked.
	OnHeartbeatNodes func()
	// OnStats receives a rank's benchmark statistics (comm.Stats).
	OnStats func(job int64, rank int, s comm.Stats)
	// OnAbort learns that a local rank called MPI_Abort (comm.Abort, its
	// text cleaned and bounded): the job is over. Called from the rank's
	// reader goroutine, without the relay's lock; RankEnd and JobAbort
	// say it too.
	OnAbort func(job int64, rank int, a comm.Abort)
	// MaxEarly bounds the bytes held for jobs not registered yet; 0 = 64 MiB.
	MaxEarly int
	// Key, when set, authenticates the links between relays: both ends
	// prove they hold it (clusterkey.Link, purpose "relay") before any
	// frame is read, and the links are encrypted. Every relay of a
	// cluster needs the same key, or none.
	Key *clusterkey.Key
	// NodeChannelsOnly makes no cross-node channel for this node's ranks
	// (xchannels.go): their messages to other nodes stay on the relay
	// links, encrypted under Key, instead of a direct connection whose
	// bytes travel in clear. The relays of the other nodes are told at
	// once (a decline per pair), so set on some agents only it costs
	// their peers no wait.
	NodeChannelsOnly bool
	// CrossWait bounds how long a rank's Welcome waits for the
	// connections of its remote peers (xchannels.go) before the pairs
	// missing take the relay path; 0 is 20 s. Tests set it beyond their
	// own bound, so that a Welcome that only the timer lets go fails them.
	CrossWait time.Duration
}

// Relay is one node's message relay.
type Relay struct {
	cfg    Config
	log    *zap.Logger
	unixLn *net.UnixListener
	tcpLn  net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	notes  *notifier
	link   *clusterkey.Link // nil: links are not authenticated
	// refusedLog limits the warnings about refused links and ranks.
	refusedLog *ratelog.Limiter

	mu         sync.Mutex
	closed     bool
	mode       Delivery
	hmax       int64         // bytes per node per slice in Buffered mode; 0 = no limit
	hbTimeout  time.Duration // how long a transfer waits for the peers' heartbeats
	jobs       map[int64]*job
	ended      map[int64]time.Time // recently ended jobs: late messages are dropped, not held
	early      map[int64][]inbound
	earlyBytes int
	// earlyFlows are flows to this node that heartbeats announced for jobs
	// not registered here yet: counted as announced (Stats.AnnouncedIn) at
	// registration if this node is the job's root (a root counts its
	// nodes' flows itself), so that what is announced is what arrives.
	earlyFlows map[int64]flowCount
	peers      map[string]string // other nodes → their relay address
	out        map[string]*peerConn
	rankConns  map[*rankConn]struct{}
	inConns    map[net.Conn]struct{}
	bcs        bcsState
	st         Stats
	// gen numbers the critical sections under mu; dirty is the queues
	// the current one claimed for direct writing (push), which unlock
	// flushes.
	gen   uint64
	dirty []*writeQueue
	// endedStats is the traffic of the jobs in ended, for Stats.
	endedStats map[int64]telemetry.RelayJobStats
}

type job struct {
	id    int64
	uid   uint32 // the user its ranks run as
	size  int
	nodes []string // node of each rank
	hosts []string // distinct nodes with ranks of the job, sorted
	local map[int]*rankState
	// Barriers, by sequence number.
	arrived  map[uint64]int            // local ranks arrived
	root     map[uint64]map[string]int // immediate, at rank 0's node: arrivals reported by each node
	count    *barrier.Counter          // buffered, at the job's root (barrier.Root): arrivals each node reported at a cut
	released uint64                    // highest barrier released
	// left is the job's other nodes whose ranks have all ended (their
	// relay said so, buffered mode): no heartbeat of theirs is waited for,
	// and they no longer count barriers.
	left map[string]bool
	st   telemetry.RelayJobStats // its traffic here
	// collFrom is Stats.Slices when its first collective was announced
	// here (collSeen), for st.CollectiveSlices.
	collFrom uint64
	collSeen bool
	abort    *rankAbort // the first Abort of one of its local ranks
	// finishing: this node's ranks of the job have all ended (FinishJob,
	// buffered mode), but it stays in the job's exchange until the slices
	// that carry their last messages are announced and transferred, then
	// leaves it (bcs.go, leaveFinishedLocked). overdue: it owed nothing at
	// a transfer that timed out, and leaves at the next transfer whatever
	// (a late heartbeat gets a slice to come in).
	finishing, overdue bool
	ch                 *jobChannels // its same-node channels (channels.go), nil: none
	// xin is what its local ranks' Hellos collect of their cross-node
	// channels, xchange closed when that changes (xchannels.go).
	xin     map[int]*xwait
	xchange chan struct{}
}

type rankState struct {
	job       *job
	rank      int
	q         matcher
	conn      *rankConn
	inited    bool // a rank connected (Hello accepted)
	finalized bool
	pending   map[uint64]struct{} // posted receives not yet delivered
	waiting   map[uint64]struct{} // the subset the rank said it is blocked on
	barrier   uint64              // barrier it arrived at, not yet released (0: none)
	inBarrier bool                // and it waits for the release (no Unwait since)
	probing   []comm.Probe        // blocking probes not answered yet, oldest first
	blocked   bool
	abort     *comm.Abort   // what its Abort said
	done      chan struct{} // closed when its connection's reader has ended
	// Numbered messages (resume.go): numbers says the rank numbers its
	// messages and takes Acked and Resend; streams order what comes from
	// each source; awaiting: the job was reattached and the rank has not
	// said yet what it received.
	// Channels taken back (revoke.go): revokable, its Hello said it
	// takes Revoke; chPeers, the peers it was granted channels to and
	// not yet told to revoke; drainFrom, the peers whose channel it has
	// not read to the end yet, whose relay-path messages wait in held.
	revokable bool
	chPeers   []int
	drainFrom map[int]bool
	held      []peerMsg
	// broken is what its channel peers said of their broken connections
	// while it was not connected (broken.go), for its next Welcome.
	broken   []comm.Broken
	numbers  bool
	resumed  bool // its Hello resumed a connection to the relay's previous life
	streams  map[int]*inStream[peerMsg]
	awaiting bool
}

// rankAbort is a rank's Abort.
type rankAbort struct {
	rank int
	comm.Abort
}

// New starts a relay: its Unix socket for ranks and its TCP listener for
// peers. It starts in Immediate mode.
func New(cfg Config) (*Relay, error) {
	if cfg.Node == "" || cfg.SocketPath == "" || cfg.Listen == "" {
		return nil, errors.New("relay: Node, SocketPath and Listen are required")
	}
	if cfg.CrossWait < 0 {
		return nil, fmt.Errorf("relay: CrossWait %v: must not be negative (0: %v)", cfg.CrossWait, crossWait)
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.MaxEarly <= 0 {
		cfg.MaxEarly = 64 << 20
	}
	if len(cfg.SocketPath) >= 108 {
		return nil, fmt.Errorf("relay: socket path %s is %d bytes, over the 107 a Unix socket allows: use a shorter state directory", cfg.SocketPath, len(cfg.SocketPath))
	}
	if err := os.Remove(cfg.SocketPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("relay: remove stale socket: %w", err)
	}
	unixLn, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.SocketPath, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("relay: listen on %s: %w", cfg.SocketPath, err)
	}
	// Ranks run as their job's owner: any local user may connect, and
	// the kernel says who they are (SO_PEERCRED, checked at their hello).
	if err := os.Chmod(cfg.SocketPath, 0o666); err != nil {
		unixLn.Close()
		return nil, fmt.Errorf("relay: %w", err)
	}
	var link *clusterkey.Link
	if cfg.Key != nil {
		if link, err = cfg.Key.Link("relay"); err != nil {
			unixLn.Close()
			return nil, fmt.Errorf("relay: %w", err)
		}
	}
	tcpLn, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		unixLn.Close()
		return nil, fmt.Errorf("relay: listen on %s: %w", cfg.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{
		cfg: cfg, log: cfg.Log.With(zap.String("component", "relay")),
		unixLn: unixLn, tcpLn: tcpLn, ctx: ctx, cancel: cancel, link: link, refusedLog: ratelog.New(10 * time.Second),
		jobs: map[int64]*job{}, ended: map[int64]time.Time{}, endedStats: map[int64]telemetry.RelayJobStats{}, early: map[int64][]inbound{},
		peers: map[string]string{}, out: map[string]*peerConn{},
		rankConns: map[*rankConn]struct{}{}, inConns: map[net.Conn]struct{}{},
		hbTimeout: 5 * time.Millisecond,
	}
	r.bcs.init()
	r.notes = newNotifier(cfg.OnBlocked, cfg.OnHeartbeatNodes)
	r.goRun(func() { r.notes.run(ctx) })
	r.goRun(r.acceptRanks)
	r.goRun(r.acceptPeers)
	r.goRun(func() { r.transferLoop(ctx) })
	return r, nil
}

// unlock releases r.mu, then writes what the critical section queued on
// connections no one was writing (writeQueue.flush): without blocking,
// and without a hand-off to their writer goroutines.
func (r *Relay) unlock() {
	dirty := r.dirty
	r.dirty = nil
	r.gen++
	r.mu.Unlock()
	for _, q := range dirty {
		if q.flush() {
			r.ackWritten(q)
		}
	}
}

// pushLocked queues a frame on q, under r.mu, claiming q for this
// critical section's unlock if no one writes it (writeQueue.enqueue).
func (r *Relay) pushLocked(q *writeQueue, t frame.Type, v any, pay payload) error {
	return r.pushAckLocked(q, t, v, pay, dueAck{})
}

// pushAckLocked is pushLocked with an acknowledgement due once the frame
// is written (writeQueue.enqueue).
func (r *Relay) pushAckLocked(q *writeQueue, t frame.Type, v any, pay payload, ack dueAck) error {
	_, claimed, err := q.enqueue(t, v, pay, true, r.gen, ack)
	if claimed {
		r.dirty = append(r.dirty, q)
	}
	return err
}

func (r *Relay) goRun(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// Addr is the TCP address the other relays connect to.
func (r *Relay) Addr() string { return r.tcpLn.Addr().String() }

// SocketPath is the Unix socket ranks connect to.
func (r *Relay) SocketPath() string { return r.cfg.SocketPath }

// Close stops the relay: every connection is closed, every goroutine has
// ended when it returns, and the socket file is removed.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.unlock()
		return nil
	}
	r.closed = true
	for rc := range r.rankConns {
		rc.close()
	}
	for c := range r.inConns {
		c.Close()
	}
	for _, pc := range r.out {
		pc.close()
	}
	for _, j := range r.jobs {
		if j.ch != nil {
			j.ch.close()
			j.ch = nil
		}
	}
	r.unlock()
	r.cancel()
	r.unixLn.Close()
	r.tcpLn.Close()
	r.wg.Wait()
	os.Remove(r.cfg.SocketPath)
	return nil
}

// SetDelivery switches between immediate and buffered forwarding. slice and
// bandwidth (bytes per second per node; 0 = unlimited) set the buffered
// mode's budget h_max = bandwidth × slice. Leaving buffered mode sends
// whatever is still buffered at once.
func (r *Relay) SetDelivery(mode Delivery, slice time.Duration, bandwidth float64) {
	r.mu.Lock()
	defer r.unlock()
	r.hmax = 0
	if bandwidth > 0 && slice > 0 {
		r.hmax = max(1, int64(bandwidth*slice.Seconds()))
	}
	r.hbTimeout = min(max(slice/4, 500*time.Microsecond), 20*time.Millisecond)
	if r.mode == Buffered && mode == Immediate {
		r.flushBufferedLocked()
	}
	r.mode = mode
	if mode == Buffered {
		r.revokeAllLocked()
	}
}

// SetPeers sets the other relays' addresses (node → host:port), as
// membership learns them. This node's own entry is ignored.
func (r *Relay) SetPeers(peers map[string]string) {
	r.mu.Lock()
	defer r.unlock()
	old := r.peers
	r.peers = make(map[string]string, len(peers))
	for n, a := range peers {
		if n != r.cfg.Node && a != "" {
			r.peers[n] = a
			if pc := r.out[n]; pc != nil && old[n] != a {
				select { // a writer in its backoff dials the new address now
				case pc.moved <- struct{}{}:
				default:
				}
			}
		}
	}
	for n, pc := range r.out {
		if _, ok := r.peers[n]; !ok {
			pc.close()
			delete(r.out, n)
		}
	}
	r.bcs.wakeUp()
}

// AddJob registers a job before its local ranks start: its size and the
// node of each rank. Messages held for it are delivered. Its ranks run as
// the relay's own user: see AddJobAs.
func (r *Relay) AddJob(id int64, nodes []string) error {
	return r.AddJobAs(id, nodes, uint32(os.Getuid()))
}

// AddJobAs is AddJob for a job whose ranks run as uid: only processes of
// that user (or root) may connect as its ranks.
func (r *Relay) AddJobAs(id int64, nodes []string, uid uint32) error {
	return r.addJob(id, nodes, uid, false)
}

func (r *Relay) addJob(id int64, nodes []string, uid uint32, reattached bool) error {
	if len(nodes) == 0 {
		return fmt.Errorf("relay: job %d without ranks", id)
	}
	r.mu.Lock()
	defer r.unlock()
	if _, ok := r.jobs[id]; ok {
		return fmt.Errorf("relay: job %d registered twice", id)
	}
	j := &job{id: id, uid: uid, size: len(nodes), nodes: slices.Clone(nodes), local: map[int]*rankState{},
		arrived: map[uint64]int{}, root: map[uint64]map[string]int{}, count: barrier.NewCounter(len(nodes)), left: map[string]bool{}}
	for rk, n := range nodes {
		if n == r.cfg.Node {
			j.local[rk] = &rankState{job: j, rank: rk, pending: map[uint64]struct{}{}, waiting: map[uint64]struct{}{}, awaiting: reattached}
		}
	}
	j.hosts = slices.Compact(slices.Sorted(slices.Values(nodes)))
	j.st.Job = id
	r.jobs[id] = j
	delete(r.ended, id)
	delete(r.endedStats, id)
	if fc, ok := r.earlyFlows[id]; ok {
		if r.rootLocked(j) == r.cfg.Node {
			r.st.AnnouncedIn += fc.msgs
			r.st.AnnouncedInBytes += fc.bytes
		}
		delete(r.earlyFlows, id)
	}
	if reattached {
		r.restartedLocked(j)
	}
	held := r.early[id]
	delete(r.early, id)
	for _, in := range held {
		r.earlyBytes -= in.size()
		r.inboundLocked(in)
	}
	return nil
}

// flowCount is messages and bytes announced.
type flowCount struct{ msgs, bytes uint64 }

// maxEarlyFlows bounds Relay.earlyFlows (jobs).
const maxEarlyFlows = 1024

// SharedNodes returns the other nodes that host ranks of a job registered
// here and have not left it, sorted: the only nodes this one has BCS
// business with.
func (r *Relay) SharedNodes() []string {
	r.mu.Lock()
	defer r.unlock()
	return sortStrings(mapKeys(r.sharedLocked()))
}

// HeartbeatNodes returns the nodes this node's heartbeats must reach in
// buffered mode, sorted: the roots (barrier.Root) of the jobs registered
// here, other than itself. A root hears its job's nodes and answers each
// with a sliceReady frame; it heartbeats none of them.
func (r *Relay) HeartbeatNodes() []string {
	r.mu.Lock()
	defer r.unlock()
	roots := map[string]bool{}
	for _, j := range r.jobs {
		if root := r.rootLocked(j); root != r.cfg.Node && root != "" {
			roots[root] = true
		}
	}
	return sortStrings(mapKeys(roots))
}

// sharedLocked is SharedNodes as a set.
func (r *Relay) sharedLocked() map[string]bool {
	shared := map[string]bool{}
	for _, j := range r.jobs {
		for _, h := range j.hosts {
			if h != r.cfg.Node && !j.left[h] {
				shared[h] = true
			}
		}
	}
	return shared
}

// RemoveJob forgets a job: its ranks still connected are told (Fatal),
// its buffered messages are dropped, and late messages for it will be.
func (r *Relay) RemoveJob(id int64) {
	r.mu.Lock()
	defer r.unlock()
	if j := r.jobs[id]; j != nil && j.finishing {
		// Its nodes know it is finishing and wait for its last
		// heartbeats: removed now (the job was killed), it leaves as a
		// finished node does, so that they stop waiting.
		r.sendJobLeftLocked(id, j)
	}
	r.forgetJobLocked(id)
	r.bcs.dropJob(id)
}

// FinishJob forgets a job whose local ranks have all ended, as RemoveJob
// does, but what they sent and is still buffered for a later slice goes
// out: a send completed when the rank handed it over, and its receiver
// may still be waiting for it. In buffered mode the node then leaves the
// job: it tells the job's other nodes (jobLeft), so that their transfers
// stop waiting for its heartbeats, which no longer come. It leaves once
// it owes the job nothing: the slices already cut, and those that carry
// its ranks' last messages, are announced (its heartbeat to the root; as
// the root, its sliceReady frames) and transferred. Until then it takes
// no rank of the job and delivers nothing to one, but takes part in the
// job's exchange as before, so every message it transfers was announced.
// OnHeartbeatNodes says when it has left.
func (r *Relay) FinishJob(id int64) {
	r.mu.Lock()
	defer r.unlock()
	j := r.jobs[id]
	if j == nil || j.finishing {
		return
	}
	if r.mode != Buffered {
		r.forgetJobLocked(id)
		return
	}
	r.endRanksLocked(j)
	j.finishing = true
	r.leaveFinishedLocked(false)
}

// endRanksLocked tells j's local ranks still connected that the job has
// ended here, and counts none of them blocked.
func (r *Relay) endRanksLocked(j *job) {
	for _, rs := range j.local {
		if rs.conn != nil {
			rs.conn.fatal("job ended")
		}
		rs.setBlocked(r, false)
	}
}

func (r *Relay) forgetJobLocked(id int64) {
	j := r.jobs[id]
	if j == nil {
		return
	}
	if !j.finishing { // a finishing job's ranks were told
		r.endRanksLocked(j)
	}
	delete(r.jobs, id)
	now := time.Now()
	r.ended[id] = now
	j.st = jobStatsLocked(j)
	if j.ch != nil {
		j.ch.close()
		j.ch = nil
	}
	j.xcloseLocked()
	j.st.Ended = true
	r.endedStats[id] = j.st
	for old, at := range r.ended {
		if now.Sub(at) > 10*time.Minute {
			delete(r.ended, old)
			delete(r.endedStats, old)
		}
	}
	for len(r.endedStats) > maxEndedStats {
		oldest := id
		for old := range r.endedStats {
			if r.ended[old].Before(r.ended[oldest]) {
				oldest = old
			}
		}
		delete(r.endedStats, oldest)
	}
}

// RankState says whether a rank of a job connected to the relay and
// whether it finalized: a rank that connected and ended without
// Finalize has failed.
func (r *Relay) RankState(id int64, rank int) (connected, finalized bool) {
	r.mu.Lock()
	defer r.unlock()
	if j := r.jobs[id]; j != nil {
		if rs := j.local[rank]; rs != nil {
			return rs.inited, rs.finalized
		}
	}
	return false, false
}

// maxEndedStats bounds the ended jobs whose traffic Stats still shows.
const maxEndedStats = 64

// RankEnd is what the relay knows of a rank whose process has ended.
type RankEnd struct {
	Connected bool        // it connected (its Hello was accepted)
	Finalized bool        // it sent Finalize
	Abort     *comm.Abort // it sent Abort
}

// RankEnd is RankState for a rank whose process has ended, with its
// Abort if it sent one. It first waits, until ctx ends, for the relay to
// have read the rank's connection to its end: the process is gone, but
// what it wrote last (an Abort just before exiting) may not have been
// read yet.
func (r *Relay) RankEnd(ctx context.Context, id int64, rank int) RankEnd {
	r.mu.Lock()
	var done chan struct{}
	if j := r.jobs[id]; j != nil {
		if rs := j.local[rank]; rs != nil && rs.conn != nil {
			done = rs.done
		}
	}
	r.unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	r.mu.Lock()
	defer r.unlock()
	var e RankEnd
	if j := r.jobs[id]; j != nil {
		if rs := j.local[rank]; rs != nil {
			e.Connected, e.Finalized = rs.inited, rs.finalized
			if rs.abort != nil {
				a := *rs.abort
				e.Abort = &a
			}
		}
	}
	return e
}

// JobAbort returns the first Abort of a local rank of a job registered
// here, and which rank sent it.
func (r *Relay) JobAbort(id int64) (rank int, a comm.Abort, ok bool) {
	r.mu.Lock()
	defer r.unlock()
	if j := r.jobs[id]; j != nil && j.abort != nil {
		return j.abort.rank, j.abort.Abort, true
	}
	return 0, comm.Abort{}, false
}

// Stats returns the counters.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	defer r.unlock()
	st := r.st
	for _, j := range r.jobs {
		st.Jobs = append(st.Jobs, jobStatsLocked(j))
	}
	for _, js := range r.endedStats {
		st.Jobs = append(st.Jobs, js)
	}
	slices.SortFunc(st.Jobs, func(a, b telemetry.RelayJobStats) int { return cmp.Compare(a.Job, b.Job) })
	st.Mode = r.mode.String()
	st.Outbox = r.bcs.outbox.Len()
	st.Peers = len(r.peers)
	for _, j := range r.jobs {
		for _, rs := range j.local {
			if rs.blocked {
				st.Blocked++
			}
		}
	}
	return st
}

// setBlocked records whether rs is blocked and reports changes.
func (rs *rankState) setBlocked(r *Relay, b bool) {
	if rs.blocked == b {
		return
	}
	rs.blocked = b
	r.notes.push(blockEvent{job: rs.job.id, rank: rs.rank, blocked: b})
}

func (rs *rankState) recompute(r *Relay) {
	rs.setBlocked(r, rs.conn != nil && !rs.finalized && (len(rs.waiting) > 0 || len(rs.probing) > 0 || rs.barrier != 0 && rs.inBarrier))
}

// deliverLocked hands a message to a local rank: a numbered one in its
// source's order (resume.go), then to its oldest matching receive, else
// to its queue.
func (r *Relay) deliverLocked(j *job, m peerMsg) {
	rs := j.local[m.Dst]
	if rs == nil {
		r.st.Dropped++
		r.log.Warn("message for a rank not on this node; dropped", zap.Int64("job", j.id), zap.Int("rank", m.Dst), zap.Int("from", m.Src))
		return
	}
	if m.Seq != 0 {
		r.numberedLocked(rs, m)
		return
	}
	r.acceptLocked(rs, m)
}

// acceptLocked matches a message for rs against its receives.
func (r *Relay) acceptLocked(rs *rankState, m peerMsg) {
	if r.holdLocked(rs, m) { // its channel is not read to the end yet (revoke.go)
		m.own()
		rs.held = append(rs.held, m)
		return
	}
	env := envelope{src: m.Src, tag: m.Tag, ctx: m.Ctx, data: m.Data, seq: m.Seq}
	p, ok := rs.q.take(env)
	if !ok {
		m.own()
		env.data = m.Data
		rs.q.queue(env)
		r.answerProbesLocked(rs, env)
		return
	}
	pay := payload{ref: m.owned}
	if !m.owned {
		pay.rd = m.rd
	}
	r.completeLocked(rs, p.req, env, pay)
}

// completeLocked sends the Deliver of receive req and updates the rank's
// blocked state. pay says whose env's data is: the relay's (a queued
// message: the Deliver refers to it instead of copying it), or borrowed.
func (r *Relay) completeLocked(rs *rankState, req uint64, env envelope, pay payload) {
	delete(rs.pending, req)
	rs.job.st.Delivered++
	rs.job.st.DeliveredBytes += uint64(len(env.data))
	if rs.conn != nil {
		// A numbered message is acknowledged once its Deliver is in
		// the rank's socket: if this relay dies before, the source
		// still has it (resume.go).
		var ack dueAck
		if env.seq != 0 {
			ack = dueAck{j: rs.job, src: env.src, dst: rs.rank, seq: env.seq}
		}
		rs.conn.deliverLocked(r, &comm.Deliver{Req: req, Src: env.src, Tag: env.tag, Data: env.data, Seq: env.seq}, pay, ack)
	}
	r.st.Delivered++
	if _, ok := rs.waiting[req]; ok {
		delete(rs.waiting, req)
		rs.recompute(r)
	}
}

// answerProbesLocked answers the blocking probes of rs that env, just
// queued, matches: it is the oldest queued message they match, since
// none matched when they were made.
func (r *Relay) answerProbesLocked(rs *rankState, env envelope) {
	if len(rs.probing) == 0 {
		return
	}
	kept := rs.probing[:0]
	for _, p := range rs.probing {
		if !(posted{src: p.Src, tag: p.Tag, ctx: p.Context}).matches(env) {
			kept = append(kept, p)
			continue
		}
		if rs.conn != nil {
			rs.conn.sendLocked(r, comm.FrameProbed, &comm.Probed{Req: p.Req, Found: true, Src: env.src, Tag: env.tag, Len: len(env.data)}, payload{})
		}
	}
	clear(rs.probing[len(kept):])
	rs.probing = kept
	rs.recompute(r)
}

// releaseLocked completes barrier seq of j on this node.
func (r *Relay) releaseLocked(j *job, seq uint64) {
	if seq <= j.released {
		return
	}
	j.released = seq
	for _, rs := range j.local {
		if rs.barrier != 0 && rs.barrier <= seq {
			released := rs.barrier
			rs.barrier, rs.inBarrier = 0, false
			if rs.conn != nil {
				rs.conn.sendLocked(r, comm.FrameRelease, &comm.Release{Seq: released}, payload{})
			}
			rs.recompute(r)
		}
	}
	// A release learnt from a peer may cover barriers not yet released
	// here: everything up to seq is done.
	for s := range j.arrived {
		if s <= seq {
			delete(j.arrived, s)
		}
	}
	for s := range j.root {
		if s <= seq {
			delete(j.root, s)
		}
	}
	j.count.Release(seq)
	r.st.Barriers++
}
