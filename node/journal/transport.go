package journal

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// streamLayer is raft's TCP stream layer over a listener the journal owns.
// Unlike raft's own, it closes the connections it accepted when it closes:
// raft's transport would otherwise keep a goroutine reading each of them
// until the peer hangs up, which a live peer never does.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func newStreamLayer(ln net.Listener, advertise string) (*streamLayer, error) {
	adv := ln.Addr()
	if advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", advertise)
		if err != nil {
			return nil, fmt.Errorf("journal: Advertise %q: %w", advertise, err)
		}
		adv = a
	}
	if a, ok := adv.(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() || a.Port == 0 {
		return nil, fmt.Errorf("journal: %s is not an address other servers can dial: set Advertise", adv)
	}
	return &streamLayer{ln: ln, advertise: adv, conns: map[net.Conn]struct{}{}}, nil
}

func (s *streamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	s.conns[c] = struct{}{}
	return &trackedConn{Conn: c, owner: s}, nil
}

func (s *streamLayer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	clear(s.conns)
	return s.ln.Close()
}

func (s *streamLayer) Addr() net.Addr { return s.advertise }

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// trackedConn forgets itself when raft closes it.
type trackedConn struct {
	net.Conn
	owner *streamLayer
}

func (c *trackedConn) Close() error {
	c.owner.mu.Lock()
	delete(c.owner.conns, c.Conn)
	c.owner.mu.Unlock()
	return c.Conn.Close()
}
