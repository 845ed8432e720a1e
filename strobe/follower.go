package strobe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/mono"
)

// SwitchFunc performs a slice switch: stop the processes of the old row,
// continue those of row. It returns the time spent doing so. It is called
// from the Follower's receive loop for every applied strobe, even when the
// row is unchanged (the agent decides what a switch to the same row
// means), never concurrently. It must not block for long: until it
// returns, no strobe or heartbeat is read and no heartbeat is sent.
type SwitchFunc func(row int) (cost time.Duration)

// HeartbeatFunc receives a peer's heartbeat. It is called from the
// receive loop, never concurrently, and must not block (queue the
// content if it needs work). hb is the callee's to keep. A heartbeat
// split across datagrams (split.go) is delivered once, whole, when its
// last part arrives.
type HeartbeatFunc func(hb Heartbeat, recvMono int64)

// FollowerConfig configures a Follower.
type FollowerConfig struct {
	Name      string    // this node's name, carried in every heartbeat (≤ MaxNameLen bytes)
	Transport Transport // the strobe socket; the Follower reads it, its owner closes it
	// Heartbeats, if set, is a socket of its own for the heartbeat
	// exchange: Run sends heartbeats from it on a goroutine of its own and
	// receives peers' heartbeats on another, so that the strobe path (a
	// real-time thread, when Transport is a RealtimeUDP) only switches.
	// Peers are then heartbeat addresses, and heartbeats go to the peers
	// only: the controller hears them through its own agent's Follower.
	// Without it, heartbeats share Transport and are sent on the strobe
	// path, to the peers and to the strobe's source.
	Heartbeats Transport
	// Multicast, if set, is a socket joined to the controller's multicast
	// group (ListenMulticastUDP, Sender.SetMulticast): strobes arriving
	// there are applied as those on Transport are (one at a time, by the
	// same sequence rules). A RealtimeUDP (ListenMulticastUDPRealtime)
	// is served on a real-time thread of its own, which switches; any
	// other Transport is read by an ordinary goroutine.
	Multicast Transport
	Switch    SwitchFunc    // performs the switch; required
	Heartbeat HeartbeatFunc // optional: sees every valid heartbeat received (BCS's control data)
	// Applied, optional, sees this node's record of every slice it
	// applied, on the strobe path (after the switch): it must be quick.
	Applied func(SliceRecord)
	// HeartbeatData, optional, returns the data the heartbeat of slice
	// (epoch, seq) carries (Heartbeat.Data). It is called after Applied,
	// off the strobe path when Heartbeats is set.
	HeartbeatData func(epoch, seq uint64) []byte
	// Auth, if set, seals every heartbeat and forwarded strobe, and every
	// packet received must be sealed with its key (auth.go). Give the
	// node's Sender the same Auth. Nil: nothing is sealed or checked.
	Auth    *Auth
	Log     *zap.Logger // nil: no logging
	History int         // per-slice records kept for Records and Stats; 0 = 4096
}

// Follower is an agent's side of the slice clock: it applies strobes in
// order, calls Switch, and sends a heartbeat to every peer and to the
// controller after each applied strobe. All its work happens in Run; the
// other methods are safe to call from any goroutine.
type Follower struct {
	cfg    FollowerConfig
	cfgErr error
	self   string        // the address heartbeats leave from: never heartbeat ourselves
	hbWake chan struct{} // Heartbeats set: a heartbeat is pending
	log    *zap.Logger
	active atomic.Bool

	// handleMu serialises handle: strobes may come from Transport and
	// Multicast, and Switch is never called concurrently. Only the strobe
	// handlers take it; it guards the strobe path's own state below.
	// Nothing slower shares a lock with the strobe path: what it tells
	// others it publishes without one (view, records, hbq, the atomic
	// counters), and what others tell it it takes without one (nextPeers,
	// nextLive), so a reader preempted anywhere never delays a switch.
	handleMu sync.Mutex
	// Sequence state of the current epoch (under handleMu).
	have        bool
	epoch, last uint64
	first       uint64
	row         int
	memberEpoch uint64
	sc          strobeCounters
	// The heartbeat peers in use for the current slice (under handleMu).
	peers []string
	// Liveness peers (the controllers): heartbeated on one slice in
	// every liveEvery, this node's slices being those ≡ livePhase.
	liveness  []string
	liveEvery uint64
	livePhase uint64
	livePeers []string // the peers and the liveness peers: where a liveness slice's heartbeat goes
	// What SetPeers and SetLivenessPeers queue for the next boundary.
	nextPeers atomic.Pointer[[]string]
	nextLive  atomic.Pointer[liveSet]
	targets   atomic.Pointer[[]string] // the peers in use, for Stats
	view      publishedView            // what Stats reports of the slice sequence
	records   recordRing
	hbq       hbQueue // Heartbeats set: heartbeats not yet sent, oldest first
	// Counted on the strobe path, read by Stats.
	multicast, forwarded, forwardErrors atomic.Uint64
	hbSent, hbSendErrors, hbDropped     atomic.Uint64

	mu          sync.Mutex // guards everything below: the heartbeat receivers, drops, rejections, Stats
	c           counters
	seen        map[string]PeerHeartbeat
	heardAt     map[string]int64 // mono time of each peer's last heartbeat (Heard)
	parts       reassembly       // split heartbeats being put together
	lastDropLog int64            // mono time of the last dropped-packet warning

	// rejectLogs limit the log lines about forged and replayed packets,
	// one limiter per reason and kind.
	rejectLogs map[rejectKind]*logLimiter

	// The sockets as the receive loops see them, each with the replay
	// windows only its loop touches: no lock on the strobe path.
	strobeSock, hbSock, mcSock socket
}

// outgoingHeartbeat is a heartbeat queued for the heartbeat sender.
type outgoingHeartbeat struct {
	hb    Heartbeat
	peers []string
}

// liveSet is a SetLivenessPeers call queued for the strobe path.
type liveSet struct {
	addrs []string
	every uint64
}

// strobeCounters are the strobe path's counts (under handleMu).
type strobeCounters struct {
	applied, lost, late, stale, epochs, epochApplied, epochLost uint64
}

// counters are the counts of everything else (under mu).
type counters struct {
	malformed, unknown          uint64
	hbRecv, hbUntracked         uint64
	hbPartsDropped              uint64
	strobesForged, hbForged     uint64
	strobesReplayed, hbReplayed uint64
}

// maxTrackedPeers bounds the per-peer heartbeat table: names come off the
// network, and a bad sender must not grow it without limit.
const maxTrackedPeers = 4096

// NewFollower returns a Follower. A configuration error is reported by Run
// (every problem at once), so construction cannot fail.
func NewFollower(cfg FollowerConfig) *Follower {
	var errs []error
	if cfg.Name == "" {
		errs = append(errs, errors.New("empty Name"))
	} else if len(cfg.Name) > MaxNameLen {
		errs = append(errs, fmt.Errorf("too long a Name: %d bytes (max %d)", len(cfg.Name), MaxNameLen))
	}
	if cfg.Transport == nil {
		errs = append(errs, errors.New("nil Transport"))
	}
	if cfg.Switch == nil {
		errs = append(errs, errors.New("nil Switch"))
	}
	if cfg.History < 0 {
		errs = append(errs, fmt.Errorf("negative History %d", cfg.History))
	}
	if cfg.History <= 0 {
		cfg.History = 4096
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	f := &Follower{
		cfg:        cfg,
		log:        cfg.Log.With(zap.String("node", cfg.Name)),
		records:    newRecordRing(cfg.History),
		seen:       make(map[string]PeerHeartbeat),
		heardAt:    make(map[string]int64),
		hbWake:     make(chan struct{}, 1),
		rejectLogs: make(map[rejectKind]*logLimiter),
		strobeSock: socket{name: "strobe socket", kind: TypeStrobe, windows: make(replayWindows)},
		hbSock:     socket{name: "heartbeat socket", kind: TypeHeartbeat, only: TypeHeartbeat, windows: make(replayWindows)},
		mcSock:     socket{name: "multicast socket", kind: TypeStrobe, only: TypeStrobe, windows: make(replayWindows)},
	}
	if cfg.Heartbeats != nil && cfg.Auth != nil {
		// Heartbeats have their own socket and every keyed agent is of a
		// build that uses it: the strobe socket takes strobes only, so the
		// two loops never share a window. (Without a key, agents of older
		// builds may still send heartbeats to strobe sockets.)
		f.strobeSock.only = TypeStrobe
	}
	switch {
	case len(errs) > 0:
		f.cfgErr = fmt.Errorf("strobe: follower config: %w", errors.Join(errs...))
	case cfg.Heartbeats != nil:
		f.self = cfg.Heartbeats.LocalAddr()
	default:
		f.self = cfg.Transport.LocalAddr()
	}
	return f
}

// Run is the receive loop. It returns ctx's error when ctx is done, nil
// when the transport's Packets channel closes, or the configuration error.
// One Run at a time; it does not close the transport.
func (f *Follower) Run(ctx context.Context) error {
	if f.cfgErr != nil {
		return f.cfgErr
	}
	if !f.active.CompareAndSwap(false, true) {
		return errors.New("strobe: follower already running")
	}
	defer f.active.Store(false)
	if f.cfg.Heartbeats != nil {
		hbCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); f.sendHeartbeats(hbCtx) }()
		go func() { defer wg.Done(); f.receiveHeartbeats(hbCtx) }()
		defer func() { cancel(); wg.Wait() }()
	}
	if f.cfg.Multicast != nil {
		mcCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.receiveMulticast(mcCtx) }()
		defer func() { cancel(); <-done }()
	}
	return serve(ctx, f.cfg.Transport, f.handle)
}

// syncServer is a transport that can run the receive loop itself and call
// a handler synchronously for each datagram (RealtimeUDP).
type syncServer interface {
	Serve(ctx context.Context, handle func(Packet)) error
}

// serve calls handle for every packet tr receives until ctx is done (its
// error) or tr closes (nil). A syncServer calls it on its own (real-time)
// thread: the switch happens where the strobe was received; any other
// transport's packets are handled on this goroutine.
func serve(ctx context.Context, tr Transport, handle func(Packet)) error {
	if s, ok := tr.(syncServer); ok {
		return s.Serve(ctx, handle)
	}
	packets := tr.Packets()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case p, ok := <-packets:
			if !ok {
				return nil
			}
			handle(p)
		}
	}
}

// SetPeers sets the addresses that heartbeats go to (besides the
// controller). It takes effect at the next strobe applied, so every
// heartbeat of one slice goes to one peer set. The agent's own address
// and duplicates are ignored.
func (f *Follower) SetPeers(heartbeatTargets []string) {
	peers := make([]string, 0, len(heartbeatTargets))
	for _, p := range heartbeatTargets {
		if p != f.self && !slices.Contains(peers, p) {
			peers = append(peers, p)
		}
	}
	f.nextPeers.Store(&peers)
}

// SetLivenessPeers sets the addresses that hear this node's heartbeat
// on one slice in every (the controller-eligible agents: liveness and
// skew); every ≤ 1 means every slice. Each node picks its slices by its
// name, so a controller hears about N/every nodes a slice rather than
// all N at once. A liveness peer that is also a peer (SetPeers) hears
// every heartbeat. It takes effect at the next strobe applied, as
// SetPeers does.
func (f *Follower) SetLivenessPeers(addrs []string, every int) {
	live := make([]string, 0, len(addrs))
	for _, a := range addrs {
		if a != f.self && !slices.Contains(live, a) {
			live = append(live, a)
		}
	}
	f.nextLive.Store(&liveSet{addrs: live, every: uint64(max(every, 1))})
}

// livenessPhase spreads the nodes' liveness slices: FNV-1a of the name.
func livenessPhase(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(name) {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return h
}

// slicePeers is where the heartbeat of slice seq goes besides the
// controller: the peers, and on this node's liveness slices the liveness
// peers that are not peers already. Under handleMu.
func (f *Follower) slicePeers(seq uint64) []string {
	if len(f.liveness) == 0 || (seq+f.livePhase)%f.liveEvery != 0 {
		return f.peers
	}
	return f.livePeers
}

// receiveMulticast reads the multicast socket until ctx is done: on the
// socket's own real-time thread when it has one (a RealtimeUDP: the
// switch happens on the thread that received the strobe, as on the
// strobe socket), else on this goroutine.
func (f *Follower) receiveMulticast(ctx context.Context) {
	if err := serve(ctx, f.cfg.Multicast, f.handleMulticast); err != nil && ctx.Err() == nil {
		f.log.Error("strobe: multicast receive loop", zap.Error(err))
	}
}

// handleMulticast handles a packet from the multicast socket: strobes
// only, authenticated as on the strobe socket with the socket's own
// replay windows, applied under handleMu as the strobe socket's are.
func (f *Follower) handleMulticast(p Packet) {
	msg, err := f.open(p, &f.mcSock)
	if err != nil {
		return
	}
	f.multicast.Add(1)
	f.handleMu.Lock()
	f.onStrobe(p, msg.(*Strobe))
	f.handleMu.Unlock()
}

func (f *Follower) handle(p Packet) {
	f.handleMu.Lock()
	defer f.handleMu.Unlock()
	msg, err := f.open(p, &f.strobeSock)
	if err != nil {
		return
	}
	switch m := msg.(type) {
	case *Strobe:
		f.onStrobe(p, m)
	case *Heartbeat:
		f.onHeartbeat(p, m)
	default: // a valid message that has no business on this socket
		f.drop(p, "strobe socket", fmt.Errorf("%w for this socket: %v", ErrUnknownType, msg.MsgType()))
	}
}

// dropLogEvery limits the warnings about dropped packets: a flood of
// garbage must not turn into a flood of log lines (the counters count
// every one).
const dropLogEvery = 10 * time.Second

// drop counts a packet that is not a valid message for the socket it came
// to, and logs it: the first one, then at most one every dropLogEvery
// with the totals.
func (f *Follower) drop(p Packet, socket string, err error) {
	f.mu.Lock()
	if errors.Is(err, ErrVersion) || errors.Is(err, ErrUnknownType) {
		f.c.unknown++
	} else {
		f.c.malformed++
	}
	now := mono.Now()
	logIt := f.lastDropLog == 0 || now-f.lastDropLog >= int64(dropLogEvery)
	if logIt {
		f.lastDropLog = now
	}
	malformed, unknown := f.c.malformed, f.c.unknown
	f.mu.Unlock()
	if logIt {
		f.log.Warn("strobe: dropped a packet that is not a valid message for this socket",
			zap.String("socket", socket), zap.String("from", p.From), zap.Error(err),
			zap.Uint64("malformed_total", malformed), zap.Uint64("unknown_total", unknown))
	}
}

// onStrobe decides whether s starts a new slice, and if so switches and
// heartbeats. The order is the protocol's: switch, stamp, then tell. It
// runs under handleMu and takes no other lock.
func (f *Follower) onStrobe(p Packet, s *Strobe) {
	switch {
	case !f.have || s.Epoch > f.epoch: // first strobe, or a restarted controller
		if f.have {
			f.sc.epochs++
			f.log.Info("strobe: new controller epoch", zap.Uint64("old", f.epoch), zap.Uint64("epoch", s.Epoch), zap.Uint64("seq", s.Seq))
		}
		f.have, f.epoch, f.first = true, s.Epoch, s.Seq
		f.sc.epochApplied, f.sc.epochLost = 0, 0
	case s.Epoch < f.epoch: // from a controller that has been replaced
		f.sc.stale++
		f.publish()
		return
	case s.Seq <= f.last: // late (overtaken) or duplicate: keep the current row
		f.sc.late++
		f.publish()
		return
	case s.Seq > f.last+1: // the row was kept through the missing slices
		f.sc.lost += s.Seq - f.last - 1
		f.sc.epochLost += s.Seq - f.last - 1
	}
	f.last, f.row, f.memberEpoch = s.Seq, s.Row, s.MemberEpoch
	f.takePeerSets()
	peers := f.slicePeers(s.Seq) // never mutated in place: SetPeers installs a new slice
	f.sc.applied++
	f.sc.epochApplied++

	if len(s.Forward) > 0 { // an inner node of the fan-out tree: its subtree first, then the switch
		f.forward(*s)
	}
	cost := f.cfg.Switch(s.Row)
	switched := mono.Now()

	hb := Heartbeat{
		From: f.cfg.Name, Epoch: s.Epoch, Seq: s.Seq,
		RecvMono: p.RecvMono, SwitchedMono: switched, SwitchCost: int64(cost),
		Lost: f.sc.lost, Late: f.sc.late,
	}
	rec := SliceRecord{
		Epoch: s.Epoch, Seq: s.Seq, Row: s.Row, MemberEpoch: s.MemberEpoch,
		SentMono: s.SentMono, DueMono: s.DueMono, RecvMono: p.RecvMono, SwitchedMono: switched, SwitchCost: cost,
	}
	if f.cfg.Applied != nil {
		f.cfg.Applied(rec)
	}
	if f.cfg.Heartbeats == nil {
		if f.cfg.HeartbeatData != nil {
			hb.Data = f.cfg.HeartbeatData(s.Epoch, s.Seq)
		}
		sent, failed := f.sendHeartbeat(f.cfg.Transport, &hb, p.From, peers)
		f.hbSent.Add(sent)
		f.hbSendErrors.Add(failed)
	}
	// Published after the switch, so a reader who sees slice N as the
	// last also sees its switch done, recorded and counted.
	f.records.add(rec)
	f.publish()
	if f.cfg.Heartbeats != nil {
		// Every heartbeat matters (BCS's control data rides on it), so a
		// slow sender catches up rather than skipping; only a sender that
		// has fallen a whole queue behind loses heartbeats (the newest).
		if !f.hbq.push(outgoingHeartbeat{hb: hb, peers: peers}) {
			f.hbDropped.Add(1)
		}
		select {
		case f.hbWake <- struct{}{}:
		default: // already signalled
		}
	}
}

// takePeerSets installs the peer sets SetPeers and SetLivenessPeers
// queued, at a slice boundary. Under handleMu.
func (f *Follower) takePeerSets() {
	np, nl := f.nextPeers.Swap(nil), f.nextLive.Swap(nil)
	if np == nil && nl == nil {
		return
	}
	if np != nil {
		f.peers = *np
		f.targets.Store(np)
	}
	if nl != nil {
		f.liveness, f.liveEvery = nl.addrs, nl.every
		f.livePhase = livenessPhase(f.cfg.Name) % f.liveEvery
	}
	f.livePeers = f.peers
	if len(f.liveness) > 0 {
		// Once a change, not once a liveness slice: the strobe
		// path allocates nothing in steady state.
		f.livePeers = slices.Clone(f.peers)
		for _, a := range f.liveness {
			if !slices.Contains(f.peers, a) {
				f.livePeers = append(f.livePeers, a)
			}
		}
	}
}

// publish makes the slice sequence visible to Stats and Current. Under
// handleMu.
func (f *Follower) publish() {
	f.view.store(sliceView{
		epoch: f.epoch, first: f.first, last: f.last, memberEpoch: f.memberEpoch, row: f.row,
		applied: f.sc.applied, lost: f.sc.lost, epochApplied: f.sc.epochApplied, epochLost: f.sc.epochLost,
		late: f.sc.late, stale: f.sc.stale, epochs: f.sc.epochs,
	})
}

// forward sends an applied strobe on to this node's children in the
// fan-out tree (fanout.go), on the strobe path before the switch: the
// subtree's switch waits for nothing but the network.
func (f *Follower) forward(s Strobe) {
	k, list := int(s.Fanout), s.Forward
	s.Fanout, s.Forward = 0, nil
	plain, err := f.cfg.Auth.encode(&s)
	if err != nil { // cannot happen: it decoded
		f.log.Error("strobe: encode forwarded strobe", zap.Error(err))
		return
	}
	var sent, failed uint64
	forwardStrobe(s, k, list, plain, func(to string, data []byte) {
		if to == f.cfg.Transport.LocalAddr() {
			return // a list naming this node: it has the strobe already
		}
		if err := f.cfg.Transport.Send(to, data); err != nil {
			failed++
			f.log.Debug("strobe: forward", zap.String("to", to), zap.Error(err))
			return
		}
		sent++
	}, f.cfg.Auth, f.log)
	f.forwarded.Add(sent)
	f.forwardErrors.Add(failed)
}

// maxPendingHeartbeats bounds the heartbeats waiting for the sender.
const maxPendingHeartbeats = 64

// sendHeartbeats is the heartbeat sender when Heartbeats is set: it sends
// the queued heartbeats, in order, each to its slice's peers.
func (f *Follower) sendHeartbeats(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.hbWake:
		}
		f.hbq.drain(func(out *outgoingHeartbeat) {
			if f.cfg.HeartbeatData != nil {
				out.hb.Data = f.cfg.HeartbeatData(out.hb.Epoch, out.hb.Seq)
			}
			sent, failed := f.sendHeartbeat(f.cfg.Heartbeats, &out.hb, "", out.peers)
			f.hbSent.Add(sent)
			f.hbSendErrors.Add(failed)
		})
	}
}

// Heard says how long ago the last heartbeat from the named node was
// received, ok false if none ever was: evidence that it is alive
// (member.Config.Heard), whatever gossip says.
func (f *Follower) Heard(name string) (ago time.Duration, ok bool) {
	f.mu.Lock()
	at, ok := f.heardAt[name]
	f.mu.Unlock()
	if !ok {
		return 0, false
	}
	return time.Duration(mono.Now() - at), true
}

// receiveHeartbeats reads the heartbeat socket when Heartbeats is set.
// Only heartbeats are accepted there: a strobe on it is dropped, so that
// switches happen on the strobe path alone.
func (f *Follower) receiveHeartbeats(ctx context.Context) {
	_ = serve(ctx, f.cfg.Heartbeats, func(p Packet) {
		if msg, err := f.open(p, &f.hbSock); err == nil {
			f.onHeartbeat(p, msg.(*Heartbeat))
		}
	})
}

// sendHeartbeat sends hb over tr to the controller (the strobe's source,
// unless controller is "") and to every peer, skipping this node and
// sending to each address once; a heartbeat too large for one packet is
// split (split.go). sent and failed count datagrams.
func (f *Follower) sendHeartbeat(tr Transport, hb *Heartbeat, controller string, peers []string) (sent, failed uint64) {
	parts, err := encodeHeartbeat(*hb, f.cfg.Auth)
	if err != nil { // data beyond MaxHeartbeatParts: liveness still goes out
		f.log.Error("strobe: encode heartbeat; sending it without its data", zap.Int("data_bytes", len(hb.Data)), zap.Error(err))
		bare := *hb
		bare.Data = nil
		if parts, err = encodeHeartbeat(bare, f.cfg.Auth); err != nil {
			return 0, 1
		}
	}
	send := func(to string) {
		for _, data := range parts {
			if err := tr.Send(to, data); err != nil {
				failed++
				f.log.Debug("strobe: heartbeat", zap.Error(err))
				continue
			}
			sent++
		}
	}
	if controller != "" && controller != f.self {
		send(controller)
	}
	for _, to := range peers {
		if to != controller {
			send(to)
		}
	}
	return sent, failed
}

func (f *Follower) onHeartbeat(p Packet, hb *Heartbeat) {
	f.mu.Lock()
	f.c.hbRecv++
	prev, ok := f.seen[hb.From]
	switch {
	case !ok && len(f.seen) >= maxTrackedPeers:
		f.c.hbUntracked++
	default:
		prev.Count++
		if hb.Epoch > prev.Epoch || (hb.Epoch == prev.Epoch && hb.Seq > prev.Seq) {
			prev.Epoch, prev.Seq, prev.Addr = hb.Epoch, hb.Seq, p.From
		}
		f.seen[hb.From] = prev
		f.heardAt[hb.From] = max(f.heardAt[hb.From], p.RecvMono)
	}
	if hb.Parts > 1 { // liveness counted above; the data waits for every part
		data, complete, dropped := f.parts.add(hb)
		if dropped {
			f.c.hbPartsDropped++
		}
		if !complete {
			f.mu.Unlock()
			return
		}
		hb.Data, hb.Part, hb.Parts = data, 0, 0
	}
	f.mu.Unlock()
	if f.cfg.Heartbeat != nil {
		f.cfg.Heartbeat(*hb, p.RecvMono)
	}
}
