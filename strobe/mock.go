package strobe

import (
	"bytes"
	"container/heap"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/cosched/cosched/internal/mono"
)

// Faults describes what a MockNetwork does to the datagrams on a link.
// The zero value is a perfect link.
type Faults struct {
	Loss      float64       // probability that a datagram is dropped
	Duplicate float64       // probability that a datagram is delivered twice
	Reorder   float64       // probability that a datagram is held back and delivered right after the next one on the same link (or at Flush)
	Delay     time.Duration // fixed delay before delivery (per link, so FIFO within a link)
}

// MockStats counts what a MockNetwork did.
type MockStats struct {
	Sent       uint64 // Send calls that reached the network
	Dropped    uint64 // lost by Faults.Loss
	Cut        uint64 // dropped by a partition
	NoRoute    uint64 // sent to an address with no open transport
	Duplicated uint64
	Reordered  uint64
	Overflow   uint64 // dropped because the receiver's queue was full
}

// mockQueueLimit plays the kernel socket buffer: beyond it datagrams to a
// transport that is not being read are dropped.
const mockQueueLimit = 1 << 16

// MockNetwork connects in-process transports through queues, with
// deterministic fault injection: every loss, duplication and reordering on
// a directed link is drawn from that link's own generator, seeded from
// NewMockNetwork's seed and the two addresses. The faults a link applies
// therefore depend only on the seed and the sequence of datagrams sent on
// it, not on traffic elsewhere or on goroutine timing. Delays use the real
// clock. It is a non-test file so other packages' tests can use it. All
// methods are safe for concurrent use.
type MockNetwork struct {
	mu     sync.Mutex
	seed   uint64
	rngs   map[mockLink]*rand.Rand
	nodes  map[string]*mockTransport
	global Faults
	links  map[mockLink]Faults
	cuts   map[mockLink]bool
	held   map[mockLink]*mockPacket
	seq    uint64 // delivery order among packets due at the same instant
	auto   int    // for generated addresses
	stats  MockStats
}

type mockLink struct{ from, to string }

// NewMockNetwork returns an empty network whose faults are drawn from seed.
func NewMockNetwork(seed uint64) *MockNetwork {
	return &MockNetwork{
		seed:  seed,
		rngs:  make(map[mockLink]*rand.Rand),
		nodes: make(map[string]*mockTransport),
		links: make(map[mockLink]Faults),
		cuts:  make(map[mockLink]bool),
		held:  make(map[mockLink]*mockPacket),
	}
}

// Transport opens a transport at addr; "" picks a fresh address
// ("mock-1", …). An address may be reused once its transport is closed
// (a restarted process). Opening an address that is in use panics: it is a
// mistake in the test, not a runtime condition.
func (n *MockNetwork) Transport(addr string) Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr == "" {
		for {
			n.auto++
			addr = fmt.Sprintf("mock-%d", n.auto)
			if n.nodes[addr] == nil {
				break
			}
		}
	}
	if n.nodes[addr] != nil {
		panic(fmt.Sprintf("strobe: MockNetwork address %q is already open", addr))
	}
	t := &mockTransport{
		net:     n,
		addr:    addr,
		packets: make(chan Packet, packetQueue),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	n.nodes[addr] = t
	t.wg.Add(1)
	go t.pump()
	return t
}

// SetFaults sets the faults of every link that has none of its own.
func (n *MockNetwork) SetFaults(f Faults) {
	n.mu.Lock()
	n.global = f
	n.mu.Unlock()
}

// SetLinkFaults sets the faults of the directed link from → to, replacing
// the global ones for that link.
func (n *MockNetwork) SetLinkFaults(from, to string, f Faults) {
	n.mu.Lock()
	n.links[mockLink{from, to}] = f
	n.mu.Unlock()
}

// Partition drops every datagram between an address in a and one in b, in
// both directions, until Heal. Partitions accumulate.
func (n *MockNetwork) Partition(a, b []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			n.cuts[mockLink{x, y}] = true
			n.cuts[mockLink{y, x}] = true
		}
	}
}

// Heal removes every partition.
func (n *MockNetwork) Heal() {
	n.mu.Lock()
	clear(n.cuts)
	n.mu.Unlock()
}

// Flush delivers every datagram held back for reordering.
func (n *MockNetwork) Flush() {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	for l, p := range n.held {
		delete(n.held, l)
		n.deliverLocked(l.to, p, now)
	}
}

// Stats returns what the network has done so far.
func (n *MockNetwork) Stats() MockStats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

func (n *MockNetwork) send(from *mockTransport, to string, data []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if from.closed {
		return fmt.Errorf("strobe: send to %s: %w", to, net.ErrClosed)
	}
	if len(data) > 65507 {
		return fmt.Errorf("strobe: send to %s: datagram of %d bytes", to, len(data))
	}
	n.stats.Sent++
	l := mockLink{from.addr, to}
	f, ok := n.links[l]
	if !ok {
		f = n.global
	}
	// Always three draws, so the stream of decisions does not depend on
	// which faults are enabled.
	rng := n.rngLocked(l)
	lose := rng.Float64() < f.Loss
	dup := rng.Float64() < f.Duplicate
	hold := rng.Float64() < f.Reorder

	if n.nodes[to] == nil {
		n.stats.NoRoute++
		return nil
	}
	if n.cuts[l] {
		n.stats.Cut++
		return nil
	}
	now := time.Now()
	held := n.held[l]
	delete(n.held, l)
	switch {
	case lose:
		n.stats.Dropped++
	case hold && held == nil:
		n.stats.Reordered++
		n.held[l] = &mockPacket{from: from.addr, data: bytes.Clone(data), delay: f.Delay}
		return nil
	default:
		p := &mockPacket{from: from.addr, data: bytes.Clone(data), delay: f.Delay}
		n.deliverLocked(to, p, now)
		if dup {
			n.stats.Duplicated++
			n.deliverLocked(to, &mockPacket{from: p.from, data: bytes.Clone(data), delay: p.delay}, now)
		}
	}
	if held != nil {
		n.deliverLocked(to, held, now)
	}
	return nil
}

func (n *MockNetwork) rngLocked(l mockLink) *rand.Rand {
	r := n.rngs[l]
	if r == nil {
		h := fnv.New64a()
		h.Write([]byte(l.from))
		h.Write([]byte{0})
		h.Write([]byte(l.to))
		r = rand.New(rand.NewPCG(n.seed, h.Sum64()))
		n.rngs[l] = r
	}
	return r
}

// deliverLocked queues p at its receiver, due after its delay.
func (n *MockNetwork) deliverLocked(to string, p *mockPacket, now time.Time) {
	t := n.nodes[to]
	if t == nil {
		n.stats.NoRoute++
		return
	}
	if len(t.queue) >= mockQueueLimit {
		n.stats.Overflow++
		return
	}
	n.seq++
	p.due, p.seq = now.Add(p.delay), n.seq
	heap.Push(&t.queue, p)
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

type mockPacket struct {
	from  string
	data  []byte
	delay time.Duration
	due   time.Time
	seq   uint64
}

// mockQueue is a heap ordered by (due, seq): FIFO for equal delays.
type mockQueue []*mockPacket

func (q mockQueue) Len() int { return len(q) }
func (q mockQueue) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].seq < q[j].seq
}
func (q mockQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *mockQueue) Push(x any)   { *q = append(*q, x.(*mockPacket)) }
func (q *mockQueue) Pop() any {
	old := *q
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return p
}

type mockTransport struct {
	net     *MockNetwork
	addr    string
	packets chan Packet
	wake    chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once

	// guarded by net.mu
	closed bool
	queue  mockQueue
}

func (t *mockTransport) Send(to string, data []byte) error { return t.net.send(t, to, data) }
func (t *mockTransport) Packets() <-chan Packet            { return t.packets }
func (t *mockTransport) LocalAddr() string                 { return t.addr }

func (t *mockTransport) Close() error {
	t.once.Do(func() {
		n := t.net
		n.mu.Lock()
		t.closed = true
		if n.nodes[t.addr] == t {
			delete(n.nodes, t.addr)
		}
		for l := range n.held {
			if l.to == t.addr {
				delete(n.held, l)
			}
		}
		t.queue = nil
		n.mu.Unlock()
		close(t.done)
		t.wg.Wait()
	})
	return nil
}

// pump is the transport's one goroutine: it moves due packets to Packets,
// stamping them as the UDP receive goroutine does. It exits on Close.
func (t *mockTransport) pump() {
	defer t.wg.Done()
	defer close(t.packets)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		t.net.mu.Lock()
		var p *mockPacket
		var wait time.Duration
		if len(t.queue) > 0 {
			if wait = time.Until(t.queue[0].due); wait <= 0 {
				p = heap.Pop(&t.queue).(*mockPacket)
			}
		}
		t.net.mu.Unlock()

		if p != nil {
			select {
			case t.packets <- Packet{From: p.from, Data: p.data, RecvMono: mono.Now()}:
			case <-t.done:
				return
			}
			continue
		}
		var due <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			due = timer.C
		}
		select {
		case <-t.wake:
		case <-due:
		case <-t.done:
			return
		}
	}
}
