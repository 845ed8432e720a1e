// Package member is cosched's cluster membership: memberlist gossip for
// discovery and liveness, each node's Meta (its addresses and processors)
// carried as memberlist node metadata, and join/update/leave Events.
// Failures are noticed in seconds and gossip is no barrier: the slice
// clock (package strobe) takes membership changes at slice boundaries.
//
// Threading: memberlist calls the delegates from its goroutines; they
// never block. One forwarder goroutine feeds Events. Shutdown (idempotent)
// closes memberlist's sockets (memberlist waits for its listeners), stops
// and waits for the forwarder and closes Events; memberlist's timers and
// handlers exit shortly after on their own. No package-level mutable
// state: the logger comes in through Config.
package member

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
)

// ErrShutdown is returned by Membership methods called after Shutdown.
var ErrShutdown = errors.New("member: membership is shut down")

// Membership is this node's view of the cluster, kept by memberlist's
// gossip and failure detection. It is for discovery and liveness only:
// failures are noticed in seconds and gossip is no barrier, so slice-level
// decisions (who gets strobes, whose heartbeats to wait for) are taken by
// the controller at slice boundaries, not here.
//
// Threading: memberlist calls this package's delegates from its own
// goroutines; they never block (see Events). All methods are safe for
// concurrent use.
type Membership struct {
	ml       *memberlist.Memberlist
	name     string
	addr     string
	log      *zap.Logger
	events   *eventQueue
	closeLog func() // silences memberlist's logger once it is shut down
	meta     *metaDelegate
	table    *eventDelegate

	mu       sync.RWMutex // Leave and UpdateMeta hold it shared, Shutdown exclusively
	shutdown bool

	stopHold chan struct{}  // closed by Shutdown: the hold checker exits
	holdDone sync.WaitGroup // the hold checker (Config.Heard set)
}

// Join starts gossip on cfg.Bind and joins the members at cfg.Join,
// trying every address for cfg.JoinAttempts rounds with doubling pauses.
// With no Join addresses it starts a new cluster. If no peer answers, it
// shuts down and returns an error naming the peers (a wrong SecretKey
// looks the same from here: the peers cannot read us). Cancelling ctx
// stops the retries: Join shuts down and returns ctx's error.
func Join(ctx context.Context, cfg Config) (*Membership, error) {
	cfg, host, port, err := cfg.check()
	if err != nil {
		return nil, err
	}
	metaBytes, _ := encodeMeta(cfg.Meta) // checked
	log := cfg.Log.With(zap.String("node", cfg.Name))

	mc := memberlist.DefaultLANConfig()
	if cfg.Local {
		mc = memberlist.DefaultLocalConfig()
		// A member that misses the gossip of another's join learns of it
		// only at the next full state exchange (15 s by default): seen on
		// a loaded 2-core machine, where a node went 24 s without two of
		// its peers. Exchanging state more often costs little on one host.
		mc.PushPullInterval = 3 * time.Second
	}
	// A restarted agent comes back under its name at new ports: once the
	// old incarnation is declared dead, the new one takes the name at once
	// (memberlist's default never lets a dead name move to a new address,
	// until the dead member is forgotten, 15–30 s later).
	mc.DeadNodeReclaimTime = time.Second
	t := cfg.withPresetTimings()
	mc.ProbeInterval, mc.ProbeTimeout, mc.IndirectChecks = t.ProbeInterval, t.ProbeTimeout, t.IndirectChecks
	mc.SuspicionMult, mc.SuspicionMaxTimeoutMult, mc.AwarenessMaxMultiplier = t.SuspicionMult, t.SuspicionMaxTimeoutMult, t.AwarenessMaxMultiplier
	mc.Name = cfg.Name
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = cfg.Advertise, port
	mc.SecretKey = cfg.SecretKey
	// A label keeps cosched's gossip apart from any other memberlist
	// cluster (Consul, Nomad, Serf) that a misconfigured Join could reach.
	mc.Label = "cosched"
	var closeLog func()
	mc.Logger, closeLog = memberlistLogger(log)

	m := &Membership{
		name:     cfg.Name,
		log:      log,
		events:   newEventQueue(cfg.EventBuffer),
		meta:     &metaDelegate{meta: metaBytes},
		closeLog: closeLog,
	}
	m.table = &eventDelegate{q: m.events, log: log, members: map[string]Meta{cfg.Name: cfg.Meta},
		self: cfg.Name, heard: cfg.Heard, window: cfg.HeardWindow, held: map[string]heldLeave{}}
	mc.Delegate = m.meta
	mc.Events = m.table

	ml, err := memberlist.Create(mc)
	if err != nil {
		m.events.close()
		closeLog()
		return nil, fmt.Errorf("member: start gossip on %s: %w", cfg.Bind, err)
	}
	m.ml = ml
	m.addr = ml.LocalNode().Address() // fixed once bound; read now, before gossip can touch it
	m.stopHold = make(chan struct{})
	if cfg.Heard != nil {
		m.holdDone.Add(1)
		go func() { defer m.holdDone.Done(); m.table.checkHeld(m.stopHold) }()
	}
	if len(cfg.Join) == 0 {
		log.Info("member: started a new cluster", zap.String("gossip", m.Addr()))
		return m, nil
	}
	backoff := cfg.JoinBackoff
	for attempt := 1; ; attempt++ {
		n, err := ml.Join(cfg.Join)
		if n > 0 {
			log.Info("member: joined", zap.String("gossip", m.Addr()), zap.Int("contacted", n), zap.Int("members", ml.NumMembers()))
			return m, nil
		}
		if attempt == cfg.JoinAttempts {
			_ = m.Shutdown()
			return nil, fmt.Errorf("member: join %s: no peer answered in %d attempts (are they running? same SecretKey?): %w",
				strings.Join(cfg.Join, ", "), attempt, flatten(err))
		}
		log.Info("member: join failed; retrying", zap.Strings("peers", cfg.Join), zap.Duration("in", backoff), zap.Error(err))
		select {
		case <-ctx.Done():
			_ = m.Shutdown()
			return nil, fmt.Errorf("member: join %s: %w", strings.Join(cfg.Join, ", "), ctx.Err())
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// Members returns the live members (alive or suspected, as memberlist
// counts them), sorted by name, including this node. A member whose Meta
// cannot be decoded (another protocol version) is left out.
//
// The list is this package's copy, kept from memberlist's notifications:
// memberlist.Members returns pointers into nodes that its gossip rewrites
// in place, so reading their Meta races (hashicorp/memberlist#306).
func (m *Membership) Members() []Meta { return m.table.list() }

// Events delivers membership changes, including this node's own join. The
// channel is buffered and fed by a goroutine of the Membership: a slow
// reader never blocks memberlist; while it lags, pending events are
// coalesced per member (newest wins), so the reader sees every member's
// latest state but maybe not every intermediate one. Members is the
// authoritative list. The channel is closed by Shutdown.
func (m *Membership) Events() <-chan Event { return m.events.out }

// Addr returns the gossip address others Join.
func (m *Membership) Addr() string { return m.addr }

// UpdateMeta replaces this node's Meta (its Name must not change) and
// gossips it, waiting up to timeout for the update to go out. Others see
// an EventUpdate.
func (m *Membership) UpdateMeta(meta Meta, timeout time.Duration) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.shutdown {
		return ErrShutdown
	}
	if meta.Name == "" {
		meta.Name = m.name
	}
	if meta.Name != m.name {
		return fmt.Errorf("member: update meta: name %q differs from %q", meta.Name, m.name)
	}
	b, err := encodeMeta(meta)
	if err != nil {
		return err
	}
	m.meta.set(b)
	m.table.mu.Lock()
	m.table.members[m.name] = meta
	m.table.mu.Unlock()
	if err := m.ml.UpdateNode(timeout); err != nil {
		return fmt.Errorf("member: update meta: %w", err)
	}
	return nil
}

// Leave tells the cluster this node is leaving, waiting up to timeout for
// the message to go out; the node keeps gossiping until Shutdown. Others
// see an EventLeave at once instead of after failure detection.
func (m *Membership) Leave(timeout time.Duration) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.shutdown {
		return ErrShutdown // memberlist panics on Leave after Shutdown
	}
	if err := m.ml.Leave(timeout); err != nil {
		return fmt.Errorf("member: leave: %w", err)
	}
	return nil
}

// Shutdown stops gossip without a goodbye (call Leave first to leave
// gracefully; otherwise the others detect a failure). It closes the
// sockets (memberlist waits for its listeners), stops the event forwarder
// and closes Events. memberlist's background goroutines notice the
// shutdown and exit on their own shortly after; they touch nothing of
// this package's once Shutdown has returned. Idempotent.
func (m *Membership) Shutdown() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shutdown {
		return nil
	}
	m.shutdown = true
	var err error
	if m.ml != nil {
		if e := m.ml.Shutdown(); e != nil {
			err = fmt.Errorf("member: shutdown gossip: %w", e)
		}
		close(m.stopHold)
		m.holdDone.Wait()
	}
	m.events.close()
	m.closeLog()
	return err
}

// metaDelegate serves this node's Meta to memberlist (memberlist.Delegate).
// Its methods are called from memberlist's goroutines, concurrently.
type metaDelegate struct {
	mu   sync.Mutex
	meta []byte
}

func (d *metaDelegate) set(b []byte) {
	d.mu.Lock()
	d.meta = b
	d.mu.Unlock()
}

// NodeMeta returns the encoded Meta; its size was checked against the
// limit when it was set.
func (d *metaDelegate) NodeMeta(limit int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta
}

// The rest of memberlist.Delegate is unused: cosched sends nothing over
// gossip.
func (d *metaDelegate) NotifyMsg([]byte)                           {}
func (d *metaDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *metaDelegate) LocalState(join bool) []byte                { return nil }
func (d *metaDelegate) MergeRemoteState(buf []byte, join bool)     {}

// eventDelegate turns memberlist's notifications into Events and
// keeps the member table. memberlist calls it from its goroutines, never
// concurrently, while holding its node lock: the one moment a Node's
// fields can be read without racing its gossip. It must not block, and
// does not (push only queues).
type eventDelegate struct {
	q      *eventQueue
	log    *zap.Logger
	self   string
	heard  func(string) (time.Duration, bool) // Config.Heard; nil: gossip's verdict is final
	window time.Duration                      // Config.HeardWindow

	mu      sync.Mutex
	members map[string]Meta
	held    map[string]heldLeave // members gossip declared dead while heard: in members, their leave not sent
}

// heldLeave is a leave held back because the member was still heard.
type heldLeave struct {
	since time.Time
	meta  Meta
}

func (d *eventDelegate) NotifyJoin(n *memberlist.Node)   { d.notify(EventJoin, n) }
func (d *eventDelegate) NotifyUpdate(n *memberlist.Node) { d.notify(EventUpdate, n) }
func (d *eventDelegate) NotifyLeave(n *memberlist.Node)  { d.notify(EventLeave, n) }

func (d *eventDelegate) notify(kind EventKind, n *memberlist.Node) {
	meta, err := decodeMeta(n.Meta)
	if err == nil && meta.Name != n.Name {
		err = fmt.Errorf("meta names %q", meta.Name)
	}
	if err != nil {
		if kind != EventLeave { // a member we cannot use; its departure is still news
			d.log.Warn("member: ignoring member with unreadable meta", zap.String("member", n.Name), zap.Stringer("event", kind), zap.Error(err))
			return
		}
		meta = Meta{Name: n.Name}
	}
	d.mu.Lock()
	if h, ok := d.held[n.Name]; ok && kind != EventLeave {
		// It refuted its death: the consumer never saw it leave.
		delete(d.held, n.Name)
		kind = EventUpdate
		d.log.Info("member: a member declared dead while heard is alive again; its leave is withdrawn",
			zap.String("member", n.Name), zap.Duration("held", time.Since(h.since)))
	}
	if kind == EventLeave && d.heard != nil && n.Name != d.self {
		if _, ok := d.held[n.Name]; ok {
			d.mu.Unlock()
			return
		}
		if ago, ok := d.heard(n.Name); ok && ago < d.window {
			d.held[n.Name] = heldLeave{since: time.Now(), meta: meta}
			d.mu.Unlock()
			d.log.Warn("member: gossip declared a member dead that was heard recently; holding its leave",
				zap.String("member", n.Name), zap.Duration("heard_ago", ago), zap.Duration("window", d.window))
			return
		}
	}
	if kind == EventLeave {
		delete(d.members, n.Name)
	} else {
		d.members[n.Name] = meta
	}
	d.mu.Unlock()
	// Leave covers both a graceful leave and a failure: memberlist hands
	// NotifyLeave a Node whose State field it never updates, so the two
	// cannot be told apart here.
	d.q.push(Event{Kind: kind, Meta: meta})
}

// checkHeld releases held leaves of members no longer heard, until stop
// is closed: every quarter window, so a release comes at most a quarter
// window after the member's last heartbeat + window.
func (d *eventDelegate) checkHeld(stop <-chan struct{}) {
	t := time.NewTicker(d.window / 4)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		d.mu.Lock()
		for name, h := range d.held {
			ago, ok := d.heard(name)
			if ok && ago < d.window {
				continue
			}
			delete(d.held, name)
			delete(d.members, name)
			d.q.push(Event{Kind: EventLeave, Meta: h.meta})
			d.log.Info("member: a member declared dead while heard is heard no more; its leave goes out",
				zap.String("member", name), zap.Duration("held", time.Since(h.since)))
		}
		d.mu.Unlock()
	}
}

func (d *eventDelegate) list() []Meta {
	d.mu.Lock()
	out := make([]Meta, 0, len(d.members))
	for _, m := range d.members {
		out = append(out, m)
	}
	d.mu.Unlock()
	slices.SortFunc(out, func(a, b Meta) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// flatten puts memberlist's multi-line error list ("1 error occurred:\n\t*
// …") on one line, keeping the errors for errors.Is and errors.As.
func flatten(err error) error {
	me, ok := err.(interface{ WrappedErrors() []error })
	if !ok || len(me.WrappedErrors()) == 0 {
		return err
	}
	return listError(me.WrappedErrors())
}

type listError []error

func (l listError) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "; ")
}

func (l listError) Unwrap() []error { return l }
