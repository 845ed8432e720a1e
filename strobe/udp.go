package strobe

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/internal/mono"
)

// udpRecvBuffer is the socket receive buffer asked for: a controller
// receives N heartbeats at every slice boundary in a burst, and at 1 ms
// slices a short stall of the receive goroutine must not overflow the
// kernel's default (~200 KiB).
const udpRecvBuffer = 4 << 20

type udpTransport struct {
	conn    *net.UDPConn
	local   string
	log     *zap.Logger
	packets chan Packet
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once

	addrs addrCache
}

// ListenUDP opens a UDP transport on addr ("127.0.0.1:0" picks a port).
// Bind a specific address, the one advertised as Meta.StrobeAddr: packets
// are identified by their source address, and a wildcard socket's
// LocalAddr ("0.0.0.0:port") is not what peers see. Host names in Send
// addresses are resolved once and cached for the transport's lifetime.
func ListenUDP(addr string, log *zap.Logger) (Transport, error) {
	if log == nil {
		log = zap.NewNop()
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("strobe: listen udp %s: %w", addr, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("strobe: listen udp %s: %w", addr, err)
	}
	return newUDPTransport(conn, log), nil
}

// ListenMulticastUDP opens a transport that receives the datagrams sent
// to group (an IPv4 multicast address and a port, as the controller's
// Sender.SetMulticast sends to) on the interface named ifname ("": the
// kernel's choice). Several agents on one host may listen to one group.
// It is for receiving: a Follower's Multicast.
func ListenMulticastUDP(group, ifname string, log *zap.Logger) (Transport, error) {
	if log == nil {
		log = zap.NewNop()
	}
	ua, err := net.ResolveUDPAddr("udp4", group)
	if err != nil {
		return nil, fmt.Errorf("strobe: multicast group %s: %w", group, err)
	}
	if !ua.IP.IsMulticast() || ua.Port == 0 {
		return nil, fmt.Errorf("strobe: multicast group %s: want an IPv4 multicast address and a port (239.0.0.0/8 is for a site's own use)", group)
	}
	var ifi *net.Interface
	if ifname != "" {
		if ifi, err = net.InterfaceByName(ifname); err != nil {
			return nil, fmt.Errorf("strobe: multicast group %s: interface %s: %w", group, ifname, err)
		}
	}
	conn, err := net.ListenMulticastUDP("udp4", ifi, ua)
	if err != nil {
		return nil, fmt.Errorf("strobe: join multicast group %s: %w", group, err)
	}
	return newUDPTransport(conn, log), nil
}

func newUDPTransport(conn *net.UDPConn, log *zap.Logger) *udpTransport {
	t := &udpTransport{
		conn:    conn,
		local:   conn.LocalAddr().String(),
		log:     log.With(zap.String("strobe_addr", conn.LocalAddr().String())),
		packets: make(chan Packet, packetQueue),
		done:    make(chan struct{}),
	}
	t.setRecvBuffer()
	t.wg.Add(1)
	go t.receive()
	return t
}

// setRecvBuffer asks for udpRecvBuffer, beyond net.core.rmem_max when the
// process may (CAP_NET_ADMIN), and logs what the kernel granted.
func (t *udpTransport) setRecvBuffer() {
	rc, err := t.conn.SyscallConn()
	if err != nil {
		t.log.Warn("strobe: no raw socket access; default receive buffer", zap.Error(err))
		return
	}
	var forced error
	_ = rc.Control(func(fd uintptr) {
		forced = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, udpRecvBuffer)
	})
	if forced != nil {
		if err := t.conn.SetReadBuffer(udpRecvBuffer); err != nil {
			t.log.Warn("strobe: cannot set receive buffer", zap.Error(err))
		}
	}
	var got int
	var gerr error
	_ = rc.Control(func(fd uintptr) {
		got, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
	})
	switch {
	case gerr != nil:
		t.log.Debug("strobe: cannot read receive buffer size", zap.Error(gerr))
	case got < udpRecvBuffer: // Linux reports twice the usable size
		t.log.Info("strobe: receive buffer below the requested size; raise net.core.rmem_max",
			zap.Int("bytes", got), zap.Int("requested", udpRecvBuffer))
	default:
		t.log.Debug("strobe: receive buffer", zap.Int("bytes", got))
	}
}

// receive is the transport's one goroutine: it reads datagrams, stamps
// them at once (the stamp is the agent's strobe arrival time) and hands
// them on. It exits when the socket is closed.
func (t *udpTransport) receive() {
	defer t.wg.Done()
	defer close(t.packets)
	buf := make([]byte, 64<<10)
	for {
		n, from, err := t.conn.ReadFromUDPAddrPort(buf)
		now := mono.Now()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient (e.g. ICMP errors reported on the socket): keep reading.
			t.log.Debug("strobe: udp read", zap.Error(err))
			select {
			case <-t.done:
				return
			default:
				continue
			}
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		p := Packet{From: from.String(), Data: bytes.Clone(buf[:n]), RecvMono: now}
		select {
		case t.packets <- p:
		case <-t.done:
			return
		}
	}
}

func (t *udpTransport) Send(to string, data []byte) error {
	ap, err := t.addrs.resolve(to)
	if err != nil {
		return fmt.Errorf("strobe: send to %s: %w", to, err)
	}
	if _, err := t.conn.WriteToUDPAddrPort(data, ap); err != nil {
		return fmt.Errorf("strobe: send to %s: %w", to, err)
	}
	return nil
}

func (t *udpTransport) Packets() <-chan Packet { return t.packets }

func (t *udpTransport) LocalAddr() string { return t.local }

func (t *udpTransport) Close() error {
	var err error
	t.once.Do(func() {
		close(t.done)
		if cerr := t.conn.Close(); cerr != nil {
			err = fmt.Errorf("strobe: close udp %s: %w", t.local, cerr)
		}
		t.wg.Wait()
	})
	return err
}
