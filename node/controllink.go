package node

import (
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/node/agentctl"
)

// controlWriteTimeout bounds one frame's write to the controller: a
// controller that reads nothing for that long is taken for gone.
const controlWriteTimeout = 5 * time.Second

// controlLink is the agent's end of its controller's connection. The
// agent's machine (node/agentctl) decides what to send, and in which
// order, under Agent.mu (the welcome first, then rank exits and PMI
// barriers as they come) and the shell queues it here; one goroutine
// (writeControl) writes the queue. No lock is held across a network
// write, so a controller that stops reading stalls nothing but its own
// link: launches, rank starts and exits go on.
type controlLink struct {
	conn net.Conn
	id   uint64 // the machine's number for it (its welcome's)

	mu     sync.Mutex
	queue  []outFrame
	closed bool
	wake   chan struct{} // capacity 1: a write or a close is waiting
}

// outFrame is one frame queued for the controller, with the rank exits it
// carries (a rank exit, or a welcome's exits), reported to the machine
// once written (the machine keeps them until then: a link that breaks
// before gives them back).
type outFrame struct {
	typ   frame.Type
	body  any
	exits []agentctl.Exit
}

func newControlLink(conn net.Conn, id uint64) *controlLink {
	return &controlLink{conn: conn, id: id, wake: make(chan struct{}, 1)}
}

// send queues f; it reports false when the link is closed (f is not
// queued).
func (l *controlLink) send(f outFrame) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.queue = append(l.queue, f)
	l.poke()
	return true
}

// close ends the link: the connection is closed (the reader sees it) and
// the writer stops, handing what it did not write back to the agent.
func (l *controlLink) close() {
	l.mu.Lock()
	l.closed = true
	l.poke()
	l.mu.Unlock()
	l.conn.Close()
}

func (l *controlLink) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// next waits for the next frame to write; ok is false once the link is
// closed.
func (l *controlLink) next() (outFrame, bool) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return outFrame{}, false
		}
		if len(l.queue) > 0 {
			f := l.queue[0]
			l.queue[0] = outFrame{}
			l.queue = l.queue[1:]
			l.mu.Unlock()
			return f, true
		}
		l.mu.Unlock()
		<-l.wake
	}
}

// shut closes the link; its frames not written are dropped (the machine
// knows their exits).
func (l *controlLink) shut() {
	l.mu.Lock()
	l.closed = true
	l.queue = nil
	l.mu.Unlock()
	l.conn.Close()
}

// writeControl writes link l's frames in order until the link closes or
// a write fails. Each written frame's exits are reported to the machine
// (a kept rank's records go: rank.Manager.Forget), then the link's end:
// the exits it never wrote are sent again, on the link that replaced it
// or kept pending for the next controller (agentctl.Machine.Broken).
func (a *Agent) writeControl(l *controlLink) {
	for {
		f, ok := l.next()
		if !ok {
			break
		}
		l.conn.SetWriteDeadline(time.Now().Add(controlWriteTimeout))
		if err := frame.Write(l.conn, f.typ, f.body); err != nil {
			a.log.Info("control connection write failed; closed", zap.Uint8("type", uint8(f.typ)), zap.Error(err))
			break
		}
		if len(f.exits) > 0 {
			a.mu.Lock()
			a.actl.Written(l.id, f.exits)
			forget := a.stepLocked(nil)
			a.mu.Unlock()
			a.forget(forget)
		}
	}
	l.shut()
	a.mu.Lock()
	if a.link == l {
		a.link = nil
	}
	a.actl.Broken(l.id)
	a.stepLocked(nil)
	a.mu.Unlock()
}
