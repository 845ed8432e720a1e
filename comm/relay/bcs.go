package relay

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"

	"github.com/cosched/cosched/comm/relay/barrier"
	"github.com/cosched/cosched/comm/relay/bcs"
	"github.com/cosched/cosched/internal/msgpackcheck"
)

// bcsState is the buffered mode's state, guarded by Relay.mu.
type bcsState struct {
	outbox bcs.Outbox[peerMsg] // handed over by local ranks, not in a plan yet
	epoch  uint64              // controller epoch of the cuts below
	plans  map[uint64]*slicePlan
	order  []uint64                    // cut slices not yet transferred, in order
	done   uint64                      // the last slice transferred
	loads  map[uint64]map[string]*load // peers' heartbeat contents by slice (at a root: its jobs' nodes')
	// The rooted exchange: a job's root (barrier.Root) hears the job's
	// nodes' heartbeats and sends each of them the job's sliceReady.
	ready     map[uint64]map[int64]bool // slices whose sliceReady came from the root, by job
	readySent map[uint64]map[int64]bool // at a root: slices whose sliceReady went out, by job
	timedOut  bool                      // the last transfer went at its timeout, not exchanged
	// left is the jobs this node finished and left lately (leftFlowsLocked).
	left map[int64]*leftJob
	wake chan struct{} // the transfer loop has something to look at
}

// leftJob is what a node keeps of a job it finished and left, for the
// heartbeats that still come to it as the job's root: nodes that cut a
// slice before they learnt it left send it theirs.
type leftJob struct {
	hosts     []string
	left      map[string]bool // the job's nodes that had left it, this one included
	successor string          // the job's root after this node, as this node knew it
	epoch     uint64
	leftAt    uint64 // the last slice transferred here before leaving
	released  uint64
	at        time.Time
}

// Bounds on bcsState.left: a heartbeat is late by a slice or two, not a
// minute, and a node leaves a job at most once.
const (
	keepLeftJobs = time.Minute
	maxLeftJobs  = 1024
)

// slicePlan is what this node transfers in one slice, fixed at the cut.
type slicePlan struct {
	seq      uint64
	upTo     uint64    // messages numbered below this were handed over before the cut
	at       time.Time // when the cut happened (for the heartbeat timeout)
	barriers []loadBarrier
	released []loadRelease
	blocked  []loadRank
	planned  bool
	msgs     []bcs.Msg[peerMsg]
	payload  []byte
	load     load // what payload encodes
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

// loadFlow is what a node transfers to one node for one job in a slice.
// Job was added with the rooted exchange: a root adds up its own job's
// flows only (loads of older builds have none and are not added up).
type loadFlow struct {
	Node  string `msgpack:"n"`
	Msgs  int    `msgpack:"m"`
	Bytes int64  `msgpack:"b"`
	Job   int64  `msgpack:"j,omitempty"`
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
	b.ready = map[uint64]map[int64]bool{}
	b.readySent = map[uint64]map[int64]bool{}
	b.left = map[int64]*leftJob{}
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
	b.outbox.Add(node, m.Job, int64(len(m.Data)), m)
}

func (b *bcsState) dropJob(id int64) {
	b.outbox.DropJob(id)
	for _, p := range b.plans {
		p.msgs = slices.DeleteFunc(p.msgs, func(o bcs.Msg[peerMsg]) bool { return o.Job == id })
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
	defer r.unlock()
	if r.mode != Buffered {
		return
	}
	b := &r.bcs
	if epoch != b.epoch {
		// A new controller: what was cut under the old one goes now.
		r.transferDueLocked(true)
		b.epoch, b.done = epoch, 0
		clear(b.loads)
		clear(b.ready)
		clear(b.readySent)
	}
	if _, dup := b.plans[seq]; dup {
		return
	}
	p := &slicePlan{seq: seq, upTo: b.outbox.Mark(), at: time.Now()}
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
	tp := b.outbox.Take(p.upTo, r.hmax)
	p.msgs = tp.Msgs
	bytes := tp.Bytes
	if tp.Deferred {
		r.st.Deferred++
	}
	ld := load{Node: r.cfg.Node, Barriers: p.barriers, Blocked: p.blocked, Waiting: tp.Waiting, Released: p.released}
	for _, f := range tp.Flows {
		ld.Flows = append(ld.Flows, loadFlow{Node: f.Node, Msgs: f.Msgs, Bytes: f.Bytes, Job: f.Job})
	}
	payload, err := msgpack.Marshal(&ld)
	if err != nil {
		r.log.Error("encode heartbeat load", zap.Error(err))
	}
	p.payload, p.load, p.planned = payload, ld, true
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
	defer r.unlock()
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
	defer r.unlock()
	b := &r.bcs
	if r.mode != Buffered || epoch != b.epoch {
		return
	}
	for _, f := range ld.Flows {
		// Flows of the jobs this node is the root of (the others come
		// with their root's sliceReady), or from an older build; flows of
		// a job not registered here yet wait for it (AddJobAs).
		j := r.jobs[f.Job]
		switch {
		case f.Node != r.cfg.Node:
		case f.Job == 0 || j != nil && r.rootLocked(j) == r.cfg.Node:
			r.st.AnnouncedIn += uint64(f.Msgs)
			r.st.AnnouncedInBytes += uint64(f.Bytes)
		case j == nil && r.ended[f.Job].IsZero() && (len(r.earlyFlows) < maxEarlyFlows || r.earlyFlows[f.Job] != (flowCount{})):
			if r.earlyFlows == nil {
				r.earlyFlows = map[int64]flowCount{}
			}
			fc := r.earlyFlows[f.Job]
			fc.msgs += uint64(f.Msgs)
			fc.bytes += uint64(f.Bytes)
			r.earlyFlows[f.Job] = fc
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
	r.lateFlowsLocked(from, epoch, seq, &ld)
	r.leftFlowsLocked(from, seq, &ld)
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
		r.unlock()
		if next > 0 {
			timer.Reset(next)
		}
	}
}

// transferDueLocked transfers, in order, the cut slices that are due (all
// of them with force) and returns how long until the first one left
// times out (0: none left). A slice is due once it is exchanged
// (exchangedLocked), or its timeout has passed, or a later slice has
// been cut; at a job's root the job's sliceReady goes out first.
func (r *Relay) transferDueLocked(force bool) time.Duration {
	b := &r.bcs
	transferred := false
	defer func() {
		if transferred {
			r.leaveFinishedLocked(false)
		}
	}()
	for len(b.order) > 0 {
		seq := b.order[0]
		p := b.plans[seq]
		waited := time.Since(p.at)
		timedOut := force || len(b.order) > 1 || waited >= r.hbTimeout
		r.rootReadyLocked(p, timedOut)
		complete := r.exchangedLocked(seq)
		if !complete && !timedOut {
			return r.hbTimeout - waited
		}
		if !complete {
			r.st.HeartbeatWaits++
		}
		r.planLocked(p)
		r.sendPlanLocked(p)
		transferred, b.timedOut = true, !complete
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
			if s < seq {
				r.unreadiedFlowsLocked(s)
			}
		}
		for _, m := range []map[uint64]map[int64]bool{b.ready, b.readySent} {
			for s := range m {
				if s <= seq {
					delete(m, s)
				}
			}
		}
		for s := range b.loads {
			if s <= seq {
				delete(b.loads, s)
			}
		}
	}
	return 0
}

// leaveFinishedLocked leaves the jobs this node finished (FinishJob) and
// owes nothing any more: no slice cut here waits for its transfer (each
// needs this node's heartbeat, and as a job's root its sliceReady), and
// none of the job's messages wait in the outbox. When the last transfer
// went at its timeout, a job's root may still hear a late heartbeat for
// that slice (lateFlowsLocked announces its flows): the job stays until
// the next transfer. With force (leaving buffered mode) every finishing
// job leaves. Leaving tells the job's other nodes (jobLeft), after
// everything this node sent them for it, on the same connections.
func (r *Relay) leaveFinishedLocked(force bool) {
	b := &r.bcs
	for id, j := range r.jobs {
		if !j.finishing {
			continue
		}
		leave, overdue := bcs.Leave(bcs.Finished{Pending: len(b.order) > 0, Queued: b.outbox.HasJob(id), TimedOut: b.timedOut, Overdue: j.overdue}, force)
		j.overdue = overdue
		if !leave {
			continue
		}
		r.sendJobLeftLocked(id, j)
		if !force {
			r.keepLeftLocked(j)
		}
		r.forgetJobLocked(id)
		r.notes.push(blockEvent{targets: true}) // this node no longer heartbeats the job's root
	}
}

// sendJobLeftLocked tells j's other nodes still in it that this node
// has left it.
func (r *Relay) sendJobLeftLocked(id int64, j *job) {
	for _, h := range j.hosts {
		if h != r.cfg.Node && !j.left[h] {
			r.sendPeerLocked(h, frameJobLeft, &jobLeft{Job: id, Node: r.cfg.Node})
		}
	}
}

// keepLeftLocked records j, which this node is leaving, for the
// heartbeats of its nodes still to come (leftFlowsLocked), and answers
// those already in for slices not cut here yet.
func (r *Relay) keepLeftLocked(j *job) {
	b := &r.bcs
	now := time.Now()
	for id, lj := range b.left {
		if now.Sub(lj.at) > keepLeftJobs {
			delete(b.left, id)
		}
	}
	if len(b.left) >= maxLeftJobs {
		// Full of jobs left within the minute: the oldest goes, not this
		// one (a heartbeat is late by a slice or two).
		var oldest *leftJob
		var oldestID int64
		for id, lj := range b.left {
			if oldest == nil || lj.at.Before(oldest.at) {
				oldest, oldestID = lj, id
			}
		}
		delete(b.left, oldestID)
	}
	left := maps.Clone(j.left)
	left[r.cfg.Node] = true
	b.left[j.id] = &leftJob{hosts: j.hosts, left: left, successor: barrier.Root(j.hosts, func(n string) bool { return left[n] }),
		epoch: b.epoch, leftAt: b.done, released: j.released, at: now}
	for seq, loads := range b.loads {
		for from, ld := range loads {
			r.leftFlowsLocked(from, seq, ld)
		}
	}
}

// leftFlowsLocked: a heartbeat for slice seq that announces flows of a
// job this node left (it was the job's root, and the sender did not know
// yet that it left) has them announced to their destinations, in
// sliceReady frames of their own, as lateFlowsLocked does: the job's new
// root never hears it. For a slice after those this node answered, the
// new root's own flows are not: it announces them itself (it answers the
// slice, at its heartbeat timeout if its nodes' heartbeats came here).
func (r *Relay) leftFlowsLocked(from string, seq uint64, ld *load) {
	b := &r.bcs
	r.redirectLocked(seq, bcs.Redirect(ld.flows(), from, r.cfg.Node, func(f bcs.Flow) bool {
		lj := b.left[f.Job]
		return lj != nil && lj.epoch == b.epoch && slices.Contains(lj.hosts, f.Node) && !(seq > lj.leftAt && from == lj.successor)
	}), func(job int64) uint64 { return b.left[job].released })
}

// exchangedLocked says whether slice seq's control data is complete here
// (bcs.Exchanged): for every job, at its root, every other node's
// heartbeat is in; at its other nodes, the root's sliceReady is. Nodes
// not known by address yet, and nodes that left a job, are not waited
// for; nor are the heartbeats of a slice the job's previous root answered
// (this node became the root when that one left: the heartbeats went
// there).
func (r *Relay) exchangedLocked(seq uint64) bool {
	jobs := make([]bcs.Job, 0, len(r.jobs))
	for _, j := range r.jobs {
		jobs = append(jobs, exchangeJob(j))
	}
	return bcs.Exchanged(jobs, r.heardLocked(seq))
}

// allReportedLocked: every other node of j (known by address, not left)
// has sent its heartbeat for seq (bcs.AllReported).
func (r *Relay) allReportedLocked(j *job, seq uint64) bool {
	return bcs.AllReported(exchangeJob(j), r.heardLocked(seq))
}

// exchangeJob is j as package bcs sees it.
func exchangeJob(j *job) bcs.Job { return bcs.Job{ID: j.id, Hosts: j.hosts, Left: j.left} }

// heardLocked is what this node has heard of slice seq.
func (r *Relay) heardLocked(seq uint64) bcs.Heard {
	b := &r.bcs
	return bcs.Heard{
		Self:     r.cfg.Node,
		Known:    func(n string) bool { return r.peers[n] != "" },
		Reported: func(n string) bool { return b.loads[seq][n] != nil },
		Ready:    func(job int64) bool { return b.ready[seq][job] },
	}
}

// rootReadyLocked, at the root of a job, sends each of the job's other
// nodes the job's sliceReady for p's slice once every one of them has
// sent its heartbeat for it (or now, with force): the barrier the root
// has released, and what the job's nodes announced for the receiver.
// This is the exchange that heartbeats to every node of the job did
// before: a node sends one heartbeat per job root, and a root one frame
// per node of its job, instead of every node one to every other. A slice
// whose sliceReady came from the job's previous root (it left the job
// since, and this node is the root now) is answered already: the
// heartbeats of it, this node's included, went there.
func (r *Relay) rootReadyLocked(p *slicePlan, force bool) {
	b := &r.bcs
	for _, j := range r.jobs {
		if r.rootLocked(j) != r.cfg.Node || b.readySent[p.seq][j.id] || b.ready[p.seq][j.id] {
			continue
		}
		if !force && !r.allReportedLocked(j, p.seq) {
			continue
		}
		r.planLocked(p)
		if b.readySent[p.seq] == nil {
			b.readySent[p.seq] = map[int64]bool{}
		}
		b.readySent[p.seq][j.id] = true
		heard := map[string][]bcs.Flow{}
		for from, ld := range b.loads[p.seq] {
			heard[from] = ld.flows()
		}
		for _, rd := range bcs.Answer(exchangeJob(j), r.cfg.Node, p.load.flows(), heard) {
			r.sendPeerLocked(rd.Node, frameSliceReady, &sliceReady{Job: j.id, Epoch: b.epoch, Seq: p.seq, Released: j.released, Msgs: rd.Msgs, Bytes: rd.Bytes})
		}
	}
}

// flows is ld's flows as package bcs sees them.
func (ld *load) flows() []bcs.Flow {
	fs := make([]bcs.Flow, len(ld.Flows))
	for i, f := range ld.Flows {
		fs[i] = bcs.Flow{Node: f.Node, Job: f.Job, Msgs: f.Msgs, Bytes: f.Bytes}
	}
	return fs
}

// redirectLocked sends the Ready frames of bcs.Redirect, for slice seq.
func (r *Relay) redirectLocked(seq uint64, rs []bcs.Ready, released func(job int64) uint64) {
	for _, rd := range rs {
		r.sendPeerLocked(rd.Node, frameSliceReady, &sliceReady{Job: rd.Job, Epoch: r.bcs.epoch, Seq: seq, Released: released(rd.Job), Msgs: rd.Msgs, Bytes: rd.Bytes})
	}
}

// jobReleased is a registered job's highest barrier released.
func (r *Relay) jobReleased(id int64) uint64 {
	if j := r.jobs[id]; j != nil {
		return j.released
	}
	return 0
}

// lateFlowsLocked, at a job's root: a heartbeat that comes after the
// job's sliceReady for its slice went out (the root's timeout passed)
// still announces its flows, in a sliceReady of its own to each
// destination, so that what is announced is what arrives.
func (r *Relay) lateFlowsLocked(from string, epoch, seq uint64, ld *load) {
	b := &r.bcs
	if epoch != b.epoch {
		return
	}
	r.redirectLocked(seq, bcs.Redirect(ld.flows(), from, r.cfg.Node, func(f bcs.Flow) bool {
		j := r.jobs[f.Job]
		return j != nil && r.rootLocked(j) == r.cfg.Node && (b.readySent[seq][j.id] || seq <= b.done)
	}), r.jobReleased)
}

// unreadiedFlowsLocked, at a job's root: heartbeats of a slice this
// node never cut (it missed that strobe), so never sent the sliceReady
// of, announce their flows in sliceReady frames of their own before they
// are forgotten.
func (r *Relay) unreadiedFlowsLocked(seq uint64) {
	b := &r.bcs
	for from, ld := range b.loads[seq] {
		r.redirectLocked(seq, bcs.Redirect(ld.flows(), from, r.cfg.Node, func(f bcs.Flow) bool {
			j := r.jobs[f.Job]
			return j != nil && r.rootLocked(j) == r.cfg.Node && !b.readySent[seq][j.id]
		}), r.jobReleased)
	}
}

// readyLocked takes a job root's sliceReady (or a late one's flows) from
// node from. One from a node that left the job (leftFlowsLocked; it came
// after that node's jobLeft, on the same connection) announces flows
// only: the slice is the job's new root's to answer.
func (r *Relay) readyLocked(j *job, sr *sliceReady, from string) {
	b := &r.bcs
	r.releaseLocked(j, sr.Released)
	if r.mode != Buffered || sr.Epoch != b.epoch {
		return
	}
	// Each sliceReady carries flows no other one did (the root sends one
	// per node and slice, then one per late heartbeat's flow).
	r.st.AnnouncedIn += uint64(sr.Msgs)
	r.st.AnnouncedInBytes += uint64(sr.Bytes)
	if j.left[from] || sr.Seq <= b.done || len(b.ready) >= 64 && b.ready[sr.Seq] == nil {
		return
	}
	if b.ready[sr.Seq] == nil {
		b.ready[sr.Seq] = map[int64]bool{}
	}
	b.ready[sr.Seq][j.id] = true
	b.wakeUp()
}

// sendPlanLocked sends a slice's transfer in rounds: round j goes to the
// node j places after this one in name order (round 0: this node's own
// ranks), so that at any moment the nodes send to different nodes.
func (r *Relay) sendPlanLocked(p *slicePlan) {
	nodes := r.nodesLocked()
	self := slices.Index(nodes, r.cfg.Node)
	byNode := map[string][]bcs.Msg[peerMsg]{}
	for _, o := range p.msgs {
		byNode[o.Node] = append(byNode[o.Node], o)
	}
	send := func(node string) {
		for _, o := range byNode[node] {
			r.forwardLocked(node, o.Value, p.seq)
			r.st.Transferred++
			r.st.TransferredBytes += uint64(len(o.Value.Data))
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
	for _, o := range r.bcs.outbox.TakeAll() {
		r.forwardLocked(o.Node, o.Value, 0)
	}
	r.leaveFinishedLocked(true)
	clear(r.bcs.loads)
	clear(r.bcs.ready)
	clear(r.bcs.readySent)
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
