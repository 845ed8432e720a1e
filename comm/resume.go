package comm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/cosched/cosched/internal/frame"
)

// Resumed connections (docs/runtime.md, "Relay restarts"). A rank whose
// agent keeps its ranks (Config.Grace > 0) numbers its messages per
// destination, keeps a copy of each until the destination's relay says it
// delivered it (Acked), and, when its relay connection breaks, dials the
// relay again for up to Grace, its calls waiting meanwhile: the agent's
// next life answers on the same socket. Its Hello then says what it has
// received (Hello.Got) and it sends again what the dead relay held for it
// (its posted receives, its barrier) and every message not acknowledged
// yet; the relays drop what was delivered already and deliver the rest in
// order. A relay that restarts tells the other nodes' ranks to send again
// what they sent its ranks (Resend).

// sentLog is the numbered messages to one destination not acknowledged
// yet, oldest first.
type sentLog struct {
	last    uint64 // last number given
	unacked []keptMsg
}

type keptMsg struct {
	seq      uint64
	tag, ctx int
	data     []byte // the library's copy: the caller may reuse its buffer
}

// add numbers a message and keeps a copy of it.
func (l *sentLog) add(tag, ctx int, data []byte) uint64 {
	l.last++
	l.unacked = append(l.unacked, keptMsg{seq: l.last, tag: tag, ctx: ctx, data: slices.Clone(data)})
	return l.last
}

// ack forgets the messages numbered seqs; unknown numbers (acknowledged
// twice: a resent message delivered before) are ignored.
func (l *sentLog) ack(seqs []uint64) {
	for _, s := range seqs {
		i := sort.Search(len(l.unacked), func(i int) bool { return l.unacked[i].seq >= s })
		if i < len(l.unacked) && l.unacked[i].seq == s {
			l.unacked = remove(l.unacked, i)
		}
	}
	if len(l.unacked) == 0 {
		l.unacked = nil // let a long-grown array go
	}
}

// remove deletes s[i], the head (the usual case) by reslicing.
func remove[T any](s []T, i int) []T {
	var zero T
	if i == 0 {
		s[0] = zero
		return s[1:]
	}
	copy(s[i:], s[i+1:])
	s[len(s)-1] = zero
	return s[:len(s)-1]
}

// gotLog is what the rank received of one source's numbered messages.
type gotLog struct {
	floor uint64              // every message up to floor was delivered
	above map[uint64]struct{} // and these, all above floor
}

// got records message seq; false if it was delivered before.
func (g *gotLog) got(seq uint64) bool {
	if seq <= g.floor {
		return false
	}
	if _, dup := g.above[seq]; dup {
		return false
	}
	if seq != g.floor+1 {
		if g.above == nil {
			g.above = map[uint64]struct{}{}
		}
		g.above[seq] = struct{}{}
		return true
	}
	g.floor++
	for {
		if _, ok := g.above[g.floor+1]; !ok {
			return true
		}
		delete(g.above, g.floor+1)
		g.floor++
	}
}

// stream is g as a Hello says it.
func (g *gotLog) stream(src int) Stream {
	s := Stream{Src: src, Floor: g.floor}
	for seq := range g.above {
		s.Above = append(s.Above, seq)
	}
	slices.Sort(s.Above)
	return s
}

// numberLocked numbers s and keeps a copy when the connection numbers its
// messages; the caller holds wmu and mu, and writes s next.
func (c *Comm) numberLocked(s Send) Send {
	if !c.numbered {
		return s
	}
	l := c.sent[s.Dst]
	if l == nil {
		l = &sentLog{}
		c.sent[s.Dst] = l
	}
	s.Seq = l.add(s.Tag, s.Context, s.Data)
	return s
}

// resendLocked is the Sends of every message to dsts (nil: to every
// destination) not acknowledged yet, in order; the caller holds wmu.
func (c *Comm) resendLocked(dsts []int) []out {
	c.mu.Lock()
	defer c.mu.Unlock()
	var fs []out
	for _, dst := range slices.Sorted(mapKeys(c.sent)) {
		if dsts != nil && !slices.Contains(dsts, dst) {
			continue
		}
		for _, m := range c.sent[dst].unacked {
			fs = append(fs, out{FrameSend, Send{Dst: dst, Tag: m.tag, Context: m.ctx, Data: m.data, Seq: m.seq}})
		}
	}
	return fs
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// resumable reports whether the reader, stopped by err, should dial the
// relay again rather than fail: the connection numbers its messages, it
// broke (not a Fatal, a Bye or bad input), and the Comm did not close it.
func (c *Comm) resumable(err error) bool {
	var fatal fatalError
	if !c.numbered || errors.Is(err, errProtocol) || errors.As(err, &fatal) || errors.Is(err, ErrFinalized) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closing
}

// resume dials the relay again until it answers or the grace passes,
// holding wmu meanwhile (every call that writes waits), and sends what
// the relay that died held for this rank: its Hello with what it got,
// its posted receives, its barrier, the messages not acknowledged, and
// its Finalize. It returns the reader of the new connection.
func (c *Comm) resume(cause error) (*frame.Reader, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.conn.Close()
	deadline := time.Now().Add(c.cfg.Grace)
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		closing := c.closing
		c.mu.Unlock()
		if closing {
			return nil, cause
		}
		fr, err := c.redial(deadline)
		if err == nil {
			return fr, nil
		}
		var fatal fatalError
		if errors.As(err, &fatal) || errors.Is(err, errProtocol) {
			return nil, fmt.Errorf("relay connection lost (%v); the relay refused to resume it: %w", cause, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("relay connection lost (%v) and the relay not back within %s: %w", cause, c.cfg.Grace, err)
		}
		time.Sleep(resumePoll)
	}
}

// resumePoll is how often a rank dials its relay while it is away.
const resumePoll = 20 * time.Millisecond

// redial makes one attempt; on success c.conn is the new connection.
func (c *Comm) redial(deadline time.Time) (*frame.Reader, error) {
	d := net.Dialer{Deadline: deadline}
	conn, err := d.DialContext(context.Background(), "unix", c.cfg.Relay)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	h := Hello{Job: c.cfg.Job, Rank: c.cfg.Rank, Size: c.cfg.Size, PID: os.Getpid(), Resume: true, Numbers: true}
	if c.released != nil && isClosed(c.released) {
		h.Released = c.barrier
	}
	for _, src := range slices.Sorted(mapKeys(c.got)) {
		h.Got = append(h.Got, c.got[src].stream(src))
	}
	c.mu.Unlock()
	conn.SetDeadline(time.Now().Add(resumeHandshake))
	fr := frame.NewReader(conn, MaxFrame)
	err = frame.Write(conn, FrameHello, h)
	var w Welcome
	if err == nil {
		var t frame.Type
		var body []byte
		t, body, err = fr.Read()
		switch {
		case err == io.EOF:
			err = errors.New("relay closed the connection before Welcome")
		case err != nil:
		case t == FrameFatal:
			var f Fatal
			if err = decode(t, body, &f); err == nil {
				err = fatalError(f.Error)
			}
		case t != FrameWelcome:
			err = protocolErr("%s before Welcome", frameName(t))
		default:
			err = decode(t, body, &w)
			if err == nil && w.Version < ResumeVersion {
				err = protocolErr("the relay came back without numbered messages (protocol %d)", w.Version)
			}
		}
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	c.mu.Lock()
	c.conn = conn
	var fs []out
	for _, id := range slices.Sorted(mapKeys(c.pending)) {
		r := c.pending[id]
		fs = append(fs, out{FramePost, Post{Req: r.id, Src: r.src, Tag: r.tag, Context: r.ctxt}})
	}
	if c.released != nil && !isClosed(c.released) {
		fs = append(fs, out{FrameArrive, Arrive{Seq: c.barrier}})
	}
	finalized := c.finalized
	c.mu.Unlock()
	fs = append(fs, c.resendLocked(nil)...)
	if finalized {
		fs = append(fs, out{FrameFinalize, Finalize{}})
	}
	if err := c.writeLocked(fs); err != nil {
		conn.Close()
		return nil, err
	}
	return fr, nil
}

// resumeHandshake bounds one resumed Hello's answer.
const resumeHandshake = 5 * time.Second

// acked forgets acknowledged messages.
func (c *Comm) acked(a Acked) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.sent[a.Dst]; l != nil {
		l.ack(a.Seqs)
	}
	return nil
}

// resend answers the relay's Resend.
func (c *Comm) resend(dsts []int) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.numbered {
		return nil
	}
	fs := c.resendLocked(dsts)
	if len(fs) == 0 {
		return nil
	}
	if err := c.writeLocked(fs); err != nil {
		c.conn.Close() // the reader resumes: it sends them again
	}
	return nil
}
