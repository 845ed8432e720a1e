package relay

import (
	"bytes"
	"fmt"
	"github.com/vmihailenco/msgpack/v5"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/frame"
)

// blockLog records OnBlocked calls.
type blockLog struct {
	mu     sync.Mutex
	events []string
}

func (b *blockLog) add(job int64, rank int, blocked bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, fmt.Sprintf("%d/%d:%v", job, rank, blocked))
}

func (b *blockLog) get() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events)
}

func newRelay(t *testing.T, node string, blocks *blockLog) *Relay {
	t.Helper()
	return newRelayWith(t, node, func(cfg *Config) {
		if blocks != nil {
			cfg.OnBlocked = blocks.add
		}
	})
}

// newRelayWith is newRelay with a Config that set changes.
func newRelayWith(t *testing.T, node string, set func(*Config)) *Relay {
	t.Helper()
	dir, err := os.MkdirTemp("", "rl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := Config{Node: node, SocketPath: filepath.Join(dir, "r.sock"), Listen: "127.0.0.1:0", Log: zaptest.NewLogger(t)}
	set(&cfg)
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// link tells relays about each other.
func link(rs ...*Relay) {
	peers := map[string]string{}
	for _, r := range rs {
		peers[r.cfg.Node] = r.Addr()
	}
	for _, r := range rs {
		r.SetPeers(peers)
	}
}

// client is a rank speaking the raw protocol.
type client struct {
	t    *testing.T
	c    net.Conn
	fr   *frame.Reader
	next uint64
}

func dialRank(t *testing.T, r *Relay, job int64, rank, size int) *client {
	t.Helper()
	cl, welcome := tryRank(t, r, job, rank, size)
	if welcome != "" {
		t.Fatalf("rank %d refused: %s", rank, welcome)
	}
	return cl
}

// rawClient connects, without a hello.
func rawClient(t *testing.T, r *Relay) *client {
	t.Helper()
	c, err := net.Dial("unix", r.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, fr: frame.NewReader(c, comm.MaxFrame)}
}

// tryRank connects and says hello; it returns the Fatal text if refused.
func tryRank(t *testing.T, r *Relay, job int64, rank, size int) (*client, string) {
	t.Helper()
	cl := rawClient(t, r)
	cl.send(comm.FrameHello, &comm.Hello{Job: job, Rank: rank, Size: size, PID: os.Getpid()})
	typ, body := cl.read()
	switch typ {
	case comm.FrameWelcome:
		return cl, ""
	case comm.FrameFatal:
		var f comm.Fatal
		frame.Decode(body, &f)
		return cl, f.Error
	}
	t.Fatalf("hello answered with frame type %d", typ)
	return nil, ""
}

func (cl *client) send(typ frame.Type, v any) {
	cl.t.Helper()
	if err := frame.Write(cl.c, typ, v); err != nil {
		cl.t.Fatal(err)
	}
}

func (cl *client) read() (frame.Type, []byte) {
	cl.t.Helper()
	cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, body, err := cl.fr.Read()
	if err != nil {
		cl.t.Fatalf("read from relay: %v", err)
	}
	return typ, slices.Clone(body)
}

// expectNothing checks that the relay sends nothing for d.
func (cl *client) expectNothing(d time.Duration) {
	cl.t.Helper()
	cl.c.SetReadDeadline(time.Now().Add(d))
	typ, _, err := cl.fr.Read()
	if err == nil {
		cl.t.Fatalf("relay sent frame type %d, expected nothing yet", typ)
	}
	cl.fr = frame.NewReader(cl.c, comm.MaxFrame) // the timed-out reader may hold a partial frame: none here
}

func (cl *client) msg(dst, tag int, data string) {
	cl.send(comm.FrameSend, &comm.Send{Dst: dst, Tag: tag, Data: []byte(data)})
}

func (cl *client) post(src, tag int) uint64 {
	cl.next++
	cl.send(comm.FramePost, &comm.Post{Req: cl.next, Src: src, Tag: tag})
	return cl.next
}

func (cl *client) deliver() comm.Deliver {
	cl.t.Helper()
	typ, body := cl.read()
	if typ != comm.FrameDeliver {
		cl.t.Fatalf("got frame type %d, want deliver", typ)
	}
	var d comm.Deliver
	if err := frame.Decode(body, &d); err != nil {
		cl.t.Fatal(err)
	}
	return d
}

func (cl *client) recv(src, tag int) comm.Deliver {
	cl.t.Helper()
	req := cl.post(src, tag)
	d := cl.deliver()
	if d.Req != req {
		cl.t.Fatalf("deliver for req %d, want %d", d.Req, req)
	}
	return d
}

func (cl *client) release() uint64 {
	cl.t.Helper()
	typ, body := cl.read()
	if typ != comm.FrameRelease {
		cl.t.Fatalf("got frame type %d, want release", typ)
	}
	var rel comm.Release
	frame.Decode(body, &rel)
	return rel.Seq
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestImmediateOneNode(t *testing.T) {
	var blocks blockLog
	r := newRelay(t, "n0", &blocks)
	if err := r.AddJob(7, []string{"n0", "n0", "n0"}); err != nil {
		t.Fatal(err)
	}
	a, b, c := dialRank(t, r, 7, 0, 3), dialRank(t, r, 7, 1, 3), dialRank(t, r, 7, 2, 3)

	// Order per (source, tag), any-source, any-tag.
	for i := range 5 {
		a.msg(1, 3, fmt.Sprint("a", i))
	}
	c.msg(1, 3, "c0")
	for i := range 5 {
		if d := b.recv(0, 3); string(d.Data) != fmt.Sprint("a", i) || d.Src != 0 || d.Tag != 3 {
			t.Fatalf("message %d: %+v", i, d)
		}
	}
	if d := b.recv(comm.AnySource, comm.AnyTag); string(d.Data) != "c0" || d.Src != 2 {
		t.Fatalf("any: %+v", d)
	}

	// Blocked: a Wait on an undelivered receive, until the message comes.
	req := b.post(2, 9)
	b.send(comm.FrameWait, &comm.Wait{Reqs: []uint64{req, 12345}})
	eventually(t, "rank 1 blocked", func() bool { return r.Stats().Blocked == 1 })
	c.msg(1, 9, "late")
	if d := b.deliver(); d.Req != req || string(d.Data) != "late" {
		t.Fatalf("%+v", d)
	}
	eventually(t, "rank 1 unblocked", func() bool { return r.Stats().Blocked == 0 })

	// Barrier: released only when all three arrive.
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	a.expectNothing(50 * time.Millisecond)
	c.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	for _, cl := range []*client{a, b, c} {
		if seq := cl.release(); seq != 1 {
			t.Fatalf("released %d", seq)
		}
	}
	// OnBlocked is called from the notifier's goroutine: the Release may
	// come first.
	eventually(t, "two block events", func() bool { return len(blocks.get()) >= 2 })
	if got, want := blocks.get(), []string{"7/1:true", "7/1:false"}; !slices.Equal(got[:2], want) {
		t.Fatalf("block events %v, want %v first", got, want)
	}
	eventually(t, "barrier blocks to end", func() bool { return r.Stats().Blocked == 0 && len(blocks.get()) == 8 })

	// Finalize → Bye; state says so.
	a.send(comm.FrameFinalize, &comm.Finalize{})
	if typ, _ := a.read(); typ != comm.FrameBye {
		t.Fatalf("finalize answered with %d", typ)
	}
	if inited, fin := r.RankState(7, 0); !inited || !fin {
		t.Fatalf("rank 0 state %v %v", inited, fin)
	}
	if inited, fin := r.RankState(7, 1); !inited || fin {
		t.Fatalf("rank 1 state %v %v", inited, fin)
	}
}

func TestHelloRefusedAndBadFrames(t *testing.T) {
	r := newRelay(t, "n0", nil)
	r.AddJob(1, []string{"n0", "n1"})
	for _, tc := range []struct {
		job        int64
		rank, size int
		want       string
	}{
		{9, 0, 2, "job 9 is not running on node n0"},
		{1, 0, 3, "job 1 has 2 ranks, not 3"},
		{1, 1, 2, "rank 1 of job 1 runs on node n1, not n0"},
		{1, 5, 2, "rank 5 out of range"},
	} {
		if _, fatal := tryRank(t, r, tc.job, tc.rank, tc.size); fatal == "" || !contains(fatal, tc.want) {
			t.Errorf("hello %+v: %q, want %q", tc, fatal, tc.want)
		}
	}
	ok := dialRank(t, r, 1, 0, 2)
	if _, fatal := tryRank(t, r, 1, 0, 2); !contains(fatal, "already connected") {
		t.Errorf("second hello: %q", fatal)
	}
	// A bad request ends that connection with a reason; the relay goes on.
	ok.msg(7, 0, "x")
	typ, body := ok.read()
	var f comm.Fatal
	frame.Decode(body, &f)
	if typ != comm.FrameFatal || !contains(f.Error, "send to rank 7 of a job of 2") {
		t.Fatalf("bad send: %d %q", typ, f.Error)
	}
	// Garbage on both sockets.
	for _, addr := range []struct{ net, addr string }{{"unix", r.SocketPath()}, {"tcp", r.Addr()}} {
		c, err := net.Dial(addr.net, addr.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte{0, 0, 0, 9, 1, 3, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1})
		c.Write([]byte("\xff\xff\xff\xff garbage"))
		c.Close()
	}
	r.AddJob(2, []string{"n0"})
	again := dialRank(t, r, 2, 0, 1)
	again.msg(0, 1, "self")
	if d := again.recv(0, 1); string(d.Data) != "self" {
		t.Fatalf("%+v", d)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// Two relays, immediate: messages cross, the barrier is counted at rank
// 0's node, and messages for a job not yet registered are held.
func TestImmediateTwoNodes(t *testing.T) {
	r0, r1 := newRelay(t, "n0", nil), newRelay(t, "n1", nil)
	link(r0, r1)
	nodes := []string{"n0", "n1", "n1"}
	r0.AddJob(3, nodes)
	a := dialRank(t, r0, 3, 0, 3)
	a.msg(1, 0, "early") // n1 does not know job 3 yet
	eventually(t, "the message held at n1", func() bool { return r1.Stats().Held == 1 })
	r1.AddJob(3, nodes)
	b, c := dialRank(t, r1, 3, 1, 3), dialRank(t, r1, 3, 2, 3)
	if d := b.recv(0, 0); string(d.Data) != "early" {
		t.Fatalf("%+v", d)
	}
	for i := range 100 {
		c.msg(0, 1, fmt.Sprint(i))
	}
	for i := range 100 {
		if d := a.recv(2, 1); string(d.Data) != fmt.Sprint(i) {
			t.Fatalf("message %d: %q", i, d.Data)
		}
	}
	for _, cl := range []*client{b, c, a} {
		cl.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	}
	for _, cl := range []*client{a, b, c} {
		if cl.release() != 1 {
			t.Fatal("wrong barrier")
		}
	}
	if s0, s1 := r0.Stats(), r1.Stats(); s0.Forwarded != 1 || s1.Forwarded != 100 || s0.Received != 100 || s1.Received != 1 {
		t.Fatalf("stats %+v / %+v", s0, s1)
	}
	// A job that ended: its late messages are dropped, not held.
	r1.RemoveJob(3)
	a.msg(1, 0, "late")
	eventually(t, "the late message dropped", func() bool { return r1.Stats().Dropped == 1 })
}

// Buffered mode: a message handed over in slice k is delivered only after
// the strobe that ends it and every peer's heartbeat; h_max spreads a
// burst over slices; what heartbeats announce is what arrives; a barrier
// completes at the strobe after its last arrival.
func TestBufferedSlices(t *testing.T) {
	r0, r1 := newRelay(t, "n0", nil), newRelay(t, "n1", nil)
	link(r0, r1)
	const slice = 50 * time.Millisecond
	for _, r := range []*Relay{r0, r1} {
		r.SetDelivery(Buffered, slice, 3*4096/slice.Seconds()) // h_max: three 4 KB messages
	}
	nodes := []string{"n0", "n1"}
	r0.AddJob(5, nodes)
	r1.AddJob(5, nodes)
	a, b := dialRank(t, r0, 5, 0, 2), dialRank(t, r1, 5, 1, 2)
	// strobe cuts slice seq on both nodes and exchanges their heartbeats.
	strobe := func(seq uint64) {
		r0.Cut(1, seq)
		r1.Cut(1, seq)
		h0, h1 := r0.HeartbeatData(1, seq), r1.HeartbeatData(1, seq)
		r1.PeerHeartbeat("n0", 1, seq, h0)
		r0.PeerHeartbeat("n1", 1, seq, h1)
	}
	strobe(1)
	msg := make([]byte, 4096)
	for range 7 {
		a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 0, Data: msg})
	}
	req := b.post(0, 0)
	eventually(t, "7 messages in n0's outbox", func() bool { return r0.Stats().Outbox == 7 })
	b.expectNothing(30 * time.Millisecond) // slice 1: nothing moves
	got := 0
	for seq := uint64(2); got < 7; seq++ {
		strobe(seq)
		want := min(3, 7-got) // h_max: 3 messages a slice
		for range want {
			d := b.deliver()
			if d.Req != req {
				t.Fatalf("deliver for %d", d.Req)
			}
			req = b.post(0, 0)
			got++
		}
		b.expectNothing(20 * time.Millisecond)
	}
	s0, s1 := r0.Stats(), r1.Stats()
	if s0.Announced != 7 || s0.Transferred != 7 || s1.AnnouncedIn != 7 || s1.ReceivedIn != 7 || s1.AnnouncedInBytes != 7*4096 || s0.MaxSliceBytes != 3*4096 || s0.Deferred != 2 {
		t.Fatalf("stats n0 %+v\nn1 %+v", s0, s1)
	}
	// Barrier: arrivals in slice k complete at strobe k+1.
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	eventually(t, "both ranks blocked", func() bool { return r0.Stats().Blocked == 1 && r1.Stats().Blocked == 1 })
	a.expectNothing(30 * time.Millisecond)
	strobe(10)
	if a.release() != 1 || b.release() != 1 {
		t.Fatal("barrier")
	}
}

// newBufferedPair is relays n0 and n1 in buffered delivery, slices of
// 40 ms (a heartbeat timeout of 10 ms), with job 5's rank 0 connected to
// n0 and rank 1 to n1. linked false: n0 does not know n1's address.
func newBufferedPair(t *testing.T, linked bool) (r0, r1 *Relay, a, b *client) {
	t.Helper()
	r0, r1 = newRelay(t, "n0", nil), newRelay(t, "n1", nil)
	if linked {
		link(r0, r1)
	} else {
		r1.SetPeers(map[string]string{"n0": r0.Addr()})
	}
	nodes := []string{"n0", "n1"}
	for _, r := range []*Relay{r0, r1} {
		r.SetDelivery(Buffered, 40*time.Millisecond, 0)
	}
	r0.AddJob(5, nodes)
	r1.AddJob(5, nodes)
	return r0, r1, dialRank(t, r0, 5, 0, 2), dialRank(t, r1, 5, 1, 2)
}

// bothInBarrier1 has a newBufferedPair's ranks arrive at barrier 1 and
// waits until both relays count them blocked there.
func bothInBarrier1(t *testing.T, r0, r1 *Relay, a, b *client) {
	t.Helper()
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	eventually(t, "both ranks in the barrier", func() bool { return r0.Stats().Blocked == 1 && r1.Stats().Blocked == 1 })
}

// Without every peer's heartbeat, a slice's transfer waits for the
// timeout, then goes anyway.
func TestBufferedHeartbeatTimeout(t *testing.T) {
	r0, _, a, b := newBufferedPair(t, true)
	r0.Cut(1, 1)
	a.msg(1, 0, "x")
	eventually(t, "outbox", func() bool { return r0.Stats().Outbox == 1 })
	r0.Cut(1, 2) // no heartbeat from n1 ever comes
	if d := b.recv(0, 0); string(d.Data) != "x" {
		t.Fatalf("%+v", d)
	}
	if s := r0.Stats(); s.HeartbeatWaits == 0 {
		t.Fatalf("stats %+v", s)
	}
}

// A rank that stops waiting (its ctx ended) says so, and is not counted
// blocked any more; nor is a finalized rank.
func TestUnwait(t *testing.T) {
	var blocks blockLog
	r := newRelay(t, "n0", &blocks)
	r.AddJob(1, []string{"n0", "n0"})
	a, _ := dialRank(t, r, 1, 0, 2), dialRank(t, r, 1, 1, 2)
	req := a.post(1, 0)
	a.send(comm.FrameWait, &comm.Wait{Reqs: []uint64{req}})
	eventually(t, "blocked in a receive", func() bool { return r.Stats().Blocked == 1 })
	a.send(comm.FrameUnwait, &comm.Unwait{Reqs: []uint64{req}})
	eventually(t, "unblocked by Unwait", func() bool { return r.Stats().Blocked == 0 })
	a.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	eventually(t, "blocked in a barrier", func() bool { return r.Stats().Blocked == 1 })
	a.send(comm.FrameUnwait, &comm.Unwait{Barrier: 1})
	eventually(t, "unblocked from the barrier", func() bool { return r.Stats().Blocked == 0 })
	a.send(comm.FrameWait, &comm.Wait{Reqs: []uint64{req}})
	eventually(t, "blocked again", func() bool { return r.Stats().Blocked == 1 })
	a.send(comm.FrameFinalize, &comm.Finalize{})
	eventually(t, "finalized, not blocked", func() bool { return r.Stats().Blocked == 0 })
	// OnBlocked is called from the notifier's goroutine, after Stats says it.
	eventually(t, "six block events", func() bool { return len(blocks.get()) >= 6 })
	if got := blocks.get(); len(got) != 6 {
		t.Fatalf("block events %v", got)
	}
}

// What a rank sent before all of its node's ranks ended still goes out at
// the next slice (FinishJob); a cancelled job's buffered messages do not
// (RemoveJob).
func TestBufferedMessagesOutliveTheirSender(t *testing.T) {
	r0, r1 := newRelay(t, "n0", nil), newRelay(t, "n1", nil)
	link(r0, r1)
	for _, r := range []*Relay{r0, r1} {
		r.SetDelivery(Buffered, 40*time.Millisecond, 0)
	}
	nodes := []string{"n0", "n1"}
	for _, job := range []int64{5, 6} {
		r0.AddJob(job, nodes)
		r1.AddJob(job, nodes)
	}
	a5, b5 := dialRank(t, r0, 5, 0, 2), dialRank(t, r1, 5, 1, 2)
	a6, b6 := dialRank(t, r0, 6, 0, 2), dialRank(t, r1, 6, 1, 2)
	r0.Cut(1, 1)
	a5.msg(1, 0, "last words")
	a6.msg(1, 0, "never sent")
	eventually(t, "outbox", func() bool { return r0.Stats().Outbox == 2 })
	a5.send(comm.FrameFinalize, &comm.Finalize{})
	r0.FinishJob(5) // job 5's ranks on n0 ended
	r0.RemoveJob(6) // job 6 was cancelled
	if s := r0.Stats(); s.Outbox != 1 {
		t.Fatalf("outbox after FinishJob and RemoveJob: %+v", s)
	}
	r0.Cut(1, 2)
	if d := b5.recv(0, 0); string(d.Data) != "last words" {
		t.Fatalf("%+v", d)
	}
	b6.post(0, 0)
	b6.expectNothing(100 * time.Millisecond)
}

// Buffered barriers are counted at the job's root (its first node by
// name): the root releases every node of the job as soon as the reports
// add up, over the relays' connections, so a node that heard no
// heartbeat at all is released in the same slice.
func TestBarrierRootReleasesEveryNode(t *testing.T) {
	r0, r1, r2 := newRelay(t, "n0", nil), newRelay(t, "n1", nil), newRelay(t, "n2", nil)
	link(r0, r1, r2)
	rs := []*Relay{r0, r1, r2}
	nodes := []string{"n2", "n1", "n0", "n1"} // the root is n0, not rank 0's node
	var cls []*client
	for _, r := range rs {
		r.SetDelivery(Buffered, 40*time.Millisecond, 0)
		r.AddJob(5, nodes)
	}
	for rank, n := range nodes {
		cls = append(cls, dialRank(t, rs[n[1]-'0'], 5, rank, len(nodes)))
	}
	for _, cl := range cls {
		cl.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	}
	eventually(t, "every rank in the barrier", func() bool {
		return r0.Stats().Blocked == 1 && r1.Stats().Blocked == 2 && r2.Stats().Blocked == 1
	})
	// Slice 1: n1 and n2 report to the root; no heartbeat reaches n1 or n2.
	for _, r := range rs {
		r.Cut(1, 1)
	}
	r0.PeerHeartbeat("n1", 1, 1, r1.HeartbeatData(1, 1))
	cls[2].expectNothing(20 * time.Millisecond) // n2's report not in yet
	r0.PeerHeartbeat("n2", 1, 1, r2.HeartbeatData(1, 1))
	_ = r0.HeartbeatData(1, 1) // lost on its way to n1 and n2
	for rank, cl := range cls {
		if cl.release() != 1 {
			t.Fatalf("rank %d not released", rank)
		}
	}
	for i, r := range rs {
		if s := r.Stats(); s.Blocked != 0 || s.Barriers != 1 {
			t.Fatalf("n%d stats %+v", i, s)
		}
	}
}

// Only the root counts: reports that reach the other nodes release
// nothing there, and a report the root missed counts when the next
// heartbeat repeats it (reports are cumulative).
func TestBarrierCountedAtTheRootOnly(t *testing.T) {
	r0, r1, a, b := newBufferedPair(t, true)
	bothInBarrier1(t, r0, r1, a, b)
	// Slice 1: n0's report reaches n1, which has every report but is not the root.
	r0.Cut(1, 1)
	r1.Cut(1, 1)
	r1.PeerHeartbeat("n0", 1, 1, r0.HeartbeatData(1, 1))
	_ = r1.HeartbeatData(1, 1) // lost on its way to n0
	a.expectNothing(30 * time.Millisecond)
	b.expectNothing(0)
	// Slice 2: n1's repeated report reaches the root.
	r0.Cut(1, 2)
	r1.Cut(1, 2)
	r0.PeerHeartbeat("n1", 1, 2, r1.HeartbeatData(1, 2))
	if a.release() != 1 || b.release() != 1 {
		t.Fatal("not released")
	}
}

// Should the root's release not reach a node (here: the root does not
// know its address yet, so the frame waits), a heartbeat from the root
// (a build before the rooted exchange still sends them) carries it
// (Released), and the node releases from that.
func TestBarrierReleaseReachesAPeerThatMissedTheRootsFrame(t *testing.T) {
	r0, r1, a, b := newBufferedPair(t, false) // n0 does not know n1's address
	bothInBarrier1(t, r0, r1, a, b)
	r0.Cut(1, 1)
	r1.Cut(1, 1)
	r0.PeerHeartbeat("n1", 1, 1, r1.HeartbeatData(1, 1))
	if a.release() != 1 {
		t.Fatal("the root saw every arrival but did not release")
	}
	b.expectNothing(30 * time.Millisecond)
	r0.Cut(1, 2)
	r1.Cut(1, 2)
	r1.PeerHeartbeat("n0", 1, 2, r0.HeartbeatData(1, 2))
	if b.release() != 1 {
		t.Fatal("n1 not released by the root's heartbeat")
	}
	if s := r1.Stats(); s.Blocked != 0 || s.Barriers != 1 {
		t.Fatalf("n1 stats %+v", s)
	}
}

// A node whose ranks of a job have all ended (FinishJob) tells the job's
// other nodes, whose transfers then stop waiting for its heartbeats: no
// heartbeat timeout in the slices that follow, and it is no longer among
// their shared nodes.
func TestBufferedStopsWaitingForANodeThatLeftTheJob(t *testing.T) {
	r0, r1, r2 := newRelay(t, "n0", nil), newRelay(t, "n1", nil), newRelay(t, "n2", nil)
	link(r0, r1, r2)
	nodes := []string{"n0", "n1", "n2"}
	for _, r := range []*Relay{r0, r1, r2} {
		r.SetDelivery(Buffered, 400*time.Millisecond, 0) // a heartbeat timeout of 100 ms
		r.AddJob(5, nodes)
	}
	b, c := dialRank(t, r1, 5, 1, 3), dialRank(t, r2, 5, 2, 3)
	r0.FinishJob(5)
	eventually(t, "n1 and n2 know n0 left", func() bool {
		return slices.Equal(r1.SharedNodes(), []string{"n2"}) && slices.Equal(r2.SharedNodes(), []string{"n1"})
	})
	r1.Cut(1, 1)
	r1.PeerHeartbeat("n2", 1, 1, r2.heartbeatFor(t, 1, 1))
	b.msg(2, 0, "x")
	eventually(t, "outbox", func() bool { return r1.Stats().Outbox == 1 })
	r1.Cut(1, 2)
	r1.PeerHeartbeat("n2", 1, 2, r2.heartbeatFor(t, 1, 2)) // n2's heartbeat; none from n0, which left
	if d := c.recv(1, 0); string(d.Data) != "x" {
		t.Fatalf("%+v", d)
	}
	if s := r1.Stats(); s.HeartbeatWaits != 0 {
		t.Fatalf("n1 waited for a heartbeat: %+v", s)
	}
}

// Payloads the relay keeps where it read them (queued before their
// receive), refers to in a Deliver instead of copying, or copies (small
// ones) arrive intact and in order while much more traffic follows them,
// on one node and across two.
func TestPayloadsKeptOrReferencedArriveIntact(t *testing.T) {
	for _, nodes := range [][]string{{"n0", "n0"}, {"n0", "n1"}} {
		r0, r1 := newRelay(t, "n0", nil), newRelay(t, "n1", nil)
		link(r0, r1)
		r0.AddJob(9, nodes)
		r1.AddJob(9, nodes)
		rb := r0
		if nodes[1] == "n1" {
			rb = r1
		}
		a, b := dialRank(t, r0, 9, 0, 2), dialRank(t, rb, 9, 1, 2)
		payload := func(i int) []byte {
			return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 200+(i*397)%5000)
		}
		const n = 300
		var reqs []uint64
		for range 10 { // the first messages find their receives posted
			reqs = append(reqs, b.post(0, 0))
		}
		for i := range n {
			a.send(comm.FrameSend, &comm.Send{Dst: 1, Tag: 0, Data: payload(i)})
		}
		for i := range n {
			if i >= 10 {
				reqs = append(reqs, b.post(0, 0))
			}
			d := b.deliver()
			if d.Req != reqs[i] || !bytes.Equal(d.Data, payload(i)) {
				t.Fatalf("nodes %v: delivery %d: request %d (want %d), %d bytes, intact %v",
					nodes, i, d.Req, reqs[i], len(d.Data), bytes.Equal(d.Data, payload(i)))
			}
		}
	}
}

// A relay's BCS business is with the nodes that share a job with it: it
// waits for their heartbeats only, not for a peer's it shares nothing
// with (whose agent no longer sends it heartbeats).
func TestBufferedWaitsOnlyForNodesSharingAJob(t *testing.T) {
	r0, r1, r2 := newRelay(t, "n0", nil), newRelay(t, "n1", nil), newRelay(t, "n2", nil)
	link(r0, r1, r2)
	for _, r := range []*Relay{r0, r1, r2} {
		r.SetDelivery(Buffered, 400*time.Millisecond, 0) // a heartbeat timeout of 100 ms: waiting for n2 would count a wait
	}
	if got := r0.SharedNodes(); len(got) != 0 {
		t.Fatalf("shared before any job: %v", got)
	}
	nodes := []string{"n0", "n1", "n0"}
	r0.AddJob(5, nodes)
	r1.AddJob(5, nodes)
	if got := r0.SharedNodes(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("shared %v, want [n1]", got)
	}
	a, b := dialRank(t, r0, 5, 0, 3), dialRank(t, r1, 5, 1, 3)
	r0.Cut(1, 1)
	r0.PeerHeartbeat("n1", 1, 1, r1.heartbeatFor(t, 1, 1))
	a.msg(1, 0, "x")
	eventually(t, "outbox", func() bool { return r0.Stats().Outbox == 1 })
	r0.Cut(1, 2)
	r0.PeerHeartbeat("n1", 1, 2, r1.heartbeatFor(t, 1, 2)) // n1's heartbeat; none from n2, which shares nothing
	if d := b.recv(0, 0); string(d.Data) != "x" {
		t.Fatalf("%+v", d)
	}
	if s := r0.Stats(); s.HeartbeatWaits != 0 || s.Peers != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// heartbeatFor cuts slice seq here and returns its heartbeat data.
func (r *Relay) heartbeatFor(t *testing.T, epoch, seq uint64) []byte {
	t.Helper()
	r.Cut(epoch, seq)
	return r.HeartbeatData(epoch, seq)
}

// A frame of a type this build does not know (a later build's) is skipped
// and the connection read on: what follows it arrives.
func TestUnknownPeerFrameSkipped(t *testing.T) {
	r := newRelay(t, "n0", nil)
	r.AddJob(3, []string{"n1", "n0"})
	b := dialRank(t, r, 3, 1, 2)
	c, err := net.Dial("tcp", r.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, f := range []struct {
		t frame.Type
		v any
	}{
		{framePeerHello, &peerHello{Node: "n1"}},
		{frame.Type(200), &peerHello{Node: "from the future"}},
		{framePeerMsg, &peerMsg{Job: 3, Src: 0, Dst: 1, Data: []byte("after")}},
	} {
		if err := frame.Write(c, f.t, f.v); err != nil {
			t.Fatal(err)
		}
	}
	if d := b.recv(0, 0); string(d.Data) != "after" {
		t.Fatalf("%+v", d)
	}
}

// The rooted exchange: a job's nodes heartbeat its root only
// (HeartbeatNodes), and the root answers each with the job's sliceReady
// once all of them have reported; a node's transfer waits for that, not
// for heartbeats from the other nodes, and learns from it what the
// slice's transfers bring it (AnnouncedIn).
func TestBufferedRootedExchange(t *testing.T) {
	rs := newBCSNodes(t, "n0", "n1", "n2") // a transfer goes when the exchange is done, never at a timeout
	r0, r1, r2 := rs[0], rs[1], rs[2]
	rs.addJob(t, 5, []string{"n1", "n2", "n0"})
	for i, want := range [][]string{{}, {"n0"}, {"n0"}} {
		if got := rs[i].HeartbeatNodes(); !slices.Equal(got, want) {
			t.Fatalf("n%d heartbeats %v, want %v", i, got, want)
		}
	}
	a, b := dialRank(t, r1, 5, 0, 3), dialRank(t, r2, 5, 1, 3)
	for _, r := range rs {
		r.Cut(1, 1)
	}
	r0.PeerHeartbeat("n1", 1, 1, r1.HeartbeatData(1, 1))
	r0.PeerHeartbeat("n2", 1, 1, r2.HeartbeatData(1, 1))
	eventually(t, "slice 1 transferred everywhere (sliceReady in)", func() bool {
		return r0.transferred() == 1 && r1.transferred() == 1 && r2.transferred() == 1
	})
	a.msg(1, 0, "x")
	eventually(t, "outbox", func() bool { return r1.Stats().Outbox == 1 })
	for _, r := range rs {
		r.Cut(1, 2)
	}
	r0.PeerHeartbeat("n1", 1, 2, r1.HeartbeatData(1, 2))
	b.post(0, 0)
	b.expectNothing(30 * time.Millisecond) // n2 has not reported: no sliceReady yet
	r0.PeerHeartbeat("n2", 1, 2, r2.HeartbeatData(1, 2))
	if d := b.deliver(); string(d.Data) != "x" {
		t.Fatalf("%+v", d)
	}
	for i, r := range rs {
		if s := r.Stats(); s.HeartbeatWaits != 0 {
			t.Fatalf("n%d timed out waiting: %+v", i, s)
		}
	}
	// n1's transfer and n0's sliceReady reach n2 on two connections: the
	// message may be delivered before its announcement is read.
	eventually(t, "n2 counts the message announced and received", func() bool {
		s := r2.Stats()
		return s.AnnouncedIn == 1 && s.AnnouncedInBytes == 1 && s.ReceivedIn == 1
	})
	// The root leaves the job: its nodes heartbeat the next root.
	r0.FinishJob(5)
	eventually(t, "n2 heartbeats n1, the next root", func() bool {
		return slices.Equal(r2.HeartbeatNodes(), []string{"n1"}) && len(r1.HeartbeatNodes()) == 0
	})
}

// transferred is the last slice this relay transferred.
func (r *Relay) transferred() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bcs.done
}

// A heartbeat that reaches the root after the slice's sliceReady went out
// (the root's timeout passed) still announces its flows, so that what was
// announced is what arrived.
func TestBufferedLateHeartbeatStillAnnounced(t *testing.T) {
	r0, r1, r2 := newRelay(t, "n0", nil), newRelay(t, "n1", nil), newRelay(t, "n2", nil)
	rs := []*Relay{r0, r1, r2}
	link(rs...)
	nodes := []string{"n1", "n2", "n0"}
	for _, r := range rs {
		r.SetDelivery(Buffered, 40*time.Millisecond, 0)
		r.AddJob(5, nodes)
	}
	a, b := dialRank(t, r1, 5, 0, 3), dialRank(t, r2, 5, 1, 3)
	for _, r := range rs {
		r.Cut(1, 1)
	}
	a.msg(1, 0, "late")
	eventually(t, "outbox", func() bool { return r1.Stats().Outbox == 1 })
	for _, r := range rs {
		r.Cut(1, 2)
	}
	h1 := r1.HeartbeatData(1, 2)                         // announces the message; held back
	r0.PeerHeartbeat("n2", 1, 2, r2.HeartbeatData(1, 2)) // n1's is missing: the root times out
	if d := b.recv(0, 0); string(d.Data) != "late" {     // n1 transferred at its own timeout
		t.Fatalf("%+v", d)
	}
	eventually(t, "the root's timeout", func() bool { return r0.transferred() == 2 })
	if s := r2.Stats(); s.AnnouncedIn != 0 || s.ReceivedIn != 1 {
		t.Fatalf("n2 before the late heartbeat: %+v", s)
	}
	r0.PeerHeartbeat("n1", 1, 2, h1)
	eventually(t, "the late flow announced to n2", func() bool {
		s := r2.Stats()
		return s.AnnouncedIn == 1 && s.AnnouncedInBytes == 4
	})
}

// A root's sliceReady repeats the job's highest released barrier: a node
// whose release frame was lost releases from the next one.
func TestSliceReadyCarriesTheRelease(t *testing.T) {
	r1 := newRelay(t, "n1", nil)
	r1.SetDelivery(Buffered, 40*time.Millisecond, 0)
	r1.AddJob(5, []string{"n0", "n1"})
	b := dialRank(t, r1, 5, 1, 2)
	b.send(comm.FrameArrive, &comm.Arrive{Seq: 1})
	eventually(t, "the rank in the barrier", func() bool { return r1.Stats().Blocked == 1 })
	r1.Cut(1, 1)
	r1.mu.Lock()
	r1.inboundLocked(inbound{from: "n0", ready: &sliceReady{Job: 5, Epoch: 1, Seq: 1, Released: 1, Msgs: 2, Bytes: 10}})
	r1.unlock()
	if b.release() != 1 {
		t.Fatal("not released")
	}
	if s := r1.Stats(); s.AnnouncedIn != 2 || s.AnnouncedInBytes != 10 || s.Barriers != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// A heartbeat that announces flows to this node for a job not registered
// here yet (its launch is still on the way) counts them once the job is
// registered, if this node is the job's root; another root announces them
// itself, in its sliceReady. (Seen in node's TestBCSBenchmarks: one
// message arrived unannounced.)
func TestEarlyFlowsCountAtRegistration(t *testing.T) {
	for _, tc := range []struct {
		node  string
		nodes []string
		want  uint64
	}{
		{"n0", []string{"n0", "n1"}, 3}, // n0 is the root
		{"n2", []string{"n1", "n2"}, 0}, // n1 is
	} {
		r := newRelay(t, tc.node, nil)
		r.SetDelivery(Buffered, 40*time.Millisecond, 0)
		r.Cut(1, 1)
		data, err := msgpack.Marshal(load{Node: "n1", Flows: []loadFlow{{Node: tc.node, Msgs: 3, Bytes: 300, Job: 7}}})
		if err != nil {
			t.Fatal(err)
		}
		r.PeerHeartbeat("n1", 1, 1, data)
		if st := r.Stats(); st.AnnouncedIn != 0 {
			t.Fatalf("%s: %d announced before the job is registered", tc.node, st.AnnouncedIn)
		}
		if err := r.AddJob(7, tc.nodes); err != nil {
			t.Fatal(err)
		}
		if st := r.Stats(); st.AnnouncedIn != tc.want || st.AnnouncedInBytes != 100*tc.want {
			t.Errorf("%s (job on %v): announced %d messages, %d bytes; want %d, %d", tc.node, tc.nodes, st.AnnouncedIn, st.AnnouncedInBytes, tc.want, 100*tc.want)
		}
	}
}
