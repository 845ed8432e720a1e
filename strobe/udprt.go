package strobe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/internal/mono"
)

// rtPoll bounds how long the real-time receive loop sleeps in recvfrom
// before it checks whether it should stop.
const rtPoll = 50 * time.Millisecond

// RealtimeUDP is a UDP transport for the latency-critical side of the
// protocol: Serve runs its receive loop on one locked OS thread with the
// SCHED_FIFO policy, blocking in recvfrom and handing each datagram to the
// handler on that same thread. A Follower served this way switches rows in
// the thread that received the strobe: no goroutine hand-off, no wait for
// the Go scheduler or for a CPU held by a busy rank. It does not use Go's
// network poller at all: its socket is its own.
//
// Send is safe from any goroutine. Packets is for callers that do not use
// Serve: the first call starts an ordinary receive goroutine instead.
type RealtimeUDP struct {
	fd       int
	family   int
	local    string
	priority int
	log      *zap.Logger

	closed  atomic.Bool
	serving atomic.Bool
	wg      sync.WaitGroup
	once    sync.Once

	chOnce  sync.Once
	packets chan Packet

	addrs addrCache
	// keepProcessor makes Serve receive by a raw system call (loop).
	keepProcessor atomic.Bool
	mu            sync.Mutex
	rtErr         error // why SCHED_FIFO could not be set, if it could not
}

// ListenUDPRealtime opens a RealtimeUDP on addr (a literal IP and a port; 0
// picks one) whose receive loop runs at SCHED_FIFO priority (1–99; 0 keeps
// the normal policy but still avoids the hand-offs).
func ListenUDPRealtime(addr string, priority int, log *zap.Logger) (*RealtimeUDP, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("strobe: listen udp %s: want a literal ip:port: %w", addr, err)
	}
	t, err := openRealtime(ap, priority, log, nil)
	if err != nil {
		return nil, fmt.Errorf("strobe: listen udp %s: %w", addr, err)
	}
	return t, nil
}

// ListenMulticastUDPRealtime is ListenMulticastUDP on a RealtimeUDP: a
// socket joined to group (an IPv4 multicast address and a port) on the
// interface named ifname ("": the kernel's choice), whose Serve receives
// on a locked OS thread at SCHED_FIFO priority, as ListenUDPRealtime's. A
// Follower given it as its Multicast switches on that thread. Several
// agents on one host may listen to one group (SO_REUSEADDR). It is for
// receiving; LocalAddr is the group.
func ListenMulticastUDPRealtime(group, ifname string, priority int, log *zap.Logger) (*RealtimeUDP, error) {
	ap, err := netip.ParseAddrPort(group)
	if err != nil || !ap.Addr().Is4() || !ap.Addr().IsMulticast() || ap.Port() == 0 {
		return nil, fmt.Errorf("strobe: multicast group %s: want an IPv4 multicast address and a port (239.0.0.0/8 is for a site's own use)", group)
	}
	mreq := &unix.IPMreqn{Multiaddr: ap.Addr().As4()}
	if ifname != "" {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return nil, fmt.Errorf("strobe: multicast group %s: interface %s: %w", group, ifname, err)
		}
		mreq.Ifindex = int32(ifi.Index)
	}
	t, err := openRealtime(ap, priority, log, func(fd int) (string, error) {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return "reuse address", err
		}
		return "", nil
	})
	if err != nil {
		return nil, fmt.Errorf("strobe: join multicast group %s: %w", group, err)
	}
	if err := unix.SetsockoptIPMreqn(t.fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
		unix.Close(t.fd)
		return nil, fmt.Errorf("strobe: join multicast group %s on %q: %w", group, ifname, err)
	}
	return t, nil
}

// openRealtime opens and binds the socket of a RealtimeUDP on ap;
// beforeBind, if set, sets options that must precede the bind (it names
// what failed).
func openRealtime(ap netip.AddrPort, priority int, log *zap.Logger, beforeBind func(fd int) (string, error)) (*RealtimeUDP, error) {
	if log == nil {
		log = zap.NewNop()
	}
	family := unix.AF_INET
	if ap.Addr().Is6() && !ap.Addr().Is4In6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	t := &RealtimeUDP{fd: fd, family: family, priority: priority}
	fail := func(what string, err error) (*RealtimeUDP, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if beforeBind != nil {
		if what, err := beforeBind(fd); err != nil {
			return fail(what, err)
		}
	}
	if err := unix.Bind(fd, t.sockaddr(ap)); err != nil {
		return fail("bind", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, udpRecvBuffer); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, udpRecvBuffer)
	}
	tv := unix.NsecToTimeval(int64(rtPoll))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("receive timeout", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	t.local = addrOf(sa).String()
	t.log = log.With(zap.String("strobe_addr", t.local))
	return t, nil
}

func (t *RealtimeUDP) sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if t.family == unix.AF_INET6 {
		return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
}

func addrOf(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// Serve runs the receive loop on the calling goroutine, locked to its OS
// thread at SCHED_FIFO, calling handle for each datagram on that thread,
// until ctx is done or the transport is closed. handle must not block for
// long: the next strobe waits for it. A Packet's Data is lent to handle:
// it is overwritten by the next datagram, so copy what must outlive the
// call. If the real-time policy cannot be
// set (no privilege), Serve logs it once, carries on at normal priority,
// and RealtimeError reports it.
func (t *RealtimeUDP) Serve(ctx context.Context, handle func(Packet)) error {
	if !t.serving.CompareAndSwap(false, true) {
		return errors.New("strobe: realtime transport already served")
	}
	if !t.startLoop() {
		return nil // closed
	}
	defer t.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if t.priority > 0 {
		restore, err := setThreadFIFO(t.priority)
		defer restore()
		if err != nil {
			t.mu.Lock()
			t.rtErr = err
			t.mu.Unlock()
			t.log.Warn("strobe: receiving at normal priority; switches may lag behind busy ranks", zap.Error(err))
		}
	}
	return t.loop(ctx, handle, true)
}

// yieldEvery is how long the real-time loop may go without passing
// through the Go scheduler. Its receive is a raw system call (see loop),
// so the runtime sees the goroutine as running the whole time; after
// 10 ms (the runtime's forcePreemptNS) its monitor preempts it, at
// whatever moment that falls. The loop yields on its own instead, right
// after a switch, when the next strobe is a slice away, so a strobe never
// waits for that hand-off.
const yieldEvery = 5 * time.Millisecond

// loop receives until ctx is done or the transport closes. With borrow,
// a Packet's Data is the loop's own buffer, valid only until handle
// returns (Serve: the handler works synchronously); else each is a copy.
// Nothing on the way from recvfrom to handle allocates when borrowing
// from a sender already seen: on the real-time path an allocation can
// start a garbage collection whose pauses the switch then waits out.
//
// With KeepProcessor, Serve's receive is a raw system call:
// the goroutine keeps its P while it blocks in the kernel, so it needs no
// P back, and no other thread, when a strobe wakes it. Through the
// runtime's system-call path the monitor thread (sysmon) took the P of a
// thread blocked for 10 ms, and the return from every strobe's recvfrom
// then woke the monitor into polling every 20 µs: about 20 wake-ups of a
// real-time thread per strobe per agent, which on a full host queued the
// strobe threads themselves (docs/performance.md, "The strobe thread
// keeps its P"). A stop of the world or a preemption reaches a thread in
// the raw receive by signal: the receive has a timeout, so the signal
// ends it with EINTR (signal(7)) and the goroutine stops at its next call
// (TestRealtimeServeDoesNotHoldTheWorld).
func (t *RealtimeUDP) loop(ctx context.Context, handle func(Packet), borrow bool) error {
	buf := make([]byte, 64<<10)
	var rsa unix.RawSockaddrAny
	var lastAddr netip.AddrPort
	var lastFrom string
	raw := borrow && t.keepProcessor.Load()
	receive := recvfrom
	if raw {
		receive = recvfromRaw
	}
	lastYield := mono.Now()
	for {
		if t.closed.Load() {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n, from, err := receive(t.fd, buf, &rsa)
		now := mono.Now()
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue // the poll timeout or a signal: check whether to stop
			}
			if t.closed.Load() {
				return nil
			}
			t.log.Debug("strobe: udp read", zap.Error(err))
			continue
		}
		if from != lastAddr || lastFrom == "" {
			// Strobes come from one controller: its address is
			// formatted once, not once a packet.
			lastAddr, lastFrom = from, from.String()
		}
		data := buf[:n]
		if !borrow {
			data = append([]byte(nil), data...)
		}
		handle(Packet{From: lastFrom, Data: data, RecvMono: now})
		if raw && now-lastYield >= int64(yieldEvery) {
			runtime.Gosched()
			lastYield = mono.Now()
		}
	}
}

// recvfrom is unix.Recvfrom without its allocation of the sender's
// address (a Sockaddr per datagram): the address is read from rsa, the
// caller's, into a value.
func recvfrom(fd int, buf []byte, rsa *unix.RawSockaddrAny) (int, netip.AddrPort, error) {
	l := uint32(unix.SizeofSockaddrAny)
	n, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)),
		0, uintptr(unsafe.Pointer(rsa)), uintptr(unsafe.Pointer(&l)))
	return recvResult(n, errno, rsa)
}

// recvfromRaw is recvfrom without telling the Go scheduler that it
// blocks (see loop). Only for a socket with a receive timeout, on a
// thread that may hold its P that long.
func recvfromRaw(fd int, buf []byte, rsa *unix.RawSockaddrAny) (int, netip.AddrPort, error) {
	l := uint32(unix.SizeofSockaddrAny)
	n, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(len(buf)),
		0, uintptr(unsafe.Pointer(rsa)), uintptr(unsafe.Pointer(&l)))
	return recvResult(n, errno, rsa)
}

func recvResult(n uintptr, errno unix.Errno, rsa *unix.RawSockaddrAny) (int, netip.AddrPort, error) {
	if errno != 0 {
		return 0, netip.AddrPort{}, errno
	}
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return int(n), netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), ntohs(sa.Port)), nil
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		return int(n), netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), ntohs(sa.Port)), nil
	}
	return int(n), netip.AddrPort{}, nil
}

// ntohs reads a port as the kernel stores it (network byte order) in a
// uint16 field.
func ntohs(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// startLoop counts a receive loop in wg unless the transport is closed:
// under mu, so that the Add happens before Close's Wait or not at all.
func (t *RealtimeUDP) startLoop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return false
	}
	t.wg.Add(1)
	return true
}

// KeepProcessor makes Serve's receive loop keep its goroutine's Go
// processor (P) while it waits for a datagram, by a raw system call (see
// loop): a strobe then wakes one thread that needs nothing from any other.
// The process must have a P to spare for each such loop (cosched agent
// adds them to GOMAXPROCS: node.Config.HeldProcessors); in a process short
// of Ps (several agents in one test binary) the rest of it would wait for
// the loops to yield. Call it before Serve.
func (t *RealtimeUDP) KeepProcessor() { t.keepProcessor.Store(true) }

// RealtimeError says why the receive loop runs without real-time priority
// (nil if it has it, or has not started).
func (t *RealtimeUDP) RealtimeError() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rtErr
}

// Packets starts an ordinary receive goroutine (no real-time thread) and
// returns its channel; for callers that do not use Serve.
func (t *RealtimeUDP) Packets() <-chan Packet {
	t.chOnce.Do(func() {
		t.mu.Lock()
		t.packets = make(chan Packet, packetQueue)
		t.mu.Unlock()
		if !t.serving.CompareAndSwap(false, true) || !t.startLoop() {
			close(t.packets) // Serve owns the socket, or it is closed
			return
		}
		go func() {
			defer t.wg.Done()
			defer close(t.packets)
			_ = t.loop(context.Background(), func(p Packet) {
				if !t.closed.Load() {
					t.packets <- p
				}
			}, false)
		}()
	})
	return t.packets
}

// Send sends one datagram. Safe for concurrent use.
func (t *RealtimeUDP) Send(to string, data []byte) error {
	ap, err := t.addrs.resolve(to)
	if err != nil {
		return fmt.Errorf("strobe: send to %s: %w", to, err)
	}
	if err := unix.Sendto(t.fd, data, 0, t.sockaddr(ap)); err != nil {
		return fmt.Errorf("strobe: send to %s: %w", to, err)
	}
	return nil
}

// LocalAddr is the address peers send to.
func (t *RealtimeUDP) LocalAddr() string { return t.local }

// Close stops the receive loop (within rtPoll), waits for it, and closes
// the socket. Idempotent. A goroutine blocked sending to a full Packets
// channel is released by draining it.
func (t *RealtimeUDP) Close() error {
	var err error
	t.once.Do(func() {
		t.mu.Lock()
		t.closed.Store(true) // under mu: no receive loop starts after this (startLoop)
		ch := t.packets
		t.mu.Unlock()
		if ch != nil {
			go func() { // unblock a receive goroutine stuck on a full channel; ends when it closes ch
				for range ch {
				}
			}()
		}
		t.wg.Wait()
		if cerr := unix.Close(t.fd); cerr != nil {
			err = fmt.Errorf("strobe: close udp %s: %w", t.local, cerr)
		}
	})
	return err
}
