package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/member"
	"github.com/cosched/cosched/node/ctl"
)

// link is the controller's control connection to one agent: a writer
// goroutine drains a bounded queue, so the controller's loop never blocks
// on a slow agent (a full queue counts as the agent being unreachable).
type link struct {
	name string
	conn net.Conn
	out  chan []byte
	done chan struct{}
	once sync.Once
}

const linkQueue = 1024

// redialAfter is the pause before dialing again an agent whose dial or
// handshake failed.
const redialAfter = 5 * time.Second

func (l *link) send(t frame.Type, v any) error {
	b, err := frame.Encode(t, v)
	if err != nil {
		return err
	}
	select {
	case <-l.done:
		return errors.New("connection closed")
	default:
	}
	select {
	case l.out <- b:
		return nil
	default:
		return fmt.Errorf("control queue full (%d messages)", linkQueue)
	}
}

// close ends the connection; its goroutines exit. Idempotent.
func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.conn.Close()
	})
}

func (l *link) closed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// handshake greets an agent on a new control connection and reads its
// welcome.
func (c *Controller) handshake(conn net.Conn, r *frame.Reader) (welcome, error) {
	var w welcome
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	defer conn.SetDeadline(time.Time{})
	if err := frame.Write(conn, msgHello, hello{Controller: c.cfg.Name, Epoch: c.epoch, Mode: string(c.cfg.Mode),
		Slice: int64(c.cfg.Slice), Bandwidth: c.cfg.Bandwidth, MPL: c.cfg.MPL,
		Grace: int64(cmp.Or(c.cfg.ReconnectGrace, ctl.DefaultReconnectGrace))}); err != nil {
		return w, err
	}
	t, body, err := r.Read()
	if err != nil {
		return w, err
	}
	if t != msgWelcome {
		return w, fmt.Errorf("expected welcome, got message type %d", t)
	}
	return w, frame.Decode(body, &w)
}

// dial opens the control connection to an agent, greets it, registers the
// link with the controller, and then reads the agent's reports until the
// connection ends. It runs in its own goroutine (owned by c.wg).
func (c *Controller) dial(m member.Meta) {
	log := c.log.With(zap.String("peer", m.Name))
	dialed := false
	defer func() {
		if !dialed {
			// Try again while it is a member: gossip may see an agent whose
			// control port we cannot reach (yet).
			c.post(func(*ctl.Machine) {
				delete(c.dialing, m.Name)
				c.connect(m.Name, redialAfter)
			})
		}
	}()
	var conn net.Conn
	var err error
	for attempt, wait := 0, 100*time.Millisecond; attempt < 8; attempt, wait = attempt+1, wait*2 {
		conn, err = net.DialTimeout("tcp", m.ControlAddr, 3*time.Second)
		if err == nil {
			break
		}
		if latest, ok := c.controlAddrs.Load(m.Name); ok && latest != m.ControlAddr {
			// Restarted elsewhere: dial the new address now, not after
			// the retries at the old one.
			c.post(func(*ctl.Machine) {
				delete(c.dialing, m.Name)
				c.connect(m.Name, 0)
			})
			dialed = true // no second redial from the deferred one
			return
		}
		select {
		case <-c.stopped:
			return
		case <-time.After(wait):
		}
	}
	if err != nil {
		log.Error("cannot reach agent's control address", zap.String("addr", m.ControlAddr), zap.Error(err))
		return
	}
	raw := conn
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	go func() { // ends the handshake early if the controller stops
		select {
		case <-c.stopped:
			cancel()
		case <-stop:
		}
	}()
	conn, err = c.cfg.auth.client(ctx, raw, log)
	close(stop)
	cancel()
	if err != nil {
		// Counted and logged (rate-limited) unless stopping; dialled
		// again later.
		raw.Close()
		return
	}
	r := frame.NewReader(conn, maxControlFrame)
	w, err := c.handshake(conn, r)
	if err != nil {
		log.Error("control handshake", zap.Error(err))
		conn.Close()
		return
	}
	l := &link{name: m.Name, conn: conn, out: make(chan []byte, linkQueue), done: make(chan struct{})}
	dialed = true
	c.post(func(mc *ctl.Machine) { c.linkUp(mc, m, l, w) })
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			select {
			case b := <-l.out:
				conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := conn.Write(b); err != nil {
					if !l.closed() {
						c.post(func(mc *ctl.Machine) { c.linkLost(mc, m.Name, l, "control write: "+err.Error()) })
					}
					return
				}
			case <-l.done:
				return
			case <-c.stopped:
				// The controller stopped before its loop took this link
				// (linkUp never ran): nobody else will close it, and
				// Run waits for this goroutine and the reader below.
				l.close()
				return
			}
		}
	}()
	for {
		t, body, err := r.Read()
		if err != nil {
			if !l.closed() {
				why := "control connection closed"
				if !errors.Is(err, io.EOF) {
					why = "control connection: " + err.Error()
				}
				c.post(func(mc *ctl.Machine) { c.linkLost(mc, m.Name, l, why) })
			}
			return
		}
		switch t {
		case msgRankExit:
			var x rankExit
			if err := frame.Decode(body, &x); err != nil {
				log.Warn("malformed rank exit; dropped", zap.Error(err))
				continue
			}
			c.post(func(mc *ctl.Machine) {
				if !mc.RankExit(exitOf(x)) {
					log.Debug("stale rank exit; ignored", zap.Int64("job", x.Job), zap.Int("rank", x.Rank))
				}
			})
		case msgPMIBarrier:
			var x pmiBarrier
			if err := frame.Decode(body, &x); err != nil {
				log.Warn("malformed PMI barrier; dropped", zap.Error(err))
				continue
			}
			c.post(func(mc *ctl.Machine) { c.pmiBarrierIn(mc, m.Name, x) })
		default:
			log.Warn("unexpected control message; dropped", zap.Uint8("type", uint8(t)))
		}
	}
}
