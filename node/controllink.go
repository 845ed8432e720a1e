package node

import (
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/frame"
)

// controlWriteTimeout bounds one frame's write to the controller: a
// controller that reads nothing for that long is taken for gone.
const controlWriteTimeout = 5 * time.Second

// controlLink is the agent's end of its controller's connection. The agent
// decides what to send, and in which order, under Agent.mu (the welcome
// first, then rank exits and PMI barriers as they come) and queues it
// here; one goroutine (writeControl) writes the queue. No lock is held
// across a network write, so a controller that stops reading stalls
// nothing but its own link: launches, rank starts and exits go on.
type controlLink struct {
	conn net.Conn

	mu     sync.Mutex
	queue  []outFrame
	closed bool
	wake   chan struct{} // capacity 1: a write or a close is waiting
}

// outFrame is one frame queued for the controller, with the rank exits it
// carries (a rank exit, or a welcome's exits), which go back to the
// agent's pending exits if it is never written.
type outFrame struct {
	typ   frame.Type
	body  any
	exits []rankExit
}

func newControlLink(conn net.Conn) *controlLink {
	return &controlLink{conn: conn, wake: make(chan struct{}, 1)}
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

// shut closes the link and returns the exits of the frames it never wrote
// (failed, the frame whose write failed), oldest first.
func (l *controlLink) shut(failed *outFrame) []rankExit {
	l.mu.Lock()
	l.closed = true
	var exits []rankExit
	if failed != nil {
		exits = append(exits, failed.exits...)
	}
	for _, f := range l.queue {
		exits = append(exits, f.exits...)
	}
	l.queue = nil
	l.mu.Unlock()
	l.conn.Close()
	return exits
}

// writeControl writes link l's frames in order until the link closes or
// a write fails. A written rank exit of a kept rank lets its records go
// (rank.Manager.Forget); the exits it never wrote are sent again: on the
// link that replaced it, or kept pending for the next controller.
func (a *Agent) writeControl(l *controlLink) {
	var failed *outFrame
	for {
		f, ok := l.next()
		if !ok {
			break
		}
		l.conn.SetWriteDeadline(time.Now().Add(controlWriteTimeout))
		if err := frame.Write(l.conn, f.typ, f.body); err != nil {
			a.log.Info("control connection write failed; closed", zap.Uint8("type", uint8(f.typ)), zap.Error(err))
			failed = &f
			break
		}
		for _, m := range f.exits {
			a.ranks.Forget(m.Job, m.Rank, m.PID)
		}
	}
	unwritten := l.shut(failed)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.link == l {
		a.link = nil
		a.controllerChanged()
	}
	if len(unwritten) == 0 {
		return
	}
	if a.link != nil {
		// A newer controller's welcome repeated them already (they were
		// among the delivered exits when queued); once more is harmless.
		for _, m := range unwritten {
			a.queueExitLocked(m)
		}
		return
	}
	a.pending = append(unwritten, a.pending...)
	if len(a.pending) > maxPendingExits {
		a.pending = a.pending[:maxPendingExits]
	}
}
