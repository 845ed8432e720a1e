package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// rankConn is one rank's connection.
type rankConn struct {
	c    *net.UnixConn
	q    *writeQueue
	log  *zap.Logger
	once sync.Once
	// uid is the connecting process's user, as the kernel says
	// (SO_PEERCRED); credErr why it could not say.
	uid     uint32
	credErr error
}

// send queues a frame for the rank. An encoding failure cannot happen for
// these types; it would be logged.
func (rc *rankConn) send(t frame.Type, v any) {
	if _, err := rc.q.push(t, v); err != nil {
		rc.log.Error("encode frame for rank", zap.Error(err))
	}
}

// sendLocked is send under the relay's lock: the frame may be written
// directly at its unlock (Relay.pushLocked), its payload as pay says.
func (rc *rankConn) sendLocked(r *Relay, t frame.Type, v any, pay payload) {
	if err := r.pushLocked(rc.q, t, v, pay); err != nil {
		rc.log.Error("encode frame for rank", zap.Error(err))
	}
}

// deliverLocked is sendLocked for a Deliver: ack, if its seq is set, is
// sent once the Deliver is written to the rank's socket.
func (rc *rankConn) deliverLocked(r *Relay, d *comm.Deliver, pay payload, ack dueAck) {
	if err := r.pushAckLocked(rc.q, comm.FrameDeliver, d, pay, ack); err != nil {
		rc.log.Error("encode frame for rank", zap.Error(err))
	}
}

// fatal tells the rank why its connection ends, then ends it once the
// queued frames are out.
func (rc *rankConn) fatal(msg string) {
	rc.send(comm.FrameFatal, &comm.Fatal{Error: msg})
	rc.q.close()
}

// close ends the connection now.
func (rc *rankConn) close() {
	rc.once.Do(func() {
		rc.q.close()
		rc.c.Close()
	})
}

func (r *Relay) acceptRanks() {
	for {
		c, err := r.unixLn.AcceptUnix()
		if err != nil {
			if r.ctx.Err() == nil {
				r.log.Error("accept rank connection", zap.Error(err))
			}
			return
		}
		// A socket buffer that holds a large Deliver whole lets it go in
		// one direct write (the kernel caps it at net.core.wmem_max).
		c.SetWriteBuffer(rankSocketBuffer)
		rc := &rankConn{c: c, q: newWriteQueue(), log: r.log}
		rc.q.setRaw(c)
		rc.uid, rc.credErr = peerUID(c)
		r.mu.Lock()
		if r.closed {
			r.unlock()
			c.Close()
			return
		}
		r.rankConns[rc] = struct{}{}
		r.unlock()
		r.goRun(func() {
			if err := drain(rc.q, c, r.ackWritten); err != nil && r.ctx.Err() == nil {
				r.log.Debug("write to rank", zap.Error(err))
			}
			rc.close()
		})
		r.goRun(func() { r.serveRank(rc) })
	}
}

// rankSocketBuffer is the send buffer asked for on rank connections: a
// 1 MiB message and its neighbours.
const rankSocketBuffer = 4 << 20

// serveRank reads one rank's frames until its connection ends.
func (r *Relay) serveRank(rc *rankConn) {
	var rs *rankState
	defer func() {
		r.mu.Lock()
		delete(r.rankConns, rc)
		if rs != nil && rs.conn == rc {
			rs.conn = nil
			close(rs.done)
			rs.recompute(r)
			if !rs.finalized && rs.abort == nil {
				r.log.Warn("rank left without Finalize", zap.Int64("job", rs.job.id), zap.Int("rank", rs.rank))
			}
		}
		r.unlock()
		rc.q.close() // the writer flushes a pending Fatal or Bye, then closes
	}()
	hr := &helloReader{c: rc.c}
	fr := frame.NewReader(hr, comm.MaxFrame)
	t, body, err := fr.Read()
	page := hr.take()
	defer func() {
		if page >= 0 {
			unix.Close(page)
		}
	}()
	if err != nil {
		r.log.Debug("rank connection without hello", zap.Error(err))
		return
	}
	if t != comm.FrameHello {
		rc.fatal(fmt.Sprintf("first frame is type %d, not hello", t))
		return
	}
	var h comm.Hello
	if err := frame.Decode(body, &h); err != nil {
		rc.fatal("malformed hello: " + err.Error())
		return
	}
	if h.Resume && !r.hasJob(h.Job) {
		// A restarted agent may not have reattached the job yet:
		// closed without a Fatal, the rank dials again (until its
		// grace passes) rather than fail (resume.go).
		r.log.Info("resumed rank of a job not here (yet): closed, it dials again", zap.Int64("job", h.Job), zap.Int("rank", h.Rank))
		return
	}
	if !h.Resume && page >= 0 {
		unix.Close(page) // a first Hello has no page to hand back
		page = -1
	}
	if rs, err = r.hello(rc, h, r.crossChannels(rc, h), &page); err != nil {
		var denied errDenied
		if errors.As(err, &denied) {
			r.warnRefused("rank connection refused", zap.Int64("job", h.Job), zap.Int("rank", h.Rank), zap.Error(err))
		} else {
			r.log.Warn("rank refused", zap.Int64("job", h.Job), zap.Int("rank", h.Rank), zap.Error(err))
		}
		rc.fatal(err.Error())
		return
	}
	log := r.log.With(zap.Int64("job", h.Job), zap.Int("rank", h.Rank))
	for {
		t, body, err := fr.Read()
		if err != nil {
			if !errors.Is(err, io.EOF) && r.ctx.Err() == nil {
				log.Warn("rank connection broken", zap.Error(err))
				rc.fatal("relay: " + err.Error())
			}
			return
		}
		err = r.rankFrame(rs, fr, t, body)
		if errors.Is(err, errAborted) {
			return // the rank exits; the job is over
		}
		if err != nil {
			log.Warn("bad frame from rank; connection closed", zap.Error(err))
			rc.fatal("relay: " + err.Error())
			return
		}
	}
}

// helloReader reads a rank's connection, taking the descriptor passed
// with the first bytes (a resumed Hello's counter page: the library's
// conn.c, write_hello) until take; then it reads plainly (the kernel
// drops any descriptor passed later).
type helloReader struct {
	c    *net.UnixConn
	fds  []int
	done bool
}

func (h *helloReader) Read(p []byte) (int, error) {
	if h.done {
		return h.c.Read(p)
	}
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := h.c.ReadMsgUnix(p, oob)
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for _, m := range msgs {
				if fds, ferr := unix.ParseUnixRights(&m); ferr == nil {
					h.fds = append(h.fds, fds...)
				}
			}
		}
	}
	return n, err
}

// take ends the descriptors' reading and returns the first one passed
// (-1: none), closing the others.
func (h *helloReader) take() int {
	h.done = true
	fd := -1
	for _, f := range h.fds {
		if fd < 0 {
			fd = f
		} else {
			unix.Close(f)
		}
	}
	h.fds = nil
	return fd
}

// hasJob reports whether job id is registered here.
func (r *Relay) hasJob(id int64) bool {
	r.mu.Lock()
	defer r.unlock()
	return r.jobs[id] != nil
}

// hello accepts a rank: its job must be registered here and the rank must
// live on this node and not be connected already.
//
// page, if ≥ 0, is the counter page a resumed Hello handed back: taken
// (set to -1) once the rank is accepted.
func (r *Relay) hello(rc *rankConn, h comm.Hello, x *xgrant, page *int) (*rankState, error) {
	defer x.close() // the rank has its own copies once welcomed
	r.mu.Lock()
	defer r.unlock()
	j := r.jobs[h.Job]
	switch {
	case j == nil:
		return nil, fmt.Errorf("job %d is not running on node %s", h.Job, r.cfg.Node)
	case j.finishing:
		return nil, fmt.Errorf("job %d has ended on node %s", h.Job, r.cfg.Node)
	case h.Size != j.size:
		return nil, fmt.Errorf("job %d has %d ranks, not %d", h.Job, j.size, h.Size)
	case h.Rank < 0 || h.Rank >= j.size:
		return nil, fmt.Errorf("rank %d out of range for job %d of %d ranks", h.Rank, h.Job, j.size)
	case rc.credErr != nil:
		r.st.RanksRefused++
		return nil, errDenied{fmt.Errorf("rank %d of job %d: cannot tell who the process is: %w", h.Rank, h.Job, rc.credErr)}
	case rc.uid != j.uid && rc.uid != 0:
		r.st.RanksRefused++
		return nil, errDenied{fmt.Errorf("rank %d of job %d: the process runs as uid %d, the job's ranks as uid %d", h.Rank, h.Job, rc.uid, j.uid)}
	}
	rs := j.local[h.Rank]
	switch {
	case rs == nil:
		return nil, fmt.Errorf("rank %d of job %d runs on node %s, not %s", h.Rank, h.Job, j.nodes[h.Rank], r.cfg.Node)
	case rs.inited:
		return nil, fmt.Errorf("rank %d of job %d is already connected", h.Rank, h.Job)
	}
	rs.inited, rs.conn, rs.done = true, rc, make(chan struct{})
	rs.numbers, rs.resumed = h.Numbers, h.Resume
	var release []int
	if !h.Resume { // a resumed rank keeps what its first Hello said
		rs.revokable = h.Revoke
	} else if h.Revoke { // or says it again, for a relay that restarted
		release = r.resumedChannelsLocked(rs, h)
	}
	if err := r.welcomeLocked(rc, j, rs, h, x); err != nil {
		rs.inited, rs.conn = false, nil
		return nil, err
	}
	for _, p := range release {
		r.releaseHeldLocked(rs, p)
	}
	if *page >= 0 {
		if err := r.adoptPageLocked(j, *page); err != nil {
			r.log.Warn("counts of a resumed rank's channels not seen here", zap.Int64("job", j.id), zap.Int("rank", rs.rank), zap.Error(err))
		}
		*page = -1
	}
	// After the Welcome: what the rank is owed may be delivered at once
	// to the receives it posts again.
	r.resumeLocked(rs, h.Got)
	if h.Resume {
		r.resumedReleaseLocked(j, h.Released)
	}
	return rs, nil
}

// welcomeLocked answers a Hello: with the rank's channels (channels.go),
// written at once with their descriptors, before any other frame for it.
// x, its cross-node channels (xchannels.go), follow the same-node ones;
// the caller closes them.
func (r *Relay) welcomeLocked(rc *rankConn, j *job, rs *rankState, h comm.Hello, x *xgrant) error {
	w := &comm.Welcome{Mode: r.mode.String(), Version: comm.ProtocolVersion}
	remote := x != nil && len(x.fds) > 0
	jc, err := r.channelsLocked(j, h.Channels && !h.Resume, remote)
	if err != nil {
		if remote { // their other ends were handed over: the rank cannot do without
			return err
		}
		r.log.Warn("no channels for the job's ranks", zap.Int64("job", j.id), zap.Error(err))
	}
	if jc == nil {
		rc.send(comm.FrameWelcome, w)
		if h.Resume {
			r.rewelcomeLocked(rs)
		}
		return nil
	}
	fds, peers, err := jc.grant(rs.rank)
	if err != nil {
		return err
	}
	local := fds[1:]
	if remote {
		fds = append(slices.Clip(fds), x.fds...)
		peers = append(peers, x.peers...)
	}
	defer func() {
		for _, fd := range local { // the rank has its own copies now
			unix.Close(fd)
		}
	}()
	w.Peers, w.Slot = encodeRanks(peers), jc.slot[rs.rank]
	rs.chPeers = peers
	b, err := frame.Encode(comm.FrameWelcome, w)
	if err != nil {
		return err
	}
	// The first write on the connection (nothing is queued for it yet),
	// so the frames' order holds.
	n, _, err := rc.c.WriteMsgUnix(b, unix.UnixRights(fds...), nil)
	if err == nil && n < len(b) {
		_, err = rc.c.Write(b[n:])
	}
	if err != nil {
		return fmt.Errorf("welcome rank %d of job %d: %w", rs.rank, j.id, err)
	}
	if r.mode == Buffered { // an end made before a switch to bcs
		r.revokeLocked(rs)
	}
	return nil
}

// rewelcomeLocked follows a resumed rank's Welcome: a Revoke again while
// it still drains channels (the first, or its Drained, may have died with
// the connection).
func (r *Relay) rewelcomeLocked(rs *rankState) {
	r.brokenPendingLocked(rs)
	if r.mode == Buffered { // channels it still has, told to a relay that restarted in bcs
		r.revokeLocked(rs)
	}
	if len(rs.drainFrom) > 0 && rs.conn != nil {
		rs.conn.sendLocked(r, comm.FrameRevoke, &comm.Revoke{}, payload{})
	}
}

// errDenied is a hello refused because of who the process is.
type errDenied struct{ error }

func (e errDenied) Unwrap() error { return e.error }

// peerUID is the user of the process at the other end of c (SO_PEERCRED:
// the kernel's word, recorded when the process connected).
func peerUID(c *net.UnixConn) (uint32, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, fmt.Errorf("SO_PEERCRED: %w", credErr)
	}
	return cred.Uid, nil
}

// rankFrame handles one frame from a connected rank, read by fr.
func (r *Relay) rankFrame(rs *rankState, fr *frame.Reader, t frame.Type, body []byte) error {
	switch t {
	case comm.FrameSend:
		var s comm.Send
		// s.Data points into the read buffer: whatever keeps it copies it.
		if err := frame.DecodeBorrowing(body, &s); err != nil {
			return fmt.Errorf("malformed send: %w", err)
		}
		return r.rankSend(rs, fr, s)
	case comm.FramePost:
		var p comm.Post
		if err := frame.Decode(body, &p); err != nil {
			return fmt.Errorf("malformed post: %w", err)
		}
		return r.rankPost(rs, p)
	case comm.FrameCancel:
		var c comm.Cancel
		if err := frame.Decode(body, &c); err != nil {
			return fmt.Errorf("malformed cancel: %w", err)
		}
		r.mu.Lock()
		r.cancelLocked(rs, c.Req)
		r.unlock()
		return nil
	case comm.FrameWait:
		var w comm.Wait
		if err := frame.Decode(body, &w); err != nil {
			return fmt.Errorf("malformed wait: %w", err)
		}
		r.mu.Lock()
		for _, req := range w.Reqs {
			if _, ok := rs.pending[req]; ok {
				rs.waiting[req] = struct{}{}
			}
		}
		rs.recompute(r)
		r.unlock()
		return nil
	case comm.FrameUnwait:
		var u comm.Unwait
		if err := frame.Decode(body, &u); err != nil {
			return fmt.Errorf("malformed unwait: %w", err)
		}
		r.mu.Lock()
		for _, req := range u.Reqs {
			delete(rs.waiting, req)
		}
		if len(rs.probing) > 0 && len(u.Reqs) > 0 {
			rs.probing = slices.DeleteFunc(rs.probing, func(p comm.Probe) bool { return slices.Contains(u.Reqs, p.Req) })
		}
		if u.Barrier != 0 && u.Barrier == rs.barrier {
			rs.inBarrier = false
		}
		rs.recompute(r)
		r.unlock()
		return nil
	case comm.FrameArrive:
		var a comm.Arrive
		if err := frame.Decode(body, &a); err != nil {
			return fmt.Errorf("malformed arrive: %w", err)
		}
		return r.rankArrive(rs, a.Seq)
	case comm.FrameStats:
		var s comm.Stats
		if err := frame.Decode(body, &s); err != nil {
			return fmt.Errorf("malformed stats: %w", err)
		}
		if r.cfg.OnStats != nil {
			r.cfg.OnStats(rs.job.id, rs.rank, s)
		}
		return nil
	case comm.FrameFinalize:
		r.mu.Lock()
		rs.finalized = true
		clear(rs.waiting)
		rs.probing = nil
		rs.recompute(r)
		if rs.conn != nil {
			rs.conn.sendLocked(r, comm.FrameBye, &comm.Bye{}, payload{})
		}
		r.unlock()
		return nil
	case comm.FrameProbe:
		var p comm.Probe
		if err := frame.Decode(body, &p); err != nil {
			return fmt.Errorf("malformed probe: %w", err)
		}
		return r.rankProbe(rs, p)
	case comm.FrameColl:
		var c comm.Coll
		if err := frame.Decode(body, &c); err != nil {
			return fmt.Errorf("malformed coll: %w", err)
		}
		return r.rankColl(rs, c)
	case comm.FrameBroken:
		var b comm.Broken
		if err := frame.Decode(body, &b); err != nil {
			return fmt.Errorf("malformed broken: %w", err)
		}
		r.mu.Lock()
		err := r.brokenLocked(rs, b)
		r.unlock()
		return err
	case comm.FrameDrained:
		var d comm.Drained
		if err := frame.Decode(body, &d); err != nil {
			return fmt.Errorf("malformed drained: %w", err)
		}
		r.mu.Lock()
		r.drainedLocked(rs, d.Peer)
		r.unlock()
		return nil
	case comm.FrameAbort:
		var a comm.Abort
		if err := frame.Decode(body, &a); err != nil {
			return fmt.Errorf("malformed abort: %w", err)
		}
		r.rankAbort(rs, a)
		return errAborted
	}
	return fmt.Errorf("unknown frame type %d", t)
}

// errAborted ends a rank's connection after its Abort.
var errAborted = errors.New("the rank aborted")

// checkMatch checks a receive's or a probe's source, tag and context.
func checkMatch(what string, j *job, src, tag, ctx int) error {
	switch {
	case src != comm.AnySource && (src < 0 || src >= j.size):
		return fmt.Errorf("%s from rank %d of a job of %d", what, src, j.size)
	case tag < comm.AnyTag || tag > comm.MaxTag:
		return fmt.Errorf("%s with tag %d", what, tag)
	case ctx < 0 || ctx >= comm.MaxContext:
		return fmt.Errorf("%s in context %d, outside [0, %d)", what, ctx, comm.MaxContext)
	}
	return nil
}

func (r *Relay) rankSend(rs *rankState, fr *frame.Reader, s comm.Send) error {
	j := rs.job
	switch {
	case s.Dst < 0 || s.Dst >= j.size:
		return fmt.Errorf("send to rank %d of a job of %d", s.Dst, j.size)
	case s.Tag < 0 || s.Tag > comm.MaxTag:
		return fmt.Errorf("send with tag %d, outside [0, %d]", s.Tag, comm.MaxTag)
	case s.Context < 0 || s.Context >= comm.MaxContext:
		return fmt.Errorf("send in context %d, outside [0, %d)", s.Context, comm.MaxContext)
	}
	r.mu.Lock()
	defer r.unlock()
	if r.jobs[j.id] != j || j.finishing {
		return errors.New("the job has ended")
	}
	r.st.Sent++
	r.st.SentBytes += uint64(len(s.Data))
	j.st.Sent++
	j.st.SentBytes += uint64(len(s.Data))
	m := peerMsg{Job: j.id, Src: rs.rank, Dst: s.Dst, Tag: s.Tag, Ctx: s.Context, Data: s.Data, Seq: s.Seq}
	m.rd = fr
	node := j.nodes[s.Dst]
	if r.mode == Buffered {
		r.bcs.enqueue(node, m)
		return nil
	}
	r.forwardLocked(node, m, 0)
	return nil
}

func (r *Relay) rankPost(rs *rankState, p comm.Post) error {
	if err := checkMatch("receive", rs.job, p.Src, p.Tag, p.Context); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.unlock()
	if _, dup := rs.pending[p.Req]; dup {
		return fmt.Errorf("receive request %d posted twice", p.Req)
	}
	rs.pending[p.Req] = struct{}{}
	if env, ok := rs.q.post(posted{req: p.Req, src: p.Src, tag: p.Tag, ctx: p.Context}); ok {
		r.completeLocked(rs, p.Req, env, payload{ref: true})
	}
	return nil
}

// cancelLocked takes back rs's receive req if it is still posted, and
// says whether it was: one matched before had its Deliver written first.
func (r *Relay) cancelLocked(rs *rankState, req uint64) {
	done := rs.q.cancel(req)
	if done {
		delete(rs.pending, req)
		if _, ok := rs.waiting[req]; ok {
			delete(rs.waiting, req)
			rs.recompute(r)
		}
	}
	if rs.conn != nil {
		rs.conn.sendLocked(r, comm.FrameCancelled, &comm.Cancelled{Req: req, Done: done}, payload{})
	}
}

// maxProbing bounds a rank's blocking probes not answered yet.
const maxProbing = 1 << 12

// rankProbe answers a probe from what is queued for the rank, or, for a
// blocking one that finds nothing, keeps it until a message comes.
func (r *Relay) rankProbe(rs *rankState, p comm.Probe) error {
	if err := checkMatch("probe", rs.job, p.Src, p.Tag, p.Context); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.unlock()
	rs.job.st.Probes++
	if env, ok := rs.q.peek(posted{src: p.Src, tag: p.Tag, ctx: p.Context}); ok || !p.Block {
		if rs.conn != nil {
			rs.conn.sendLocked(r, comm.FrameProbed, &comm.Probed{Req: p.Req, Found: ok, Src: env.src, Tag: env.tag, Len: len(env.data)}, payload{})
		}
		return nil
	}
	switch {
	case slices.ContainsFunc(rs.probing, func(q comm.Probe) bool { return q.Req == p.Req }):
		return fmt.Errorf("probe request %d made twice", p.Req)
	case len(rs.probing) >= maxProbing:
		return fmt.Errorf("over %d blocking probes at once", maxProbing)
	}
	rs.probing = append(rs.probing, p)
	rs.recompute(r)
	return nil
}

// rankColl counts a collective a rank announced.
func (r *Relay) rankColl(rs *rankState, c comm.Coll) error {
	j := rs.job
	switch {
	case c.Seq == 0:
		return errors.New("collective number 0")
	case c.Context < 0 || c.Context >= comm.MaxContext:
		return fmt.Errorf("collective in context %d, outside [0, %d)", c.Context, comm.MaxContext)
	case !comm.CollKind(c.Kind):
		return fmt.Errorf("unknown collective %.40q", c.Kind)
	case c.Root < -1 || c.Root >= j.size:
		return fmt.Errorf("collective with root %d in a job of %d", c.Root, j.size)
	case c.Bytes < 0:
		return fmt.Errorf("collective of %d bytes", c.Bytes)
	}
	r.mu.Lock()
	defer r.unlock()
	j.st.Collectives++
	j.st.CollectiveBytes += uint64(c.Bytes)
	if !j.collSeen {
		j.collSeen, j.collFrom = true, r.st.Slices
	}
	j.st.CollectiveSlices = r.st.Slices - j.collFrom
	return nil
}

// rankAbort records a rank's Abort and tells the agent.
func (r *Relay) rankAbort(rs *rankState, a comm.Abort) {
	a.Error = cleanText(a.Error, comm.MaxAbortText)
	r.mu.Lock()
	rs.abort = &a
	if rs.job.abort == nil {
		rs.job.abort = &rankAbort{rank: rs.rank, Abort: a}
	}
	clear(rs.waiting)
	rs.probing = nil
	rs.recompute(r)
	r.unlock()
	r.log.Info("rank called MPI_Abort", zap.Int64("job", rs.job.id), zap.Int("rank", rs.rank), zap.Int("code", a.Code), zap.String("message", a.Error))
	if r.cfg.OnAbort != nil {
		r.cfg.OnAbort(rs.job.id, rs.rank, a)
	}
}

// cleanText makes a rank's text fit a job's reason: valid UTF-8, control
// characters as spaces, at most max bytes.
func cleanText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(c rune) rune {
		if unicode.IsControl(c) {
			return ' '
		}
		return c
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func (r *Relay) rankArrive(rs *rankState, seq uint64) error {
	r.mu.Lock()
	defer r.unlock()
	j := rs.job
	switch {
	case rs.barrier != 0:
		return fmt.Errorf("barrier %d entered while in barrier %d", seq, rs.barrier)
	case seq <= j.released && rs.resumed:
		// Sent again by a rank that resumed its connection: the
		// barrier completed while its relay was away (learnt from the
		// job's other nodes), and the Release died with that relay.
		rs.conn.sendLocked(r, comm.FrameRelease, &comm.Release{Seq: seq}, payload{})
		return nil
	case seq <= j.released:
		return fmt.Errorf("barrier %d already completed", seq)
	case seq-1 > j.released && (r.mode == Immediate || rs.resumed):
		// The rank left barrier seq-1, so it completed everywhere; this
		// relay restarted before its other ranks here had the Release
		// or, at the root, before the other nodes had it (a library
		// whose Hello does not say rel). In bcs only a resumed rank can
		// be ahead: this relay released every barrier its ranks left.
		r.resumedReleaseLocked(j, seq-1)
	}
	rs.barrier, rs.inBarrier = seq, true
	rs.recompute(r)
	j.arrived[seq]++
	if r.mode == Immediate && j.arrived[seq] == len(j.local) {
		r.barrierArrivedLocked(j, seq, len(j.local))
	}
	return nil
}

// blockEvent is a change of a rank's blocked state, or (targets) of the
// nodes this node's heartbeats must reach.
type blockEvent struct {
	job     int64
	rank    int
	blocked bool
	targets bool
}

// notifier calls OnBlocked and OnHeartbeatNodes from one goroutine, in
// the order the changes happened, so the relay never calls out while
// holding its lock.
type notifier struct {
	fn      func(job int64, rank int, blocked bool)
	targets func()
	mu      sync.Mutex
	cond    *sync.Cond
	events  []blockEvent
	done    bool
}

func newNotifier(fn func(int64, int, bool), targets func()) *notifier {
	n := &notifier{fn: fn, targets: targets}
	n.cond = sync.NewCond(&n.mu)
	return n
}

func (n *notifier) push(e blockEvent) {
	if e.targets && n.targets == nil || !e.targets && n.fn == nil {
		return
	}
	n.mu.Lock()
	n.events = append(n.events, e)
	n.cond.Signal()
	n.mu.Unlock()
}

func (n *notifier) run(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		n.mu.Lock()
		n.done = true
		n.cond.Broadcast()
		n.mu.Unlock()
	})
	defer stop()
	for {
		n.mu.Lock()
		for len(n.events) == 0 && !n.done {
			n.cond.Wait()
		}
		if n.done {
			n.mu.Unlock()
			return
		}
		evs := n.events
		n.events = nil
		n.mu.Unlock()
		for _, e := range evs {
			if e.targets {
				n.targets()
			} else {
				n.fn(e.job, e.rank, e.blocked)
			}
		}
	}
}
