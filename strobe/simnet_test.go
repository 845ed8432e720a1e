package strobe

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"
)

// simNetwork is a discrete-event network on a virtual clock, for the
// scale simulation: the real Sender and Follower code runs on it (their
// handle is called synchronously when a datagram is due), but time is the
// simulation's, so 1,024 nodes on a shared 2-core machine measure the
// protocol rather than the goroutine scheduler. (MockNetwork delivers on
// the real clock: right for behaviour tests, useless for µs timings at
// that scale.)
//
// Model: a datagram leaves its sender sendCost after the sender's
// previous one (one CPU and NIC per node: back-to-back sends serialise),
// and arrives latency later unless Faults.Loss drops it (per-link
// generators seeded from the network's seed, as MockNetwork). Receive
// processing is free. Heartbeats are counted but not delivered unless
// deliverHeartbeats is set (the barrier simulation): they do not take
// part in the strobe fan-out, and delivering N² of them per slice would
// only slow the simulation. frame models a frame on an established TCP
// connection between relays: it costs a send and the latency like a
// datagram, is never lost, and runs a callback at the receiver.
type simNetwork struct {
	now      int64 // virtual ns
	latency  int64
	sendCost int64
	loss     float64
	seed     uint64
	rngs     map[mockLink]*rand.Rand
	nodes    map[string]*simNode
	events   simQueue
	seq      uint64
	counts   [256]simCount     // by MsgType
	frames   uint64            // relay frames sent (frame)
	hbTo     map[string]uint64 // heartbeat datagrams by destination
	// deliverHeartbeats: heartbeats reach their receivers (subject to
	// loss) instead of only being counted.
	deliverHeartbeats bool
}

// simCount counts the datagrams of one type.
type simCount struct{ packets, bytes uint64 }

// simNode is one node's transport and, if it runs one, its Follower.
type simNode struct {
	net      *simNetwork
	addr     string
	busy     int64 // virtual time its last send leaves
	follower *Follower
	dead     bool // receives nothing, sends nothing
}

type simEvent struct {
	at   int64
	seq  uint64
	from string
	to   string
	data []byte
	fn   func() // a relay frame's effect at the receiver (frame), instead of data
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func newSimNetwork(seed uint64, latency, sendCost time.Duration, loss float64) *simNetwork {
	return &simNetwork{
		latency: int64(latency), sendCost: int64(sendCost), loss: loss, seed: seed,
		rngs: map[mockLink]*rand.Rand{}, nodes: map[string]*simNode{}, hbTo: map[string]uint64{},
	}
}

func (n *simNetwork) node(addr string) *simNode {
	if n.nodes[addr] != nil {
		panic(fmt.Sprintf("sim: address %q in use", addr))
	}
	s := &simNode{net: n, addr: addr}
	n.nodes[addr] = s
	return s
}

func (n *simNetwork) rng(l mockLink) *rand.Rand {
	r := n.rngs[l]
	if r == nil {
		h := fnv.New64a()
		h.Write([]byte(l.from + "\x00" + l.to))
		r = rand.New(rand.NewPCG(n.seed, h.Sum64()))
		n.rngs[l] = r
	}
	return r
}

// run delivers every datagram due by until, in order, and leaves the
// clock at until.
func (n *simNetwork) run(until int64) {
	for len(n.events) > 0 && n.events[0].at <= until {
		e := heap.Pop(&n.events).(simEvent)
		n.now = e.at
		if e.fn != nil {
			e.fn()
			continue
		}
		to := n.nodes[e.to]
		if to == nil || to.dead || to.follower == nil {
			continue
		}
		to.follower.handle(Packet{From: e.from, Data: e.data, RecvMono: e.at})
	}
	n.now = until
}

func (s *simNode) Send(to string, data []byte) error {
	n := s.net
	if s.dead {
		return nil
	}
	start := max(n.now, s.busy)
	s.busy = start + n.sendCost
	typ := MsgType(0)
	if len(data) > 2 {
		typ = MsgType(data[2]) // [0x9N, version, type, …]: small ints are one byte
	}
	n.counts[typ].packets++
	n.counts[typ].bytes += uint64(len(data))
	if typ == TypeHeartbeat {
		n.hbTo[to]++
	}
	if typ == TypeHeartbeat && !n.deliverHeartbeats || n.rng(mockLink{s.addr, to}).Float64() < n.loss {
		return nil
	}
	n.seq++
	heap.Push(&n.events, simEvent{at: s.busy + n.latency, seq: n.seq, from: s.addr, to: to, data: slices.Clone(data)})
	return nil
}

// frame sends a relay frame to node to over TCP: it leaves after the
// node's previous send, arrives latency later, is never lost, and then
// runs effect.
func (s *simNode) frame(to string, effect func()) {
	n := s.net
	if s.dead {
		return
	}
	s.busy = max(n.now, s.busy) + n.sendCost
	n.frames++
	n.seq++
	heap.Push(&n.events, simEvent{at: s.busy + n.latency, seq: n.seq, from: s.addr, to: to, fn: func() {
		if d := n.nodes[to]; d != nil && !d.dead {
			effect()
		}
	}})
}

// after runs effect at virtual time at (a timer).
func (n *simNetwork) after(at int64, effect func()) {
	n.seq++
	heap.Push(&n.events, simEvent{at: at, seq: n.seq, fn: effect})
}

func (s *simNode) Packets() <-chan Packet { return nil }
func (s *simNode) LocalAddr() string      { return s.addr }
func (s *simNode) Close() error           { return nil }
