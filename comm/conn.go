package comm

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/cosched/cosched/internal/frame"
)

// out is one frame to write.
type out struct {
	t frame.Type
	v any
}

// fatalError is the relay's Fatal, kept as a type so Finalize can prefer
// it over the write error it causes.
type fatalError string

func (e fatalError) Error() string {
	if e == "" {
		return "relay reported a fatal error (no reason given)"
	}
	return "relay reported a fatal error: " + string(e)
}

// errProtocol marks relay input the library cannot accept; the connection
// is then out of sync and is dropped.
var errProtocol = errors.New("protocol error")

func protocolErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errProtocol, fmt.Sprintf(format, args...))
}

// state is nil while the Comm is usable, else why it is not.
func (c *Comm) state() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail makes err the reason every call fails, unless there is one already,
// and wakes every blocked call.
func (c *Comm) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		close(c.dead)
	}
}

// emit writes the frames mk returns as one batch. mk runs under the write
// lock, so the sequence numbers it assigns reach the relay in order.
func (c *Comm) emit(mk func() []out) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.state(); err != nil {
		return err
	}
	if err := c.writeLocked(mk()); err != nil {
		c.conn.Close() // the stream may hold half a frame: nothing more can follow
		if c.numbered {
			// The reader resumes the connection and sends again what
			// this wrote (resume.go): the call goes on meanwhile.
			return nil
		}
		c.fail(err)
		return c.state()
	}
	return nil
}

// writeLocked writes and flushes frames; the caller holds wmu. Large
// payloads are written from the caller's memory (writev), not copied.
func (c *Comm) writeLocked(fs []out) error {
	buf := c.wbuf[:0]
	tails := c.tails[:0]
	for _, f := range fs {
		var tail []byte
		var err error
		if buf, tail, err = c.split.Append(buf, f.t, f.v); err != nil {
			return fmt.Errorf("writing %s to relay: %w", frameName(f.t), err)
		}
		if tail != nil {
			tails = append(tails, frame.Tail{At: len(buf), Data: tail})
		}
	}
	var err error
	if len(tails) == 0 {
		_, err = c.conn.Write(buf)
	} else {
		c.iov = frame.Gather(c.iov[:0], buf, tails)
		vs := net.Buffers(c.iov)
		_, err = vs.WriteTo(c.conn)
		clear(c.iov) // let the payloads go
		clear(tails)
	}
	if err != nil {
		return fmt.Errorf("writing to relay: %w", err)
	}
	if cap(buf) <= 1<<20 { // keep a buffer for the usual frames, not for a rare huge one
		c.wbuf = buf
	}
	c.tails = tails[:0]
	return nil
}

// read is the reader goroutine: it runs until the connection fails, the
// relay sends Bye or Fatal, or the Comm closes the connection.
func (c *Comm) read() {
	defer close(c.readerDone)
	fr := frame.NewReader(c.conn, MaxFrame)
	welcomed := false
	var err error
	for {
		err = c.readLoop(fr, welcomed)
		if !c.resumable(err) {
			break
		}
		if fr, err = c.resume(err); err != nil {
			break
		}
		welcomed = true
	}
	c.readErr = err
	c.fail(err)
	// The relay is gone, done or not to be trusted: make writes fail too.
	c.closeConn()
}

func (c *Comm) readLoop(fr *frame.Reader, welcomed bool) error {
	for {
		t, body, err := fr.Read()
		switch {
		case err == io.EOF && welcomed:
			return errors.New("relay closed the connection")
		case err == io.EOF:
			return errors.New("relay closed the connection before Welcome")
		case err != nil:
			return fmt.Errorf("reading from relay: %w", err)
		}
		if !welcomed && t != FrameWelcome && t != FrameFatal {
			return protocolErr("%s before Welcome", frameName(t))
		}
		switch t {
		case FrameWelcome:
			if welcomed {
				return protocolErr("second Welcome")
			}
			var w Welcome
			if err := decode(t, body, &w); err != nil {
				return err
			}
			welcomed = true // w.Mode is informational
			c.mu.Lock()
			c.numbered = c.cfg.Grace > 0 && w.Version >= ResumeVersion
			c.mu.Unlock()
			close(c.welcome)
		case FrameDeliver:
			var d Deliver
			if err := frame.DecodeBorrowing(body, &d); err != nil { // vets declared lengths first
				return fmt.Errorf("%w: malformed %s: %v", errProtocol, frameName(t), err)
			}
			// d.Data points into the frame. A large payload is handed to
			// the application where it lies, a small one is copied: a
			// kept payload holds its read chunk.
			if len(d.Data) >= KeepMin {
				fr.Keep()
			} else if d.Data != nil {
				d.Data = append(make([]byte, 0, len(d.Data)), d.Data...)
			}
			if err := c.deliver(d); err != nil {
				return err
			}
		case FrameAcked:
			var a Acked
			if err := decode(t, body, &a); err != nil {
				return err
			}
			if err := c.acked(a); err != nil {
				return err
			}
		case FrameResend:
			var r Resend
			if err := decode(t, body, &r); err != nil {
				return err
			}
			if err := c.resend(r.Dsts); err != nil {
				return err
			}
		case FrameRelease:
			var r Release
			if err := decode(t, body, &r); err != nil {
				return err
			}
			if err := c.release(r.Seq); err != nil {
				return err
			}
		case FrameBye:
			var b Bye
			if err := decode(t, body, &b); err != nil {
				return err
			}
			c.mu.Lock()
			finalized := c.finalized
			c.mu.Unlock()
			if !finalized {
				return protocolErr("Bye without Finalize")
			}
			close(c.bye)
			return ErrFinalized // nothing may follow Bye; Finalize closes the connection
		case FrameFatal:
			var f Fatal
			if err := decode(t, body, &f); err != nil {
				return err
			}
			return fatalError(f.Error)
		default:
			return protocolErr("unexpected %s from relay", frameName(t))
		}
	}
}

func decode(t frame.Type, body []byte, v any) error {
	if err := frame.Decode(body, v); err != nil { // vets declared lengths first
		return fmt.Errorf("%w: malformed %s: %v", errProtocol, frameName(t), err)
	}
	return nil
}

// deliver completes a posted receive. A Deliver the rank did not ask for
// means the relay and the rank disagree: nothing after it can be trusted.
func (c *Comm) deliver(d Deliver) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.pending[d.Req]
	switch {
	case r == nil:
		return protocolErr("Deliver for request %d, which is not pending", d.Req)
	case d.Src < 0 || d.Src >= c.cfg.Size:
		return protocolErr("Deliver for request %d from rank %d, outside [0, %d)", d.Req, d.Src, c.cfg.Size)
	case d.Tag < 0:
		return protocolErr("Deliver for request %d with tag %d", d.Req, d.Tag)
	case r.src != AnySource && r.src != d.Src, r.tag != AnyTag && r.tag != d.Tag:
		return protocolErr("Deliver for request %d (source %s, tag %s) from rank %d with tag %d",
			d.Req, rankString(r.src), tagString(r.tag), d.Src, d.Tag)
	case len(d.Data) > MaxMessage:
		return protocolErr("Deliver for request %d with %d bytes, limit %d", d.Req, len(d.Data), MaxMessage)
	}
	if d.Seq != 0 {
		g := c.got[d.Src]
		if g == nil {
			g = &gotLog{}
			c.got[d.Src] = g
		}
		if !g.got(d.Seq) {
			return protocolErr("Deliver for request %d of message %d from rank %d, delivered before", d.Req, d.Seq, d.Src)
		}
	}
	delete(c.pending, d.Req)
	r.msg = Message{Source: d.Src, Tag: d.Tag, Data: d.Data}
	close(r.done)
	return nil
}

// release completes barrier seq.
func (c *Comm) release(seq uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq != c.barrier || c.released == nil || isClosed(c.released) {
		return protocolErr("Release of barrier %d, which the rank is not in", seq)
	}
	close(c.released)
	return nil
}

func frameName(t frame.Type) string {
	switch t {
	case FrameHello:
		return "Hello"
	case FrameWelcome:
		return "Welcome"
	case FrameSend:
		return "Send"
	case FramePost:
		return "Post"
	case FrameWait:
		return "Wait"
	case FrameDeliver:
		return "Deliver"
	case FrameArrive:
		return "Arrive"
	case FrameRelease:
		return "Release"
	case FrameStats:
		return "Stats"
	case FrameFinalize:
		return "Finalize"
	case FrameBye:
		return "Bye"
	case FrameFatal:
		return "Fatal"
	case FrameUnwait:
		return "Unwait"
	case FrameProbe:
		return "Probe"
	case FrameProbed:
		return "Probed"
	case FrameColl:
		return "Coll"
	case FrameAbort:
		return "Abort"
	case FrameAcked:
		return "Acked"
	case FrameResend:
		return "Resend"
	}
	return fmt.Sprintf("frame type %d", t)
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
