package relay

import (
	"context"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"

	"github.com/cosched/cosched/comm/relay/barrier"
	"github.com/cosched/cosched/internal/msgpackcheck"
)

// bcsState is the buffered mode's state, guarded by Relay.mu.
type bcsState struct {
	outbox []outMsg // handed over by local ranks, oldest first
	nextN  uint64   // number of the next message handed over
	epoch  uint64   // controller epoch of the cuts below
	plans  map[uint64]*slicePlan
	order  []uint64                    // cut slices not yet transferred, in order
	done   uint64                      // the last slice transferred
	loads  map[uint64]map[string]*load // peers' heartbeat contents by slice
	wake   chan struct{}               // the transfer loop has something to look at
}

type outMsg struct {
	n    uint64 // handed-over order
	node string // destination node
	m    peerMsg
}

// slicePlan is what this node transfers in one slice, fixed at the cut.
type slicePlan struct {
	seq      uint64
	upTo     uint64    // messages numbered below this were handed over before the cut
	at       time.Time // when the cut happened (for the heartbeat timeout)
	barriers []loadBarrier
	released []loadRelease
	blocked  []loadRank
	planned  bool
	msgs     []outMsg
	payload  []byte
}

// load is a heartbeat's content in buffered mode: what its node transfers
// in the slice, and what it saw at the cut.
type load struct {
	Node     string        `msgpack:"n"`
	Flows    []loadFlow    `msgpack:"f"` // per destination node
	Barriers []loadBarrier `msgpack:"b"` // local arrivals at open barriers
	Blocked  []loadRank    `msgpack:"k"` // local ranks blocked in a receive or barrier
	Waiting  int           `msgpack:"w"` // messages left in the outbox for later slices
	// Released is each local job's highest barrier released here. A peer
	// that missed some of the arrivals (a heartbeat lost, or this node
	// not yet a member in its eyes) releases from it: arrivals stop being
	// reported once released, so without it that peer would wait forever.
	Released []loadRelease `msgpack:"r"`
}

type loadRelease struct {
	Job int64  `msgpack:"j"`
	Seq uint64 `msgpack:"s"`
}

type loadFlow struct {
	Node  string `msgpack:"n"`
	Msgs  int    `msgpack:"m"`
	Bytes int64  `msgpack:"b"`
}

type loadBarrier struct {
	Job     int64  `msgpack:"j"`
	Seq     uint64 `msgpack:"s"`
	Arrived int    `msgpack:"a"`
}

type loadRank struct {
	Job  int64 `msgpack:"j"`
	Rank int   `msgpack:"r"`
}

// keepPlans is how many slices a transferred plan is kept for its
// heartbeat.
const keepPlans = 8

func (b *bcsState) init() {
	b.plans = map[uint64]*slicePlan{}
	b.loads = map[uint64]map[string]*load{}
	b.wake = make(chan struct{}, 1)
}

func (b *bcsState) wakeUp() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// enqueue keeps m for a later slice (a copy of its data: the caller's
// may be borrowed).
func (b *bcsState) enqueue(node string, m peerMsg) {
	m.own()
	b.outbox = append(b.outbox, outMsg{n: b.nextN, node: node, m: m})
	b.nextN++
}

func (b *bcsState) dropJob(id int64) {
	b.outbox = slices.DeleteFunc(b.outbox, func(o outMsg) bool { return o.m.Job == id })
	for _, p := range b.plans {
		p.msgs = slices.DeleteFunc(p.msgs, func(o outMsg) bool { return o.m.Job == id })
	}
}

// Cut marks the strobe that starts slice seq of controller epoch: what the
// local ranks handed over before it, and the barrier arrivals and blocked
// ranks at this instant, make up the slice's transfer and heartbeat. It
// is called on the strobe path and only records the instant; the plan is
// made when the heartbeat is composed (HeartbeatData) or the transfer is
// due, whichever comes first.
func (r *Relay) Cut(epoch, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mode != Buffered {
		return
	}
	b := &r.bcs
	if epoch != b.epoch {
		// A new controller: what was cut under the old one goes now.
		r.transferDueLocked(true)
		b.epoch, b.done = epoch, 0
		clear(b.loads)
	}
	if _, dup := b.plans[seq]; dup {
		return
	}
	p := &slicePlan{seq: seq, upTo: b.nextN, at: time.Now()}
	for _, j := range r.jobs {
		for s, n := range j.arrived {
			if s > j.released {
				p.barriers = append(p.barriers, loadBarrier{Job: j.id, Seq: s, Arrived: n})
			}
		}
		for _, rs := range j.local {
			if rs.blocked {
				p.blocked = append(p.blocked, loadRank{Job: j.id, Rank: rs.rank})
			}
		}
		if j.released > 0 {
			p.released = append(p.released, loadRelease{Job: j.id, Seq: j.released})
		}
	}
	b.plans[seq] = p
	b.order = append(b.order, seq)
	r.st.Slices++
	b.wakeUp()
}

// planLocked fixes p's transfer: the oldest messages handed over before
// its cut, up to h_max bytes (at least one message), after every earlier
// slice's plan. It also counts this node's own barrier arrivals.
func (r *Relay) planLocked(p *slicePlan) {
	if p.planned {
		return
	}
	b := &r.bcs
	for _, s := range b.order { // earlier plans first: they take the older messages
		if s == p.seq {
			break
		}
		if q := b.plans[s]; q != nil && !q.planned {
			r.planLocked(q)
		}
	}
	var bytes int64
	n := 0
	for n < len(b.outbox) && b.outbox[n].n < p.upTo {
		size := int64(len(b.outbox[n].m.Data))
		if r.hmax > 0 && n > 0 && bytes+size > r.hmax {
			break
		}
		bytes += size
		n++
	}
	p.msgs = slices.Clone(b.outbox[:n])
	b.outbox = slices.Delete(b.outbox, 0, n)
	if len(b.outbox) > 0 && b.outbox[0].n < p.upTo {
		r.st.Deferred++
	}
	flows := map[string]*loadFlow{}
	for _, o := range p.msgs {
		f := flows[o.node]
		if f == nil {
			f = &loadFlow{Node: o.node}
			flows[o.node] = f
		}
		f.Msgs++
		f.Bytes += int64(len(o.m.Data))
	}
	ld := load{Node: r.cfg.Node, Barriers: p.barriers, Blocked: p.blocked, Waiting: len(b.outbox), Released: p.released}
	for _, node := range sortStrings(mapKeys(flows)) {
		ld.Flows = append(ld.Flows, *flows[node])
	}
	payload, err := msgpack.Marshal(&ld)
	if err != nil {
		r.log.Error("encode heartbeat load", zap.Error(err))
	}
	p.payload, p.planned = payload, true
	r.st.Announced += uint64(len(p.msgs))
	r.st.AnnouncedBytes += uint64(bytes)
	r.st.MaxSliceBytes = max(r.st.MaxSliceBytes, uint64(bytes))
	for _, lb := range p.barriers {
		r.barrierReportLocked(lb, r.cfg.Node)
	}
}

// HeartbeatData returns this node's heartbeat content for slice seq of
// epoch (nil if that slice was not cut here in buffered mode).
func (r *Relay) HeartbeatData(epoch, seq uint64) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.bcs.plans[seq]
	if r.mode != Buffered || epoch != r.bcs.epoch || p == nil {
		return nil
	}
	r.planLocked(p)
	return p.payload
}

// PeerHeartbeat takes a peer's heartbeat content for slice seq of epoch:
// the barrier arrivals it reports count at once; its transfer plan tells
// what is coming here.
func (r *Relay) PeerHeartbeat(from string, epoch, seq uint64, data []byte) {
	if len(data) == 0 {
		return
	}
	var ld load
	if err := msgpackcheck.Check(data); err != nil {
		r.log.Warn("malformed heartbeat load; ignored", zap.String("from", from), zap.Error(err))
		return
	}
	if err := msgpack.Unmarshal(data, &ld); err != nil {
		r.log.Warn("malformed heartbeat load; ignored", zap.String("from", from), zap.Error(err))
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := &r.bcs
	if r.mode != Buffered || epoch != b.epoch {
		return
	}
	for _, f := range ld.Flows {
		if f.Node == r.cfg.Node {
			r.st.AnnouncedIn += uint64(f.Msgs)
			r.st.AnnouncedInBytes += uint64(f.Bytes)
		}
	}
	for _, lb := range ld.Barriers {
		r.barrierReportLocked(lb, from)
	}
	for _, rel := range ld.Released {
		if j := r.jobs[rel.Job]; j != nil {
			r.releaseLocked(j, rel.Seq)
		}
	}
	// A peer may switch before this node does: keep its load for a slice
	// not cut here yet, but not for one already transferred.
	if seq > b.done && len(b.loads) < 64 {
		if b.loads[seq] == nil {
			b.loads[seq] = map[string]*load{}
		}
		b.loads[seq][from] = &ld
		b.wakeUp()
	}
}

// barrierReportLocked, at the job's root (barrier.Root), records node's
// arrivals at a barrier (reports only grow); when every rank of the job
// is in, it releases the barrier here and sends the release to the job's
// other nodes at once (frameBarrierDone over the relays' connections), so
// the barrier completes in the slice after its last arrival. Elsewhere
// reports are not counted: a node learns the release from the root (and,
// should that frame be lost, from the root's next heartbeat, Released).
func (r *Relay) barrierReportLocked(lb loadBarrier, node string) {
	j := r.jobs[lb.Job]
	if j == nil || lb.Seq <= j.released || r.rootLocked(j) != r.cfg.Node {
		return
	}
	if !j.count.Report(node, lb.Seq, lb.Arrived) {
		return
	}
	for _, h := range j.hosts {
		if h != r.cfg.Node && !j.left[h] {
			r.sendPeerLocked(h, frameBarrierDone, &barrierDone{Job: j.id, Seq: lb.Seq})
		}
	}
	r.releaseLocked(j, lb.Seq)
}

// rootLocked is the node that counts j's barriers in buffered mode.
func (r *Relay) rootLocked(j *job) string {
	return barrier.Root(j.hosts, func(n string) bool { return j.left[n] })
}

// transferLoop sends each cut slice's transfer once the heartbeat for it
// of every peer that shares a job with this node is in, or its timeout passes, or a later slice has
// been cut.
func (r *Relay) transferLoop(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.bcs.wake:
		case <-timer.C:
		}
		r.mu.Lock()
		next := r.transferDueLocked(false)
		r.mu.Unlock()
		if next > 0 {
			timer.Reset(next)
		}
	}
}

// transferDueLocked transfers, in order, the cut slices that are due (all
// of them with force) and returns how long until the first one left
// times out (0: none left).
func (r *Relay) transferDueLocked(force bool) time.Duration {
	b := &r.bcs
	for len(b.order) > 0 {
		seq := b.order[0]
		p := b.plans[seq]
		waited := time.Since(p.at)
		complete := true
		for n := range r.sharedLocked() { // only a node sharing a job can send here or hold a barrier
			if _, known := r.peers[n]; known && b.loads[seq][n] == nil {
				complete = false
				break
			}
		}
		if !force && !complete && len(b.order) == 1 && waited < r.hbTimeout {
			return r.hbTimeout - waited
		}
		if !complete {
			r.st.HeartbeatWaits++
		}
		r.planLocked(p)
		r.sendPlanLocked(p)
		// The plan stays a few slices: this node's heartbeat for the slice
		// may be composed after the transfer (the peers' heartbeats came
		// first) and must still carry it.
		p.msgs = nil
		for s := range b.plans {
			if s+keepPlans <= seq {
				delete(b.plans, s)
			}
		}
		b.order = b.order[1:]
		b.done = seq
		for s := range b.loads {
			if s <= seq {
				delete(b.loads, s)
			}
		}
	}
	return 0
}

// sendPlanLocked sends a slice's transfer in rounds: round j goes to the
// node j places after this one in name order (round 0: this node's own
// ranks), so that at any moment the nodes send to different nodes.
func (r *Relay) sendPlanLocked(p *slicePlan) {
	nodes := r.nodesLocked()
	self := slices.Index(nodes, r.cfg.Node)
	byNode := map[string][]outMsg{}
	for _, o := range p.msgs {
		byNode[o.node] = append(byNode[o.node], o)
	}
	send := func(node string) {
		for _, o := range byNode[node] {
			r.forwardLocked(node, o.m, p.seq)
			r.st.Transferred++
			r.st.TransferredBytes += uint64(len(o.m.Data))
		}
		delete(byNode, node)
	}
	for j := range nodes {
		send(nodes[(self+j)%len(nodes)])
	}
	for _, node := range sortStrings(mapKeys(byNode)) { // nodes not (yet) known as peers
		send(node)
	}
}

// flushBufferedLocked sends everything buffered at once (leaving
// buffered mode).
func (r *Relay) flushBufferedLocked() {
	r.transferDueLocked(true)
	for _, o := range r.bcs.outbox {
		r.forwardLocked(o.node, o.m, 0)
	}
	r.bcs.outbox = nil
	clear(r.bcs.loads)
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

func sortStrings(s []string) []string {
	slices.Sort(s)
	return s
}
