package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/zap"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// The relay ↔ relay protocol: TCP, internal/frame frames. Each relay
// dials one connection to each peer it sends to and says who it is
// first; everything it sends to that peer goes over that connection, in
// order. Type numbers are append only.
const (
	framePeerHello    frame.Type = 1 // peerHello
	framePeerMsg      frame.Type = 2 // peerMsg
	frameBarrierCount frame.Type = 3 // barrierCount: a node's arrivals, to the job's root (immediate mode)
	frameBarrierDone  frame.Type = 4 // barrierDone: the root's release, to every node of the job (both modes)
	frameJobLeft      frame.Type = 5 // jobLeft: a node's ranks of a job have all ended (buffered mode)
	frameSliceReady   frame.Type = 6 // sliceReady: a job's root to its nodes, once per slice (buffered mode)
	framePeerAck      frame.Type = 7 // peerAck: numbered messages delivered, to the sender's node (resume.go)
	frameRestarted    frame.Type = 8 // restarted: a node's relay restarted with a job's ranks (resume.go)
	// 9 and 10 open a pair's connection (xchannels.go), never a link.
	frameNoChannels frame.Type = 11 // noChannels: a rank asked for no channel (xchannels.go)
	frameBroken     frame.Type = 12 // pairBroken: a rank's channel to another broke (broken.go)
)

// A relay skips a frame of a type it does not know (a later build's),
// logging it, and reads on. Relays of builds before frameJobLeft close
// the connection instead: see docs/scaling.md.

// handshakeTimeout bounds a link's TLS handshake (Config.Key).
const handshakeTimeout = 5 * time.Second

// firstFrameTimeout bounds the wait for an inbound connection's first
// frame: long, as a loaded peer may be slow to write it.
const firstFrameTimeout = 30 * time.Second

// refused counts a link whose handshake failed.
func (r *Relay) refused() {
	r.mu.Lock()
	r.st.Refused++
	r.unlock()
}

// warnRefused logs a refused link or rank, at most once per 10 s with the
// number suppressed since: a peer without the key may keep trying.
func (r *Relay) warnRefused(msg string, fields ...zap.Field) {
	if ok, n := r.refusedLog.Allow(time.Now()); ok {
		r.log.Warn(msg, append(fields, zap.Int("similar warnings suppressed", n))...)
	}
}

// maxPeerFrame bounds a frame between relays: a message and its header.
const maxPeerFrame = comm.MaxFrame + 1024

// ProtocolVersion is the relay ↔ relay protocol this build speaks, sent
// in every hello. 2: the rooted exchange (frameJobLeft, frameSliceReady,
// loadFlow.Job); a hello without a version is from a build before it.
// Such a relay closes the connection on a frame of type 5 or 6 (and the
// frames queued behind it are lost), waits for every job peer's
// heartbeat (which this build no longer sends it), and is not waited for
// by this build except at the heartbeat timeout: run one build in bcs
// mode.
const ProtocolVersion = 2

type peerHello struct {
	Node    string `msgpack:"n"`
	Version uint8  `msgpack:"v,omitempty"`
}

// peerMsg is a message between ranks, as relays forward it. Slice is the
// buffered-mode slice whose transfer carried it (0: sent at once).
type peerMsg struct {
	Job   int64
	Src   int
	Dst   int
	Tag   int
	Ctx   int
	Slice uint64
	Data  []byte
	Seq   uint64 // the sender's number (comm.Send.Seq); 0: unnumbered, and not sent
	// Not sent. Data is borrowed from the frame being handled unless
	// owned; whatever keeps it calls own. rd, if set, read that frame.
	owned bool
	rd    *frame.Reader
}

// own makes m's data the relay's: a large payload stays in the chunk it
// was read into, which the reader then leaves alone (frame.Reader.Keep);
// a small one is copied.
func (m *peerMsg) own() {
	switch {
	case m.owned:
		return
	case m.rd != nil && len(m.Data) >= comm.KeepMin:
		m.rd.Keep()
	default:
		m.Data = bytes.Clone(m.Data)
	}
	m.owned, m.rd = true, nil
}

// EncodedSizeHint lets the frame be encoded in one piece.
func (m peerMsg) EncodedSizeHint() int { return len(m.Data) + 64 }

// EncodeMsgpack writes the array by hand: every message between relays is
// one, and msgpack's reflection cost more than the copy of its data.
func (m peerMsg) EncodeMsgpack(e *msgpack.Encoder) error {
	n := 7
	if m.Seq != 0 {
		n = 8 // the number after the data: a relay of an earlier build skips it
	}
	if err := e.EncodeArrayLen(n); err != nil {
		return err
	}
	for _, v := range []int64{m.Job, int64(m.Src), int64(m.Dst), int64(m.Tag), int64(m.Ctx)} {
		if err := e.EncodeInt(v); err != nil {
			return err
		}
	}
	if err := e.EncodeUint(m.Slice); err != nil {
		return err
	}
	if m.Seq == 0 {
		return frame.PutBytes(e, m.Data) // last: a writer may send it from where it is
	}
	if err := frame.PutBytes(e, m.Data); err != nil {
		return err
	}
	return e.EncodeUint(m.Seq)
}

// DecodeMsgpack reads what EncodeMsgpack writes; elements beyond the
// seventh (a later version's) are skipped.
func (m *peerMsg) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := d.DecodeArrayLen()
	if err != nil {
		return err
	}
	if n < 7 {
		return fmt.Errorf("message of %d fields, want 7", n)
	}
	ints := make([]int64, 5)
	for i := range ints {
		if ints[i], err = d.DecodeInt64(); err != nil {
			return err
		}
	}
	m.Job, m.Src, m.Dst, m.Tag, m.Ctx = ints[0], int(ints[1]), int(ints[2]), int(ints[3]), int(ints[4])
	if m.Slice, err = d.DecodeUint64(); err != nil {
		return err
	}
	if m.Data, err = frame.Bytes(d); err != nil {
		return err
	}
	if n >= 8 {
		if m.Seq, err = d.DecodeUint64(); err != nil {
			return err
		}
		n--
	}
	for range n - 7 {
		if err := d.Skip(); err != nil {
			return err
		}
	}
	return nil
}

type barrierCount struct {
	Job   int64  `msgpack:"j"`
	Seq   uint64 `msgpack:"s"`
	Count int    `msgpack:"c"`
	Node  string `msgpack:"n"`
}

type barrierDone struct {
	Job int64  `msgpack:"j"`
	Seq uint64 `msgpack:"s"`
}

// jobLeft tells a job's other nodes that Node's ranks of it have all
// ended: they stop waiting for its heartbeats and, if it was the job's
// root, count barriers at the next one.
type jobLeft struct {
	Job  int64  `msgpack:"j"`
	Node string `msgpack:"n"`
}

// sliceReady is a job's root telling one of the job's nodes that slice
// Seq's control data is in (every node of the job reported, or the root's
// timeout passed): its transfer may go. It carries what the heartbeats
// no longer bring from every node: the barrier released, and what the
// job's nodes announced for the receiver in the slice.
type sliceReady struct {
	Job      int64  `msgpack:"j"`
	Epoch    uint64 `msgpack:"e"`
	Seq      uint64 `msgpack:"s"`
	Released uint64 `msgpack:"r"` // the job's highest barrier released
	Msgs     int    `msgpack:"m"` // messages announced for the receiver
	Bytes    int64  `msgpack:"b"` // their bytes
}

// inbound is something a peer sent for a job: held while the job is not
// registered here.
type inbound struct {
	from  string
	msg   *peerMsg
	count *barrierCount
	done  *barrierDone
	left  *jobLeft
	ready *sliceReady
	ack   *peerAck
	again *restarted
	noCh  *noChannels
	brk   *pairBroken
}

func (in inbound) size() int {
	if in.msg != nil {
		return len(in.msg.Data) + 64
	}
	return 64
}

func (in inbound) job() int64 {
	switch {
	case in.msg != nil:
		return in.msg.Job
	case in.count != nil:
		return in.count.Job
	case in.left != nil:
		return in.left.Job
	case in.ready != nil:
		return in.ready.Job
	case in.ack != nil:
		return in.ack.Job
	case in.again != nil:
		return in.again.Job
	case in.noCh != nil:
		return in.noCh.Job
	case in.brk != nil:
		return in.brk.Job
	}
	return in.done.Job
}

// peerConn is the outbound connection to one peer, dialled by its writer.
type peerConn struct {
	node string
	q    *writeQueue
	// moved wakes a writer waiting to redial: the peer's address
	// changed (its relay restarted elsewhere), so the backoff is moot.
	moved chan struct{}
}

func (pc *peerConn) close() { pc.q.close() }

// peerLocked returns the outbound connection to node, starting its writer
// if needed.
func (r *Relay) peerLocked(node string) *peerConn {
	if pc := r.out[node]; pc != nil {
		return pc
	}
	pc := &peerConn{node: node, q: newWriteQueue(), moved: make(chan struct{}, 1)}
	r.out[node] = pc
	if r.closed {
		pc.close()
		return pc
	}
	r.goRun(func() { r.writePeer(pc) })
	return pc
}

// writePeer dials the peer (again after a failure) and writes its queue.
// Frames that were being written when a connection failed are lost:
// relays are on one cluster network, and a peer that cannot be reached
// has usually died, which fails its jobs.
func (r *Relay) writePeer(pc *peerConn) {
	log := r.log.With(zap.String("peer", pc.node))
	backoff := 10 * time.Millisecond
	churn := 10 * time.Millisecond // the pause before redialling after a connection's quick loss
	lost := false                  // a connection to the peer failed before
	for {
		addr, err := r.waitPeerAddr(pc)
		if err != nil {
			return
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(r.ctx, "tcp", addr)
		if err != nil {
			if r.ctx.Err() != nil {
				return
			}
			log.Warn("dial relay", zap.String("addr", addr), zap.Error(err), zap.Duration("retry in", backoff))
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(backoff):
			case <-pc.moved:
				backoff = 10 * time.Millisecond
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 10 * time.Millisecond
		made := time.Now()
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			// A 1 MiB message goes in one direct write (writeQueue.flush)
			// when the peer keeps up; the kernel caps it at wmem_max.
			tc.SetWriteBuffer(rankSocketBuffer)
		}
		stop := context.AfterFunc(r.ctx, func() { c.Close() })
		connDone := make(chan struct{})
		// leave ends c for a watcher, once; the writer's own end consumes
		// it, so a watcher that fires as the writer leaves c anyway
		// interrupts nothing (endConn).
		var left sync.Once
		leave := func() {
			left.Do(func() {
				pc.q.interrupt()
				c.Close()
			})
		}
		endConn := func() {
			stop()
			left.Do(func() {})
			pc.q.uninterrupt() // a watcher's interrupt is this connection's, not the next's
			close(connDone)
			c.Close()
		}
		r.goRun(func() { r.closeIfMoved(pc, addr, leave, connDone) })
		var conn io.Writer = c
		var rd io.Reader = c
		if r.link != nil {
			tc, err := r.link.Client(r.ctx, c, handshakeTimeout)
			if err != nil {
				endConn()
				if r.ctx.Err() != nil {
					return
				}
				r.refused()
				r.warnRefused("relay link refused", zap.String("peer", pc.node), zap.String("addr", addr), zap.Error(err), zap.Duration("retry in", backoff))
				select {
				case <-r.ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 2*time.Second)
				continue
			}
			conn, rd = sealedWriter(tc), tc // tls allows a Read concurrent with the Writes
		}
		r.goRun(func() { watchClose(rd, leave, connDone) })
		err = frame.Write(conn, framePeerHello, &peerHello{Node: r.cfg.Node, Version: ProtocolVersion})
		if err == nil && lost {
			// What the failed connection carried may be lost: the
			// ranks send again what the peer's ranks have not
			// acknowledged (resume.go).
			r.mu.Lock()
			r.peerBackLocked(pc.node)
			r.unlock()
		}
		if err == nil {
			if r.link == nil { // after the hello: frames may be written directly now
				pc.q.setRaw(c)
			}
			err = drain(pc.q, conn, nil)
			pc.q.setRaw(nil)
		}
		endConn()
		if err == nil || r.ctx.Err() != nil {
			return // queue closed: the peer left, or the relay is closing
		}
		lost = true
		log.Warn("relay connection lost; redialling", zap.Error(err))
		r.mu.Lock()
		moved := r.peers[pc.node] != addr
		r.unlock()
		if moved || time.Since(made) >= time.Second {
			churn = 10 * time.Millisecond
			continue
		}
		// Lost at once, at the same address: a relay closing, or one
		// refusing this one (another key, which watchClose sees at
		// once). Pause, or the writer would redial in a tight loop.
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(churn):
		case <-pc.moved:
		}
		churn = min(2*churn, 2*time.Second)
	}
}

// closeIfMoved leaves c, the connection to pc's peer at addr, when the
// peer's address changes before done: its relay restarted elsewhere, and
// a frame written to the old connection would be lost without an error
// until the next write, which may never come. The writer redials at once
// and what the old connection may have lost is sent again
// (peerBackLocked).
func (r *Relay) closeIfMoved(pc *peerConn, addr string, leave func(), done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-pc.moved:
			r.mu.Lock()
			now := r.peers[pc.node]
			r.unlock()
			if now != addr {
				leave() // closes c too: a write to the old peer that blocks
				return
			}
		}
	}
}

// watchClose leaves the connection to a peer (leave) once the peer
// closes it, before done. A relay that restarts on the same address (a
// fixed port) is no move for closeIfMoved, and a frame written to the
// old connection after the peer died is lost without an error until the
// RST, with nothing to send it again: a barrier count so lost hangs the
// barrier. The peer never writes on it, so any return of Read (EOF, an
// error, stray bytes) says the peer is gone; a TLS link's post-handshake
// messages are handled inside the tls.Conn's Read. The writer redials
// and what may be lost is sent again (peerBackLocked).
func watchClose(rd io.Reader, leave func(), done <-chan struct{}) {
	var b [1]byte
	for {
		if n, err := rd.Read(b[:]); n > 0 || err != nil {
			break
		}
	}
	select {
	case <-done: // our end closed it
	default:
		leave()
	}
}

// waitPeerAddr returns the peer's address once membership has it, or an
// error once the queue is closed or the relay stops.
func (r *Relay) waitPeerAddr(pc *peerConn) (string, error) {
	for {
		r.mu.Lock()
		addr, closed := r.peers[pc.node], r.closed
		r.unlock()
		if closed {
			return "", errors.New("closed")
		}
		if addr != "" {
			return addr, nil
		}
		if pc.q.isClosed() {
			return "", errors.New("closed")
		}
		select {
		case <-r.ctx.Done():
			return "", r.ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// forwardLocked sends m to node's relay, or delivers it here.
func (r *Relay) forwardLocked(node string, m peerMsg, slice uint64) {
	if node == r.cfg.Node {
		if j := r.jobs[m.Job]; j != nil {
			r.deliverLocked(j, m)
		} else {
			r.st.Dropped++
		}
		return
	}
	m.Slice = slice
	pay := payload{ref: m.owned}
	if !m.owned {
		pay.rd = m.rd
	}
	if err := r.pushLocked(r.peerLocked(node).q, framePeerMsg, &m, pay); err != nil {
		r.log.Error("encode message for peer", zap.Error(err))
		return
	}
	r.st.Forwarded++
}

func (r *Relay) sendPeerLocked(node string, t frame.Type, v any) {
	if err := r.pushLocked(r.peerLocked(node).q, t, v, payload{}); err != nil {
		r.log.Error("encode frame for peer", zap.Error(err))
	}
}

func (r *Relay) acceptPeers() {
	for {
		c, err := r.tcpLn.Accept()
		if err != nil {
			if r.ctx.Err() == nil {
				r.log.Error("accept relay connection", zap.Error(err))
			}
			return
		}
		r.mu.Lock()
		if r.closed {
			r.unlock()
			c.Close()
			return
		}
		r.inConns[c] = struct{}{}
		r.unlock()
		r.goRun(func() { r.servePeer(c) })
	}
}

// servePeer reads an inbound relay connection until it ends. A malformed
// frame closes it (logged); the relay carries on.
func (r *Relay) servePeer(c net.Conn) {
	defer func() {
		r.mu.Lock()
		delete(r.inConns, c)
		r.unlock()
		c.Close()
	}()
	log := r.log.With(zap.String("remote", c.RemoteAddr().String()))
	var conn net.Conn = c // c stays the key in inConns
	if r.link != nil {
		tc, err := r.link.Server(r.ctx, c, handshakeTimeout)
		if err != nil {
			if r.ctx.Err() == nil {
				r.refused()
				r.warnRefused("relay link refused", zap.String("remote", c.RemoteAddr().String()), zap.Error(err))
			}
			return
		}
		conn = tc
	}
	fr := frame.NewReader(conn, maxPeerFrame)
	// A relay says hello at once: a connection that says nothing for
	// firstFrameTimeout is not kept.
	c.SetReadDeadline(time.Now().Add(firstFrameTimeout))
	t, body, err := fr.Read()
	c.SetReadDeadline(time.Time{})
	if err == nil && t == framePairHello { // a channel's connection (xchannels.go)
		r.servePair(c, conn, body, log)
		return
	}
	var h peerHello
	if err == nil && t != framePeerHello {
		err = fmt.Errorf("first frame is type %d, not hello", t)
	}
	if err == nil {
		err = frame.Decode(body, &h)
	}
	if err != nil {
		log.Warn("relay connection refused", zap.Error(err))
		return
	}
	log = log.With(zap.String("peer", h.Node))
	if h.Version < ProtocolVersion {
		log.Warn("relay of an older build (relay protocol below this one's): in bcs mode its slices transfer at the heartbeat timeout, and it drops connections on this build's frames; run one build",
			zap.Uint8("peer_version", h.Version), zap.Uint8("version", ProtocolVersion))
	}
	warnedUnknown := false
	for {
		t, body, err := fr.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) && r.ctx.Err() == nil {
				log.Warn("relay connection closed", zap.Error(err))
			}
			return
		}
		in := inbound{from: h.Node}
		switch t {
		case framePeerMsg:
			in.msg = new(peerMsg)
			// in.msg.Data points into the read buffer: whatever keeps
			// it copies it.
			err = frame.DecodeBorrowing(body, in.msg)
			if err == nil && (in.msg.Dst < 0 || in.msg.Src < 0) {
				err = fmt.Errorf("message between ranks %d and %d", in.msg.Src, in.msg.Dst)
			}
			in.msg.rd = fr
		case frameBarrierCount:
			in.count = new(barrierCount)
			err = frame.Decode(body, in.count)
		case frameBarrierDone:
			in.done = new(barrierDone)
			err = frame.Decode(body, in.done)
		case frameJobLeft:
			in.left = new(jobLeft)
			err = frame.Decode(body, in.left)
		case frameSliceReady:
			in.ready = new(sliceReady)
			err = frame.Decode(body, in.ready)
		case framePeerAck:
			in.ack = new(peerAck)
			err = frame.Decode(body, in.ack)
		case frameRestarted:
			in.again = new(restarted)
			err = frame.Decode(body, in.again)
		case frameNoChannels:
			in.noCh = new(noChannels)
			err = frame.Decode(body, in.noCh)
		case frameBroken:
			in.brk = new(pairBroken)
			err = frame.Decode(body, in.brk)
		default:
			if !warnedUnknown {
				log.Warn("relay frame of an unknown type (a later build's?) skipped", zap.Int("type", int(t)))
				warnedUnknown = true
			}
			continue
		}
		if err != nil {
			log.Warn("bad frame from relay; connection closed", zap.Error(err))
			return
		}
		r.mu.Lock()
		r.inboundLocked(in)
		r.unlock()
	}
}

// inboundLocked applies what a peer sent, or holds it until its job is
// registered here.
func (r *Relay) inboundLocked(in inbound) {
	id := in.job()
	j := r.jobs[id]
	if j == nil {
		if _, gone := r.ended[id]; gone || r.earlyBytes+in.size() > r.cfg.MaxEarly {
			if in.noCh == nil && in.brk == nil { // a decline or a pair's word is no message
				r.st.Dropped++
			}
			if !gone {
				r.log.Error("too much held for jobs not registered here; dropped", zap.Int64("job", id), zap.Int("held bytes", r.earlyBytes))
			}
			return
		}
		if in.msg != nil {
			in.msg.own()
		}
		r.early[id] = append(r.early[id], in)
		r.earlyBytes += in.size()
		if in.noCh == nil && in.brk == nil { // a message or a barrier's, not a decline
			r.st.Held++
		}
		return
	}
	switch {
	case in.msg != nil:
		r.st.Received++
		if in.msg.Slice != 0 {
			r.st.ReceivedIn++
			r.st.ReceivedInBytes += uint64(len(in.msg.Data))
		}
		if in.msg.Dst >= j.size || j.finishing { // finishing: its ranks here have ended
			r.st.Dropped++
			return
		}
		r.deliverLocked(j, *in.msg)
	case in.count != nil:
		r.rootCountLocked(j, in.count.Seq, in.count.Count, in.from)
	case in.done != nil:
		r.releaseLocked(j, in.done.Seq)
	case in.left != nil:
		if in.left.Node != r.cfg.Node && slices.Contains(j.hosts, in.left.Node) {
			root := r.rootLocked(j)
			j.left[in.left.Node] = true
			if r.rootLocked(j) != root { // heartbeats go to the next root
				r.notes.push(blockEvent{targets: true})
			}
			r.bcs.wakeUp() // a transfer may have been waiting for its heartbeat
		}
	case in.ready != nil:
		r.readyLocked(j, in.ready, in.from)
	case in.ack != nil:
		if a := in.ack; a.Src >= 0 && a.Src < j.size && a.Dst >= 0 && a.Dst < j.size {
			r.ackRankLocked(j, a.Src, a.Dst, a.Seqs)
		}
	case in.again != nil:
		if in.again.Node != r.cfg.Node && slices.Contains(j.hosts, in.again.Node) {
			r.resendLocked(j, in.again.Node)
		}
	case in.noCh != nil:
		r.noChannelsLocked(j, in.noCh.Rank, in.from)
	case in.brk != nil:
		r.brokenToRankLocked(j, *in.brk)
	}
}

// barrierArrivedLocked: every local rank of j is in barrier seq
// (immediate mode). Tell the job's root, rank 0's node.
func (r *Relay) barrierArrivedLocked(j *job, seq uint64, count int) {
	root := j.nodes[0]
	if root == r.cfg.Node {
		r.rootCountLocked(j, seq, count, r.cfg.Node)
		return
	}
	r.sendPeerLocked(root, frameBarrierCount, &barrierCount{Job: j.id, Seq: seq, Count: count, Node: r.cfg.Node})
}

// rootCountLocked, at the root: count node's arrivals; when every rank
// is in, release every node of the job. A node's count replaces its
// earlier one, so a count sent again (its relay restarted and its ranks
// arrived again, or the root restarted and asked) is not counted twice.
func (r *Relay) rootCountLocked(j *job, seq uint64, count int, node string) {
	if seq <= j.released {
		// node missed the release: the Done died with a connection or
		// with its relay's previous life.
		if node != r.cfg.Node {
			r.sendPeerLocked(node, frameBarrierDone, &barrierDone{Job: j.id, Seq: seq})
		}
		return
	}
	if seq-1 > j.released {
		// node's ranks all left barrier seq-1, so every rank was in it:
		// this root restarted after releasing it (and some node missed
		// the Done).
		r.rootReleaseLocked(j, seq-1)
	}
	counts := j.root[seq]
	if counts == nil {
		counts = map[string]int{}
		j.root[seq] = counts
	}
	counts[node] = count
	total := 0
	for _, c := range counts {
		total += c
	}
	if total >= j.size {
		r.rootReleaseLocked(j, seq)
	}
}

// rootReleaseLocked, at the root: barrier seq is complete; release it
// here and on every node of the job.
func (r *Relay) rootReleaseLocked(j *job, seq uint64) {
	for _, n := range j.hosts {
		if n != r.cfg.Node {
			r.sendPeerLocked(n, frameBarrierDone, &barrierDone{Job: j.id, Seq: seq})
		}
	}
	r.releaseLocked(j, seq)
}

// rereleaseLocked, at the job's root, sends node again the last barrier
// released (immediate mode): its Done may have died with a connection.
// A node that had it already ignores it.
func (r *Relay) rereleaseLocked(j *job, node string) {
	if r.mode == Immediate && j.released > 0 {
		r.sendPeerLocked(node, frameBarrierDone, &barrierDone{Job: j.id, Seq: j.released})
	}
}

// resumedReleaseLocked: a resumed rank of j had the Release of barrier
// seq (its Hello's rel, or it arrived at seq+1). A root that restarted
// after releasing it may not know: its release to the job's other nodes
// (immediate: the Done; bcs: the Done and the sliceReady frames) may
// have died with it, and its rank, past the barrier, does not arrive
// again; in bcs the others' heartbeats carry only what they had. So the
// root releases seq again on every node, which a node that had it
// ignores. Elsewhere the barrier is released here only (the root
// released it).
func (r *Relay) resumedReleaseLocked(j *job, seq uint64) {
	if seq <= j.released {
		return
	}
	switch {
	case r.mode == Immediate && j.nodes[0] == r.cfg.Node:
		r.rootReleaseLocked(j, seq)
	case r.mode == Buffered && r.rootLocked(j) == r.cfg.Node:
		// As barrierReportLocked releases; each sliceReady repeats it.
		for _, h := range j.hosts {
			if h != r.cfg.Node && !j.left[h] {
				r.sendPeerLocked(h, frameBarrierDone, &barrierDone{Job: j.id, Seq: seq})
			}
		}
		r.releaseLocked(j, seq)
	default:
		r.releaseLocked(j, seq)
	}
}

// recountLocked sends the root again this node's count of every barrier
// all its ranks are in (immediate mode): the root restarted, or the
// connection to it broke, and the counts it had died with it. It counts
// the last barrier released here too: a root that restarted after
// releasing it may have lost the Release to its own ranks, which then
// arrive again at the new root; without this node's count that barrier
// would never complete (this node's ranks left it and wait for them). A
// root that had released it sends the Done again, which is ignored.
func (r *Relay) recountLocked(j *job) {
	if r.mode != Immediate || j.nodes[0] == r.cfg.Node || len(j.local) == 0 {
		return
	}
	if j.released > 0 {
		r.sendPeerLocked(j.nodes[0], frameBarrierCount, &barrierCount{Job: j.id, Seq: j.released, Count: len(j.local), Node: r.cfg.Node})
	}
	for _, seq := range slices.Sorted(mapKeysOf(j.arrived)) {
		if seq > j.released && j.arrived[seq] == len(j.local) {
			r.sendPeerLocked(j.nodes[0], frameBarrierCount, &barrierCount{Job: j.id, Seq: seq, Count: j.arrived[seq], Node: r.cfg.Node})
		}
	}
}

// nodesLocked is the sorted names of this node and its peers.
func (r *Relay) nodesLocked() []string {
	nodes := make([]string, 0, len(r.peers)+1)
	nodes = append(nodes, r.cfg.Node)
	for n := range r.peers {
		nodes = append(nodes, n)
	}
	return sortStrings(nodes)
}
