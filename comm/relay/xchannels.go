package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// Cross-node channels (docs/mpi.md, "Two relays"): in immediate delivery,
// two ranks of one job on two nodes get a TCP connection of their own,
// which their relays make and authenticate (as their links, with the
// cluster key when there is one) and hand to each rank with its Welcome,
// as a same-node pair's ends (channels.go). The ranks then exchange their
// messages rank → TCP → rank; the relays decided (never under bcs) and
// count what the ranks count in their page.
//
// Who dials: the relay of the lower rank of the pair, when that rank says
// Hello. Its Welcome waits for the answer (a round trip). The higher
// rank's Welcome waits for the connections of its lower remote peers,
// i.e. for their Hellos, up to crossWait; a pair not made by then takes
// the relay path for good (its accepting relay refuses a later dial, so
// both ranks agree). A lower rank that wants no cross-node channel has
// its relay decline the pair at once (pairHello.Decline), so that the
// wait ends without the timer. A pair is granted for the job's life, so the two
// ranks never mix paths and MPI's per-pair order is the connection's.
//
// The handshake, on a connection to the relay's peer listener:
//
//	dialler → pairHello{node, job, src, dst}   (a frame; over TLS with a key)
//	acceptor → pairAnswer{ok | again | refusal} (again: job not here yet)
//	dialler → one raw byte (go), then hands its end to src
//	acceptor reads the byte, then hands its end to dst
//
// The go byte keeps the stream exact: the acceptor's rank may write at
// once, and it must not do so before the dialler has read the answer
// (which a TLS or framing reader would read ahead into). After it nothing
// is encrypted: the ranks' bytes travel in clear, as MPICH's do.
const (
	framePairHello  frame.Type = 9  // pairHello: the first frame of a pair's connection
	framePairAnswer frame.Type = 10 // pairAnswer: the acceptor's answer
)

// crossWait bounds how long a rank's Welcome waits for its lower remote
// peers' connections (their Hellos); pairs not made by then take the
// relay path: Config.CrossWait, else this.
const crossWait = 20 * time.Second

// crossWait is the relay's wait: Config.CrossWait, else crossWait.
func (r *Relay) crossWait() time.Duration {
	if r.cfg.CrossWait > 0 {
		return r.cfg.CrossWait
	}
	return crossWait
}

// pairGo is the byte that ends the handshake.
const pairGo = 1

type pairHello struct {
	Node string `msgpack:"n"` // the dialling relay's node
	Job  int64  `msgpack:"j"`
	Src  int    `msgpack:"s"` // the dialling side's rank, the lower one
	Dst  int    `msgpack:"d"` // the accepting side's rank
	// Decline: Src wants no cross-node channel (Hello.NodeChannels, or
	// its relay's NodeChannelsOnly), so Dst's Welcome need not wait for
	// this pair. Answered no.
	Decline bool `msgpack:"x,omitempty"`
}

// pairWait says the answer waits: the rank there has not said Hello yet.
const pairWait = "wait"

type pairAnswer struct {
	OK    bool   `msgpack:"ok,omitempty"`
	Again bool   `msgpack:"a,omitempty"` // the job is not registered here yet: dial again
	Err   string `msgpack:"e,omitempty"` // why not
}

// xwait is what a local rank's Hello collects from its lower remote peers'
// relays: connections accepted (ready) or being accepted (reserved: the
// answer said yes, the go byte has not come yet). decided: its Welcome
// went without the ones missing, and later dials are refused.
type xwait struct {
	claimed, decided bool
	reserved         map[int]bool
	ready            map[int]int
	declined         map[int]bool // lower remote peers that want no channel
}

// xgrant is a rank's cross-node channels, in its Welcome after the
// same-node ones: peers[i]'s connection is fds[i].
type xgrant struct {
	fds, peers []int
}

func (x *xgrant) close() {
	if x == nil {
		return
	}
	for _, fd := range x.fds {
		unix.Close(fd)
	}
	x.fds, x.peers = nil, nil
}

// xwaitLocked is rank's xwait in j.
func (j *job) xwaitLocked(rank int) *xwait {
	if j.xin == nil {
		j.xin = map[int]*xwait{}
	}
	xw := j.xin[rank]
	if xw == nil {
		xw = &xwait{reserved: map[int]bool{}, ready: map[int]int{}, declined: map[int]bool{}}
		j.xin[rank] = xw
	}
	return xw
}

// xsignalLocked wakes the Hellos waiting for j's connections.
func (j *job) xsignalLocked() {
	if j.xchange != nil {
		close(j.xchange)
	}
	j.xchange = make(chan struct{})
}

// xcloseLocked closes the connections no Hello took (the job is forgotten).
func (j *job) xcloseLocked() {
	for _, xw := range j.xin {
		for _, fd := range xw.ready {
			unix.Close(fd)
		}
		xw.ready, xw.decided = map[int]int{}, true
	}
	j.xsignalLocked()
}

// crossEligibleLocked: j's ranks may get cross-node channels here.
func (r *Relay) crossEligibleLocked(j *job) bool {
	return r.mode == Immediate && !j.finishing && j.size <= maxChannelRanks && len(j.hosts) > 1
}

// crossChannels makes the cross-node channels of the rank saying h, before
// its Hello is taken (the Welcome carries them): it dials its higher remote
// peers' relays and waits for its lower ones' connections. nil: none (not
// asked, not eligible, or the rank is not one this relay would accept,
// which hello then says).
func (r *Relay) crossChannels(rc *rankConn, h comm.Hello) *xgrant {
	if h.Resume {
		return nil // it has what it was granted
	}
	r.mu.Lock()
	j := r.jobs[h.Job]
	ok := j != nil && r.crossEligibleLocked(j) && h.Size == j.size && h.Rank >= 0 && h.Rank < j.size &&
		j.local[h.Rank] != nil && !j.local[h.Rank].inited && rc.credErr == nil && (rc.uid == j.uid || rc.uid == 0)
	var xw *xwait
	if ok {
		xw = j.xwaitLocked(h.Rank)
		ok = !xw.claimed && !xw.decided
	}
	if ok && (!h.Channels || h.NodeChannels || r.cfg.NodeChannelsOnly) {
		// not wanted: the peers' relays waiting for this Hello are
		// answered no, and those of higher remote ranks told at once not
		// to wait for this one's dial.
		xw.decided = true
		j.xsignalLocked()
		r.declineHigherLocked(j, h)
		ok = false
	}
	if !ok {
		r.unlock()
		return nil
	}
	xw.claimed = true
	j.xsignalLocked() // the dials waiting for this Hello are answered
	var lower, higher []int
	for rk, n := range j.nodes {
		switch {
		case n == r.cfg.Node:
		case rk < h.Rank:
			lower = append(lower, rk)
		default:
			higher = append(higher, rk)
		}
	}
	nodes := j.nodes
	r.unlock()

	ctx, cancel := context.WithTimeout(r.ctx, r.crossWait())
	defer cancel()
	dialled := make([]int, len(higher))
	var wg sync.WaitGroup
	for i, peer := range higher {
		wg.Add(1)
		go func() { // owned here: waited for below
			defer wg.Done()
			dialled[i] = r.dialPair(ctx, nodes[peer], h.Job, h.Rank, peer)
		}()
	}

	x := &xgrant{}
	r.mu.Lock()
	for {
		if r.jobs[h.Job] != j {
			break // forgotten meanwhile: its connections were closed
		}
		all := true
		for _, p := range lower {
			if _, ok := xw.ready[p]; !ok && !xw.declined[p] {
				all = false
			}
		}
		if all || ctx.Err() != nil && len(xw.reserved) == 0 {
			break
		}
		if j.xchange == nil {
			j.xsignalLocked()
		}
		ch := j.xchange
		r.unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			if r.ctx.Err() != nil {
				r.mu.Lock()
				r.xtakeLocked(j, xw, x)
				r.unlock()
				wg.Wait()
				for _, fd := range dialled {
					if fd >= 0 {
						unix.Close(fd)
					}
				}
				x.close()
				return nil
			}
			// the grace is over: wait only for those being accepted
			select {
			case <-ch:
			case <-time.After(time.Second):
			}
		}
		r.mu.Lock()
	}
	r.xtakeLocked(j, xw, x)
	r.unlock()
	wg.Wait()
	for i, fd := range dialled {
		if fd >= 0 {
			x.fds = append(x.fds, fd)
			x.peers = append(x.peers, higher[i])
		}
	}
	if missing := len(lower) + len(higher) - len(x.fds); missing > 0 {
		r.log.Info("some remote peers take the relay path", zap.Int64("job", h.Job), zap.Int("rank", h.Rank),
			zap.Int("channels", len(x.fds)), zap.Int("relay path", missing))
	}
	return x
}

// xtakeLocked decides xw: the connections ready go into x, later ones
// are refused.
func (r *Relay) xtakeLocked(j *job, xw *xwait, x *xgrant) {
	xw.decided = true
	for _, p := range slices.Sorted(mapKeysOf(xw.ready)) {
		if r.jobs[j.id] == j {
			x.fds = append(x.fds, xw.ready[p])
			x.peers = append(x.peers, p)
		} else {
			unix.Close(xw.ready[p])
		}
	}
	xw.ready = map[int]int{}
}

// dialPair makes the connection of ranks src (here) and dst (on node) of
// job: it returns this end's descriptor, or -1 when the pair takes the
// relay path (refused, or not made within ctx).
func (r *Relay) dialPair(ctx context.Context, node string, job int64, src, dst int) int {
	log := r.log.With(zap.Int64("job", job), zap.Int("rank", src), zap.Int("peer", dst), zap.String("node", node))
	for {
		r.mu.Lock()
		addr := r.peers[node]
		r.unlock()
		if addr != "" {
			fd, again, err := r.dialPairOnce(ctx, addr, &pairHello{Node: r.cfg.Node, Job: job, Src: src, Dst: dst})
			switch {
			case fd >= 0:
				return fd
			case !again:
				log.Info("no channel to a remote peer: relay path", zap.Error(err))
				return -1
			case err != nil && ctx.Err() == nil:
				log.Debug("pair connection; dialling again", zap.Error(err))
			}
		}
		select {
		case <-ctx.Done():
			log.Info("no channel to a remote peer within the wait: relay path", zap.Duration("wait", r.crossWait()))
			return -1
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// declineHigherLocked tells the relays of the higher remote peers of
// the rank saying h, which wants no cross-node channel, not to wait for
// its dial. A library that knows of channels (it asked for some, or
// said NodeChannels: cosched's MPI with COSCHED_MPI_CHANNELS=node or 0)
// declines each pair on a pair connection, which every build that makes
// channels understands. A Hello that asks for nothing (comm's Go ranks,
// an MPI library before "chn") is a decline too, but a job of such ranks
// is usually all of them, whose peers never ask: a connection (and a
// TLS handshake) per pair would cost it for nothing, so one frame per
// node goes on the relay links instead (noChannels).
func (r *Relay) declineHigherLocked(j *job, h comm.Hello) {
	told := map[string]bool{}
	for rk, n := range j.nodes {
		switch {
		case rk <= h.Rank || n == r.cfg.Node:
		case h.Channels || h.NodeChannels:
			r.goRun(func() { r.declinePair(n, h.Job, h.Rank, rk) })
		case !told[n]:
			told[n] = true
			r.sendPeerLocked(n, frameNoChannels, &noChannels{Job: h.Job, Rank: h.Rank})
		}
	}
}

// noChannels, on a relay link: rank Rank of job Job, on the sender's
// node, asked for no channel; its higher peers on the receiver's node
// take the relay path with it and need not wait for its dial. A relay of
// a build before it skips the frame, and its ranks wait crossWait.
type noChannels struct {
	Job  int64 `msgpack:"j"`
	Rank int   `msgpack:"r"`
}

// noChannelsLocked applies a noChannels from node: as a pair hello's
// Decline, for each of j's ranks here above rank.
func (r *Relay) noChannelsLocked(j *job, rank int, node string) {
	if rank < 0 || rank >= j.size || node == r.cfg.Node || j.nodes[rank] != node || !r.crossEligibleLocked(j) {
		return // not a rank of that node's, or no channel to wait for here
	}
	for dst := range j.local {
		if dst <= rank {
			continue
		}
		xw := j.xwaitLocked(dst)
		if _, have := xw.ready[rank]; !have && !xw.reserved[rank] {
			xw.declined[rank] = true
		}
	}
	j.xsignalLocked()
}

// declinePair tells dst's relay (on node) that src will not have a
// channel with it, so that dst's Welcome does not wait for one. It tries
// for crossWait at most; failing, dst waits that long, then does without.
func (r *Relay) declinePair(node string, job int64, src, dst int) {
	ctx, cancel := context.WithTimeout(r.ctx, r.crossWait())
	defer cancel()
	for ctx.Err() == nil {
		r.mu.Lock()
		addr := r.peers[node]
		r.unlock()
		if addr != "" {
			fd, again, _ := r.dialPairOnce(ctx, addr, &pairHello{Node: r.cfg.Node, Job: job, Src: src, Dst: dst, Decline: true})
			if fd >= 0 {
				unix.Close(fd) // cannot happen: a decline is answered no
			}
			if !again {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// dialPairOnce is one attempt of dialPair. again: worth another.
func (r *Relay) dialPairOnce(ctx context.Context, addr string, h *pairHello) (fd int, again bool, err error) {
	d := net.Dialer{Timeout: handshakeTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return -1, true, err
	}
	defer c.Close() // the rank gets a duplicate
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	tuneChannel(c)
	var conn net.Conn = c
	if r.link != nil {
		tc, err := r.link.Client(ctx, c, handshakeTimeout)
		if err != nil {
			return -1, false, err
		}
		conn = tc // not closed: a close_notify would go to the peer's rank
	}
	if err := frame.Write(conn, framePairHello, h); err != nil {
		return -1, true, err
	}
	// the answer waits for the Hello of the rank there
	c.SetDeadline(time.Now().Add(r.crossWait() + handshakeTimeout))
	var a pairAnswer
	t, body, err := frame.NewReader(conn, 4096).Read()
	if err == nil && t != framePairAnswer {
		err = fmt.Errorf("answer of type %d", t)
	}
	if err == nil {
		err = frame.Decode(body, &a)
	}
	switch {
	case err != nil:
		return -1, false, fmt.Errorf("pair handshake with %s: %w", addr, err)
	case a.Again:
		return -1, true, errors.New("job not registered there yet")
	case !a.OK:
		return -1, false, fmt.Errorf("refused by %s: %s", addr, a.Err)
	}
	if _, err := c.Write([]byte{pairGo}); err != nil {
		return -1, false, fmt.Errorf("pair handshake with %s: %w", addr, err)
	}
	fd, err = dupConn(c)
	if err != nil {
		return -1, false, err
	}
	return fd, false, nil
}

// servePair answers a pair's connection whose hello was read (body), c
// the raw connection, conn the TLS one with a key (else c). Refused, it
// is closed; taken, its descriptor waits for the Hello of its rank here.
func (r *Relay) servePair(c, conn net.Conn, body []byte, log *zap.Logger) {
	var h pairHello
	if err := frame.Decode(body, &h); err != nil {
		r.warnRefused("malformed pair connection refused", zap.String("remote", c.RemoteAddr().String()), zap.Error(err))
		return
	}
	log = log.With(zap.Int64("job", h.Job), zap.Int("rank", h.Src), zap.Int("peer", h.Dst), zap.String("node", h.Node))
	// The answer waits for the Hello of the rank here (up to crossWait):
	// a pair is made only when both ranks asked for channels.
	ctx, cancel := context.WithTimeout(r.ctx, r.crossWait())
	defer cancel()
	stop := context.AfterFunc(ctx, func() { c.Close() }) // a dialler gone meanwhile is not waited for
	defer stop()
	r.mu.Lock()
	a := r.pairAnswerLocked(h)
	for a.Err == pairWait {
		ch := r.jobs[h.Job].xchange
		r.unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		}
		r.mu.Lock()
		if a = r.pairAnswerLocked(h); a.Err == pairWait && ctx.Err() != nil {
			a.Err = fmt.Sprintf("rank %d of job %d did not say Hello within %s", h.Dst, h.Job, r.crossWait())
		}
	}
	r.unlock()
	if !stop() {
		return
	}
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	err := frame.Write(conn, framePairAnswer, &a)
	if !a.OK {
		if !a.Again {
			r.warnRefused("pair connection refused", zap.String("remote", c.RemoteAddr().String()), zap.Int64("job", h.Job),
				zap.Int("rank", h.Src), zap.Int("peer", h.Dst), zap.String("reason", a.Err))
		}
		return
	}
	var b [1]byte
	if err == nil {
		_, err = io.ReadFull(c, b[:])
	}
	if err == nil && b[0] != pairGo {
		err = fmt.Errorf("handshake ended with byte %d", b[0])
	}
	fd := -1
	if err == nil {
		c.SetDeadline(time.Time{})
		tuneChannel(c)
		fd, err = dupConn(c)
	}
	r.mu.Lock()
	defer r.unlock()
	j := r.jobs[h.Job]
	if j == nil || j.xin[h.Dst] == nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return
	}
	xw := j.xin[h.Dst]
	delete(xw.reserved, h.Src)
	switch {
	case err != nil:
		log.Warn("pair connection failed in its handshake: relay path", zap.Error(err))
	case xw.decided: // cannot happen: a decision waits for those reserved
		unix.Close(fd)
	default:
		xw.ready[h.Src] = fd
	}
	j.xsignalLocked()
}

// pairAnswerLocked decides a pair's connection; a yes reserves it.
func (r *Relay) pairAnswerLocked(h pairHello) pairAnswer {
	no := func(format string, args ...any) pairAnswer { return pairAnswer{Err: fmt.Sprintf(format, args...)} }
	j := r.jobs[h.Job]
	switch {
	case j == nil:
		if _, gone := r.ended[h.Job]; gone || r.closed {
			return no("job %d is not running on node %s", h.Job, r.cfg.Node)
		}
		return pairAnswer{Again: true}
	case !r.crossEligibleLocked(j):
		return no("job %d gets no cross-node channels on node %s (mode %s, %d ranks)", h.Job, r.cfg.Node, r.mode, j.size)
	case h.Dst < 0 || h.Dst >= j.size || j.local[h.Dst] == nil:
		return no("rank %d of job %d is not on node %s", h.Dst, h.Job, r.cfg.Node)
	case h.Src < 0 || h.Src >= h.Dst || h.Node == r.cfg.Node || j.nodes[h.Src] != h.Node:
		return no("rank %d of job %d is not on node %q below rank %d", h.Src, h.Job, h.Node, h.Dst)
	}
	xw := j.xwaitLocked(h.Dst)
	_, have := xw.ready[h.Src]
	if h.Decline {
		if !have && !xw.reserved[h.Src] {
			xw.declined[h.Src] = true
			j.xsignalLocked()
		}
		return no("rank %d declines a channel", h.Src)
	}
	switch {
	case xw.decided || j.local[h.Dst].inited:
		return no("rank %d of job %d was welcomed without a channel to rank %d", h.Dst, h.Job, h.Src)
	case have || xw.reserved[h.Src]:
		return no("ranks %d and %d of job %d have a channel already", h.Src, h.Dst, h.Job)
	case !xw.claimed:
		if j.xchange == nil {
			j.xsignalLocked()
		}
		return pairAnswer{Err: pairWait}
	}
	xw.reserved[h.Src] = true
	return pairAnswer{OK: true}
}

// tuneChannel sets a channel's socket as the ranks want it: every small
// message sent at once, a 1 MiB one in one write.
func tuneChannel(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		tc.SetWriteBuffer(rankSocketBuffer)
	}
}

// dupConn is a descriptor of c's socket of the caller's own (close on
// exec), left open when c is closed.
func dupConn(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("connection of type %T has no descriptor", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("duplicate a channel's socket: %w", derr)
	}
	return fd, nil
}
