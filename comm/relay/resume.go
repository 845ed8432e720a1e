package relay

import (
	"slices"

	"go.uber.org/zap"

	"github.com/cosched/cosched/comm"
)

// Relay restarts (docs/runtime.md, "Relay restarts"). Ranks whose Hello
// says Numbers number their messages per destination (comm.Send.Seq) and
// keep each until it is acknowledged. The destination's relay accepts a
// source's numbered messages in order, one inStream per (source,
// destination rank): it holds one that comes early, drops one that came
// before, and acknowledges each as it delivers it (comm.Acked, through
// the source's relay: framePeerAck). What a relay holds dies with it;
// the ranks and the other relays rebuild it:
//   - its ranks resume their connections (comm/resume.go) and send again
//     their posted receives, their barrier, and their messages not
//     acknowledged;
//   - the job, registered again with ReattachJob, holds every numbered
//     message for its ranks until each rank's Hello says what it received
//     (comm.Hello.Got), then delivers the rest in order;
//   - the other nodes' relays, told by frameRestarted, and whenever their
//     connection to a peer was re-established, ask their ranks to send
//     again what the peer's ranks have not acknowledged (comm.Resend):
//     the frames lost with a dead connection are among them.

// dupKind says how an inStream saw a message.
type dupKind int

const (
	fresh    dupKind = iota // accepted now or held
	seenHeld                // held already (a second copy)
	seenPast                // accepted before: delivered, or queued for a receive
)

// inStream orders and deduplicates one source's numbered messages to one
// rank. Pure: its messages are T.
type inStream[T any] struct {
	// known: next is what the rank is owed next. A relay that restarted
	// does not know it until the rank's Hello says what it received.
	known bool
	next  uint64
	skip  map[uint64]struct{} // numbers above next the rank received before a restart
	held  map[uint64]T        // arrived before their turn
}

func newInStream[T any](known bool) *inStream[T] {
	return &inStream[T]{known: known, next: 1}
}

// due reports whether message seq would be accepted at once.
func (s *inStream[T]) due(seq uint64) bool { return s.known && seq == s.next }

// arrive takes message seq: ready is what may be accepted now, in order
// (m and the held messages it was the gap before).
func (s *inStream[T]) arrive(seq uint64, m T) (ready []T, d dupKind) {
	if _, ok := s.held[seq]; ok {
		return nil, seenHeld
	}
	if _, ok := s.skip[seq]; ok || s.known && seq < s.next {
		return nil, seenPast
	}
	if !s.due(seq) {
		if s.held == nil {
			s.held = map[uint64]T{}
		}
		s.held[seq] = m
		return nil, fresh
	}
	s.next++
	return s.drain([]T{m}), fresh
}

func (s *inStream[T]) drain(ready []T) []T {
	for {
		if _, ok := s.skip[s.next]; ok {
			delete(s.skip, s.next)
			s.next++
			continue
		}
		m, ok := s.held[s.next]
		if !ok {
			return ready
		}
		delete(s.held, s.next)
		ready = append(ready, m)
		s.next++
	}
}

// resume learns what the rank received (everything up to floor, and
// above): ready is what may be accepted now, in order; past is the held
// messages it had received already, to be acknowledged again. A stream
// already known is left alone: this relay did not restart.
func (s *inStream[T]) resume(floor uint64, above []uint64) (ready []T, past []uint64) {
	if s.known {
		return nil, nil
	}
	s.known, s.next = true, floor+1
	for _, a := range above {
		if a > floor {
			if s.skip == nil {
				s.skip = map[uint64]struct{}{}
			}
			s.skip[a] = struct{}{}
		}
	}
	for _, seq := range slices.Sorted(mapKeysOf(s.held)) {
		if _, ok := s.skip[seq]; ok || seq <= floor {
			delete(s.held, seq)
			past = append(past, seq)
		}
	}
	return s.drain(nil), past
}

func mapKeysOf[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// streamLocked is rs's stream from src.
func (rs *rankState) streamLocked(src int) *inStream[peerMsg] {
	st := rs.streams[src]
	if st == nil {
		if rs.streams == nil {
			rs.streams = map[int]*inStream[peerMsg]{}
		}
		st = newInStream[peerMsg](!rs.awaiting)
		rs.streams[src] = st
	}
	return st
}

// numberedLocked takes a numbered message for rs in its stream's order.
func (r *Relay) numberedLocked(rs *rankState, m peerMsg) {
	st := rs.streamLocked(m.Src)
	if !st.due(m.Seq) {
		m.own() // held, or dropped
	}
	ready, d := st.arrive(m.Seq, m)
	switch d {
	case seenHeld:
		r.st.Duplicates++
		return
	case seenPast:
		r.st.Duplicates++
		if !rs.q.queuedSeq(m.Src, m.Seq) { // delivered: its ack was lost, or is not due yet
			r.ackDeliveredLocked(rs, m.Src, m.Seq)
		}
		return
	}
	for _, x := range ready {
		r.acceptLocked(rs, x)
	}
}

// resumeLocked applies a Hello's account of what rank rs received to its
// streams that a restart left unknown.
func (r *Relay) resumeLocked(rs *rankState, got []comm.Stream) {
	if !rs.awaiting {
		return
	}
	rs.awaiting = false
	said := map[int]comm.Stream{}
	for _, g := range got {
		if g.Src >= 0 && g.Src < rs.job.size {
			said[g.Src] = g
		}
	}
	for src := range rs.job.size {
		st := rs.streams[src]
		g, ok := said[src]
		if st == nil {
			if !ok {
				continue // nothing held: a stream created from now on is known
			}
			st = rs.streamLocked(src)
			st.known = false
		}
		ready, past := st.resume(g.Floor, g.Above)
		for _, x := range ready {
			r.acceptLocked(rs, x)
		}
		for _, seq := range past {
			r.ackLocked(rs.job, src, rs.rank, seq)
		}
	}
}

// ackDeliveredLocked acknowledges again message seq of src to rs, whose
// Deliver was queued: once what rs's connection has queued is written
// (it may be among it). Without a connection, only if rs finalized (it
// is done; the source may forget): else the Deliver may have died with
// its last connection, and the source keeps its copy.
func (r *Relay) ackDeliveredLocked(rs *rankState, src int, seq uint64) {
	switch {
	case rs.conn == nil && !rs.finalized:
		return
	case rs.conn != nil && rs.conn.q.ackAfter(dueAck{j: rs.job, src: src, dst: rs.rank, seq: seq}):
		return // sent once written
	}
	r.ackLocked(rs.job, src, rs.rank, seq)
}

// ackWritten sends the acknowledgements that writes on q made due
// (writeQueue.takeDue). It takes r.mu: its caller must not hold it.
func (r *Relay) ackWritten(q *writeQueue) {
	var due [32]dueAck // on the stack: no allocation per write
	for {
		n := q.takeDue(due[:])
		if n == 0 {
			return
		}
		r.mu.Lock()
		if !r.closed { // a closed relay sends nothing more; the sources resend
			for _, a := range due[:n] {
				r.ackLocked(a.j, a.src, a.dst, a.seq)
			}
		}
		r.unlock()
		if n < len(due) {
			return
		}
	}
}

// ackLocked tells rank src of j that its message seq to dst was
// delivered.
func (r *Relay) ackLocked(j *job, src, dst int, seq uint64) {
	node := j.nodes[src]
	if node != r.cfg.Node {
		r.sendPeerLocked(node, framePeerAck, &peerAck{Job: j.id, Src: src, Dst: dst, Seqs: []uint64{seq}})
		return
	}
	r.ackRankLocked(j, src, dst, []uint64{seq})
}

func (r *Relay) ackRankLocked(j *job, src, dst int, seqs []uint64) {
	if rs := j.local[src]; rs != nil && rs.conn != nil && rs.numbers {
		rs.conn.sendLocked(r, comm.FrameAcked, &comm.Acked{Dst: dst, Seqs: seqs}, payload{})
	}
}

// resendLocked asks j's local ranks to send again what they sent to the
// ranks on node and was not acknowledged, and sends again what the
// job's root and node told each other of barriers: node's relay
// restarted, or the connection to it broke, and what it carried may be
// lost.
func (r *Relay) resendLocked(j *job, node string) {
	switch r.cfg.Node {
	case j.nodes[0]:
		r.rereleaseLocked(j, node)
	default:
		if node == j.nodes[0] {
			r.recountLocked(j)
		}
	}
	var dsts []int
	for rk, n := range j.nodes {
		if n == node {
			dsts = append(dsts, rk)
		}
	}
	if len(dsts) == 0 {
		return
	}
	for _, rs := range j.local {
		if rs.conn != nil && rs.numbers && !rs.finalized {
			rs.conn.sendLocked(r, comm.FrameResend, &comm.Resend{Dsts: dsts}, payload{})
		}
	}
}

// peerBackLocked: the connection to node was made again after a failure.
func (r *Relay) peerBackLocked(node string) {
	for _, id := range slices.Sorted(mapKeysOf(r.jobs)) {
		if j := r.jobs[id]; slices.Contains(j.hosts, node) {
			r.resendLocked(j, node)
		}
	}
}

// ReattachJob registers, as AddJobAs does, a job whose ranks here outlived
// the relay's previous life (the agent restarted and kept them): their
// numbered messages are held until each rank resumes and says what it
// received, and the job's other nodes are told, so that their ranks send
// again what this relay may have lost.
func (r *Relay) ReattachJob(id int64, nodes []string, uid uint32) error {
	return r.addJob(id, nodes, uid, true)
}

func (r *Relay) restartedLocked(j *job) {
	for _, h := range j.hosts {
		if h != r.cfg.Node {
			r.sendPeerLocked(h, frameRestarted, &restarted{Job: j.id, Node: r.cfg.Node})
		}
	}
	r.log.Info("job reattached: ranks resume, peers resend", zap.Int64("job", j.id))
}

// peerAck acknowledges messages of rank Src to rank Dst: its relay
// delivered them.
type peerAck struct {
	Job  int64    `msgpack:"j"`
	Src  int      `msgpack:"s"`
	Dst  int      `msgpack:"d"`
	Seqs []uint64 `msgpack:"q"`
}

// restarted says Node's relay restarted with job Job's ranks there.
type restarted struct {
	Job  int64  `msgpack:"j"`
	Node string `msgpack:"n"`
}
