package strobe

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// cluster is a controller transport ("ctl") and followers on a MockNetwork.
type cluster struct {
	t    *testing.T
	net  *MockNetwork
	ctl  Transport
	send *Sender
	f    map[string]*Follower
	sw   map[string]*switchLog
}

// newCluster starts one follower per name (its address is the name). The
// followers' peers are not set.
func newCluster(t *testing.T, seed uint64, names ...string) *cluster {
	t.Helper()
	checkLeaks(t)
	c := &cluster{t: t, net: NewMockNetwork(seed), f: map[string]*Follower{}, sw: map[string]*switchLog{}}
	c.ctl = c.net.Transport("ctl")
	t.Cleanup(func() { c.ctl.Close() })
	c.send = NewSender(c.ctl, 100, zaptest.NewLogger(t))
	for _, name := range names {
		tr := c.net.Transport(name)
		t.Cleanup(func() { tr.Close() }) // after the follower stops (cleanups run last-in first-out)
		sw := &switchLog{cost: 7 * time.Microsecond}
		f := NewFollower(FollowerConfig{Name: name, Transport: tr, Switch: sw.Switch, Log: zaptest.NewLogger(t)})
		runFollower(t, f)
		c.f[name], c.sw[name] = f, sw
	}
	return c
}

func (c *cluster) names() []string {
	var out []string
	for n := range c.f {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// strobe sends slice seq to every follower.
func (c *cluster) strobe(seq uint64, row int) int64 {
	c.t.Helper()
	sent, err := c.send.Strobe(c.names(), seq, row, 1, 0)
	if err != nil {
		c.t.Fatal(err)
	}
	return sent
}

// raw sends a hand-made packet from the controller to one follower.
func (c *cluster) raw(to string, m Message) {
	c.t.Helper()
	if err := c.ctl.Send(to, mustMarshal(c.t, m)); err != nil {
		c.t.Fatal(err)
	}
}

// waitSeq waits until follower name has finished applying slice seq of
// epoch 100 (its record is written last, with the counters).
func (c *cluster) waitSeq(name string, seq uint64) Stats {
	c.t.Helper()
	return waitApplied(c.t, c.f[name], 100, seq)
}

func waitApplied(t *testing.T, f *Follower, epoch, seq uint64) Stats {
	t.Helper()
	eventually(t, fmt.Sprintf("%s to apply slice %d/%d", f.cfg.Name, epoch, seq), func() bool {
		recs := f.Records()
		return len(recs) > 0 && recs[len(recs)-1].Epoch == epoch && recs[len(recs)-1].Seq == seq
	})
	return f.Stats()
}

// heartbeats reads the heartbeats that reached the controller until want
// have arrived.
func (c *cluster) heartbeats(want int) []*Heartbeat {
	c.t.Helper()
	var out []*Heartbeat
	for len(out) < want {
		p := recv(c.t, c.ctl)
		m, err := Unmarshal(p.Data)
		if err != nil {
			c.t.Fatalf("controller got a bad packet: %v", err)
		}
		hb, ok := m.(*Heartbeat)
		if !ok {
			c.t.Fatalf("controller got a %v", m.MsgType())
		}
		if p.From != hb.From { // in this cluster addresses are names
			c.t.Fatalf("heartbeat from %s claims to be %s", p.From, hb.From)
		}
		out = append(out, hb)
	}
	return out
}

func TestFollowerInOrder(t *testing.T) {
	c := newCluster(t, 1, "a", "b", "c")
	for _, n := range c.names() {
		c.f[n].SetPeers(c.names()) // includes itself: ignored
	}
	rows := []int{0, 1, 2, 0, 1}
	var sent []int64
	for i, r := range rows {
		sent = append(sent, c.strobe(uint64(i+1), r))
		// The heartbeat exchange of a slice completes before the next
		// strobe, as in a real run; it also keeps this test's order fixed.
		hbs := c.heartbeats(3)
		for _, hb := range hbs {
			if hb.Seq != uint64(i+1) || hb.Epoch != 100 || hb.SwitchCost != int64(7*time.Microsecond) {
				t.Fatalf("heartbeat %+v for slice %d", hb, i+1)
			}
			if hb.RecvMono < sent[i] || hb.SwitchedMono < hb.RecvMono {
				t.Fatalf("heartbeat times out of order: sent %d, %+v", sent[i], hb)
			}
		}
	}
	for _, n := range c.names() {
		st := c.waitSeq(n, 5)
		if got := c.sw[n].Rows(); !reflect.DeepEqual(got, rows) {
			t.Errorf("%s switched to %v, want %v", n, got, rows)
		}
		if st.Applied != 5 || st.Lost != 0 || st.Late != 0 || st.Row != 1 || !st.Accounted() {
			t.Errorf("%s stats %+v", n, st)
		}
		// Each follower heartbeats the controller and its two peers.
		if st.HeartbeatsSent != 15 {
			t.Errorf("%s sent %d heartbeats, want 15", n, st.HeartbeatsSent)
		}
		recs := c.f[n].Records()
		if len(recs) != 5 {
			t.Fatalf("%s has %d records", n, len(recs))
		}
		for i, r := range recs {
			if r.Seq != uint64(i+1) || r.Row != rows[i] || r.SentMono != sent[i] || r.Epoch != 100 ||
				r.RecvMono < r.SentMono || r.SwitchedMono < r.RecvMono || r.SwitchCost != 7*time.Microsecond {
				t.Errorf("%s record %d: %+v", n, i, r)
			}
		}
		if st.Latency.N != 5 || st.SwitchCost.P99 != 7*time.Microsecond {
			t.Errorf("%s distributions %+v %+v", n, st.Latency, st.SwitchCost)
		}
	}
	// The total exchange: every follower hears every other for every slice.
	for _, n := range c.names() {
		eventually(t, n+" to hear its peers", func() bool {
			peers := c.f[n].Stats().Peers
			for _, o := range c.names() {
				if o != n && (peers[o].Seq != 5 || peers[o].Count != 5 || peers[o].Addr != o) {
					return false
				}
			}
			return len(peers) == 2
		})
	}
}

func TestFollowerLossKeepsRow(t *testing.T) {
	c := newCluster(t, 1, "a")
	c.strobe(1, 0)
	c.strobe(2, 1)
	st := c.waitSeq("a", 2)
	// Slices 3 and 4 never arrive: the agent keeps row 1 through them.
	if st.Row != 1 {
		t.Fatalf("row %d", st.Row)
	}
	c.strobe(5, 2)
	st = c.waitSeq("a", 5)
	if st.Lost != 2 || st.Applied != 3 || st.Late != 0 || !st.Accounted() {
		t.Fatalf("stats %+v", st)
	}
	if got := c.sw["a"].Rows(); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Fatalf("rows %v", got)
	}
	hbs := c.heartbeats(3)
	if last := hbs[2]; last.Seq != 5 || last.Lost != 2 {
		t.Fatalf("heartbeat of slice 5 %+v does not report the loss", last)
	}
}

func TestFollowerLateAndDuplicate(t *testing.T) {
	c := newCluster(t, 1, "a")
	for _, seq := range []uint64{1, 3, 2, 3, 4, 4, 1} { // 2 overtaken by 3; duplicates of 3, 4, 1
		c.raw("a", &Strobe{Epoch: 100, Seq: seq, Row: int(seq)})
	}
	c.raw("a", &Strobe{Epoch: 100, Seq: 5, Row: 5})
	st := c.waitSeq("a", 5)
	if got := c.sw["a"].Rows(); !reflect.DeepEqual(got, []int{1, 3, 4, 5}) {
		t.Fatalf("applied rows %v, want [1 3 4 5]", got)
	}
	// 2 counted lost when 3 came, then late when it arrived; 3, 4, 1 late.
	if st.Late != 4 || st.Lost != 1 || st.Applied != 4 || !st.Accounted() {
		t.Fatalf("stats %+v", st)
	}
	if got := len(c.heartbeats(4)); got != 4 {
		t.Fatalf("%d heartbeats; late strobes must not be answered", got)
	}
}

func TestFollowerNewEpoch(t *testing.T) {
	c := newCluster(t, 1, "a")
	for seq := uint64(1); seq <= 3; seq++ {
		c.raw("a", &Strobe{Epoch: 100, Seq: seq, Row: 0})
	}
	c.waitSeq("a", 3)
	// The controller restarts: a new epoch starts again at 1.
	c.raw("a", &Strobe{Epoch: 200, Seq: 1, Row: 1})
	c.raw("a", &Strobe{Epoch: 200, Seq: 2, Row: 2})
	// A straggler from the old controller is ignored.
	c.raw("a", &Strobe{Epoch: 100, Seq: 4, Row: 9})
	c.raw("a", &Strobe{Epoch: 200, Seq: 3, Row: 3})
	st := waitApplied(t, c.f["a"], 200, 3)
	if got := c.sw["a"].Rows(); !reflect.DeepEqual(got, []int{0, 0, 0, 1, 2, 3}) {
		t.Fatalf("rows %v", got)
	}
	if st.Epochs != 1 || st.Stale != 1 || st.Late != 0 || st.Lost != 0 || st.Applied != 6 ||
		st.FirstSeq != 1 || st.EpochApplied != 3 || !st.Accounted() {
		t.Fatalf("stats %+v", st)
	}
}

func TestFollowerJoinsMidStream(t *testing.T) {
	c := newCluster(t, 1, "a")
	c.raw("a", &Strobe{Epoch: 100, Seq: 5000, Row: 1})
	c.raw("a", &Strobe{Epoch: 100, Seq: 5002, Row: 2})
	st := c.waitSeq("a", 5002)
	// Slices before the first one seen are not losses; 5001 is.
	if st.FirstSeq != 5000 || st.Lost != 1 || st.Applied != 2 || !st.Accounted() {
		t.Fatalf("stats %+v", st)
	}
}

func TestFollowerSetPeersAtBoundary(t *testing.T) {
	c := newCluster(t, 1, "a", "b", "c")
	c.f["a"].SetPeers([]string{"b"})
	c.raw("a", &Strobe{Epoch: 100, Seq: 1})
	c.waitSeq("a", 1)
	c.f["a"].SetPeers([]string{"c"})
	if st := c.f["a"].Stats(); st.HeartbeatsSent != 2 {
		t.Fatalf("a sent %d heartbeats for slice 1, want 2 (controller, b)", st.HeartbeatsSent)
	}
	// Mid-slice: nothing goes to c until the next strobe. A barrier (a
	// packet c counts as malformed) arrives after anything a sent before.
	if err := c.ctl.Send("c", []byte("barrier")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "c to see the barrier", func() bool { return c.f["c"].Stats().Malformed == 1 })
	if st := c.f["c"].Stats(); st.HeartbeatsReceived != 0 {
		t.Fatalf("c heard %d heartbeats before the boundary", st.HeartbeatsReceived)
	}
	c.raw("a", &Strobe{Epoch: 100, Seq: 2})
	c.waitSeq("a", 2)
	eventually(t, "c to hear a", func() bool { return c.f["c"].Stats().Peers["a"].Seq == 2 })
	if st := c.f["a"].Stats(); st.HeartbeatsSent != 4 {
		t.Fatalf("a sent %d heartbeats, want 4", st.HeartbeatsSent)
	}
	// b heard slice 1 only; c heard slice 2 only.
	bst, cst := c.f["b"].Stats(), c.f["c"].Stats()
	if bst.Peers["a"] != (PeerHeartbeat{Epoch: 100, Seq: 1, Addr: "a", Count: 1}) || cst.Peers["a"].Count != 1 {
		t.Fatalf("b heard %+v, c heard %+v", bst.Peers["a"], cst.Peers["a"])
	}
}

func TestFollowerDropsBadPackets(t *testing.T) {
	c := newCluster(t, 1, "a")
	c.raw("a", &Strobe{Epoch: 100, Seq: 1, Row: 4})
	c.waitSeq("a", 1)
	bad := [][]byte{
		nil,
		[]byte("not msgpack"),
		{0x93, 0x01}, // truncated envelope
		envelope(t, 9, 1, map[string]any{"e": 100, "s": 2}),  // future version
		envelope(t, 1, 42, map[string]any{"e": 100, "s": 2}), // unknown type
		envelope(t, 1, 3, map[string]any{"n": "x"}),          // membership metadata (package member): not for this socket
	}
	for _, b := range bad {
		if err := c.ctl.Send("a", b); err != nil {
			t.Fatal(err)
		}
	}
	c.raw("a", &Strobe{Epoch: 100, Seq: 2, Row: 5})
	st := c.waitSeq("a", 2)
	if st.Malformed != 3 || st.Unknown != 3 || st.Applied != 2 || st.Late != 0 {
		t.Fatalf("stats %+v", st)
	}
	if got := c.sw["a"].Rows(); !reflect.DeepEqual(got, []int{4, 5}) {
		t.Fatalf("rows %v", got)
	}
}

func TestFollowerHeartbeatCallback(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	tr := n.Transport("a")
	defer tr.Close()
	got := make(chan Heartbeat, 1)
	f := NewFollower(FollowerConfig{Name: "a", Transport: tr, Switch: func(int) time.Duration { return 0 },
		Heartbeat: func(hb Heartbeat, recv int64) { got <- hb }})
	runFollower(t, f)
	peer := n.Transport("b")
	defer peer.Close()
	want := Heartbeat{From: "b", Epoch: 1, Seq: 9, Lost: 2, Data: []byte("relay data")}
	if err := peer.Send("a", mustMarshal(t, &want)); err != nil {
		t.Fatal(err)
	}
	if hb := <-got; !reflect.DeepEqual(hb, want) {
		t.Fatalf("callback got %+v, want %+v", hb, want)
	}
	if st := f.Stats(); st.HeartbeatsReceived != 1 || st.Peers["b"].Seq != 9 {
		t.Fatalf("stats %+v", st)
	}
}

// Whatever the network does, the follower applies slices in increasing
// order and accounts for every one; and a seed reproduces the run.
func TestFollowerUnderRandomFaults(t *testing.T) {
	run := func(seed uint64) (rows []int, st Stats, ms MockStats) {
		// A subtest, so that each run's cluster is torn down before the next.
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { rows, st, ms = faultRun(t, seed) })
		return rows, st, ms
	}
	r1, s1, m1 := run(5)
	r2, s2, m2 := run(5)
	t.Logf("seed 5: applied %d, lost %d, late %d; network %+v", s1.Applied, s1.Lost, s1.Late, m1)
	if !reflect.DeepEqual(r1, r2) || s1.Lost != s2.Lost || s1.Late != s2.Late || m1 != m2 {
		t.Fatalf("same seed, different runs: %+v / %+v", s1, s2)
	}
	if s1.Lost == 0 || s1.Late == 0 {
		t.Fatalf("faults did not reach the follower: %+v", s1)
	}
}

func faultRun(t *testing.T, seed uint64) ([]int, Stats, MockStats) {
	c := newCluster(t, seed, "a")
	c.net.SetLinkFaults("ctl", "a", Faults{Loss: 0.15, Duplicate: 0.1, Reorder: 0.1})
	const n = 400
	for seq := uint64(1); seq <= n; seq++ {
		c.strobe(seq, int(seq))
	}
	c.net.Flush()
	c.net.SetLinkFaults("ctl", "a", Faults{})
	c.strobe(n+1, n+1)
	st := c.waitSeq("a", n+1)
	rows := c.sw["a"].Rows()
	if !slices.IsSorted(rows) || len(slices.Compact(slices.Clone(rows))) != len(rows) {
		t.Fatalf("rows not strictly increasing: %v", rows)
	}
	// Slices before the first one received are not counted lost (the
	// follower cannot tell a late joiner from a lost first strobe).
	if !st.Accounted() || st.Applied+st.Lost+st.FirstSeq-1 != n+1 || st.Applied != uint64(len(rows)) {
		t.Fatalf("stats %+v: applied + lost ≠ %d", st, n+1)
	}
	ms := c.net.Stats()
	if st.Late > ms.Duplicated+ms.Reordered {
		t.Fatalf("follower %+v saw more late strobes than the network %+v made", st, ms)
	}
	return rows, st, ms
}

func TestFollowerRunExits(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	noop := func(int) time.Duration { return 0 }

	// On cancel.
	tr := n.Transport("a")
	f := NewFollower(FollowerConfig{Name: "a", Transport: tr, Switch: noop})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	eventually(t, "Run to start", f.active.Load)
	if err := f.Run(ctx); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("second concurrent Run = %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v", err)
	}
	tr.Close()

	// On transport close.
	tr = n.Transport("b")
	f = NewFollower(FollowerConfig{Name: "b", Transport: tr, Switch: noop})
	go func() { done <- f.Run(context.Background()) }()
	eventually(t, "Run to start", f.active.Load)
	tr.Close()
	if err := <-done; err != nil {
		t.Fatalf("Run after Close = %v", err)
	}

	// A bad config is reported by Run, every problem at once.
	err := NewFollower(FollowerConfig{History: -1}).Run(context.Background())
	for _, want := range []string{"strobe: follower config", "Name", "Transport", "Switch", "History"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("config error %v does not mention %q", err, want)
		}
	}
}

func TestFollowerHistoryIsBounded(t *testing.T) {
	checkLeaks(t)
	n := NewMockNetwork(1)
	tr, ctl := n.Transport("a"), n.Transport("ctl")
	defer tr.Close()
	defer ctl.Close()
	f := NewFollower(FollowerConfig{Name: "a", Transport: tr, Switch: func(int) time.Duration { return 0 }, History: 8})
	runFollower(t, f)
	s := NewSender(ctl, 1, nil)
	for seq := uint64(1); seq <= 20; seq++ {
		if _, err := s.Strobe([]string{"a"}, seq, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "slice 20", func() bool { return f.Stats().LastSeq == 20 })
	recs := f.Records()
	if len(recs) != 8 || recs[0].Seq != 13 || recs[7].Seq != 20 {
		t.Fatalf("records %v", recs)
	}
	if st := f.Stats(); st.Latency.N != 8 || st.Applied != 20 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFollowerHeartbeatSocket: with a heartbeat socket of its own, a
// follower sends its heartbeats from it to the peers (never to the strobe
// source), receives the peers' there, and refuses strobes on it.
func TestFollowerHeartbeatSocket(t *testing.T) {
	checkLeaks(t)
	nw := NewMockNetwork(7)
	ctl := nw.Transport("ctl")
	t.Cleanup(func() { ctl.Close() })
	send := NewSender(ctl, 100, zaptest.NewLogger(t))
	names := []string{"a", "b", "c"}
	var hbAddrs []string
	for _, n := range names {
		hbAddrs = append(hbAddrs, n+".hb")
	}
	fs := map[string]*Follower{}
	sws := map[string]*switchLog{}
	var dataMu sync.Mutex
	data := map[string][]string{} // heartbeat data each follower received
	for _, n := range names {
		tr, hb := nw.Transport(n), nw.Transport(n+".hb")
		t.Cleanup(func() { tr.Close(); hb.Close() })
		sw := &switchLog{}
		var applied []uint64 // nSlices Applied saw; HeartbeatData must come after
		f := NewFollower(FollowerConfig{Name: n, Transport: tr, Heartbeats: hb, Switch: sw.Switch, Log: zaptest.NewLogger(t),
			Applied: func(r SliceRecord) {
				dataMu.Lock()
				applied = append(applied, r.Seq)
				dataMu.Unlock()
			},
			HeartbeatData: func(epoch, seq uint64) []byte {
				dataMu.Lock()
				defer dataMu.Unlock()
				if !slices.Contains(applied, seq) {
					return []byte("before Applied")
				}
				return fmt.Appendf(nil, "%s/%d/%d", n, epoch, seq)
			},
			Heartbeat: func(hb Heartbeat, _ int64) {
				dataMu.Lock()
				data[n] = append(data[n], string(hb.Data))
				dataMu.Unlock()
			}})
		f.SetPeers(hbAddrs) // its own heartbeat address is skipped
		runFollower(t, f)
		fs[n], sws[n] = f, sw
	}
	const nSlices = 5
	for seq := uint64(1); seq <= nSlices; seq++ {
		if _, err := send.Strobe(names, seq, int(seq%2), 1, 0); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			waitApplied(t, fs[n], 100, seq)
		}
	}
	for _, n := range names {
		f := fs[n]
		eventually(t, n+" to send and receive every heartbeat", func() bool {
			st := f.Stats()
			return st.HeartbeatsSent == 2*nSlices && st.HeartbeatsReceived == 2*nSlices
		})
		st := f.Stats()
		for _, peer := range names {
			ph, ok := st.Peers[peer]
			if peer == n {
				if ok {
					t.Fatalf("%s heard itself: %+v", n, ph)
				}
				continue
			}
			if !ok || ph.Seq != nSlices || ph.Addr != peer+".hb" {
				t.Fatalf("%s: heartbeat of %s: %+v (present %v)", n, peer, ph, ok)
			}
		}
	}
	// Every heartbeat carried its sender's data for its slice.
	dataMu.Lock()
	for _, n := range names {
		got := slices.Clone(data[n])
		slices.Sort(got)
		var want []string
		for _, peer := range names {
			for seq := 1; seq <= nSlices; seq++ {
				if peer != n {
					want = append(want, fmt.Sprintf("%s/100/%d", peer, seq))
				}
			}
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s received heartbeat data %q, want %q", n, got, want)
		}
	}
	dataMu.Unlock()
	// The strobe source got no heartbeat: the datagrams went to peers only.
	select {
	case p := <-ctl.Packets():
		t.Fatalf("the controller's socket got a packet from %s", p.From)
	case <-time.After(50 * time.Millisecond):
	}
	// A strobe on the heartbeat socket switches nothing.
	before := fs["a"].Stats()
	if _, err := send.Strobe([]string{"a.hb"}, nSlices+1, 0, 1, 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stray strobe to be counted", func() bool { return fs["a"].Stats().Unknown == before.Unknown+1 })
	if st := fs["a"].Stats(); st.Applied != before.Applied || len(sws["a"].Rows()) != nSlices {
		t.Fatalf("a strobe on the heartbeat socket was applied: %+v, rows %v", st, sws["a"].Rows())
	}
}

// Stats never shows a slice before its switch is done and counted: a
// reader who sees LastSeq N sees Applied and the epoch's counts account
// for it. TestMulticastStrobesRealtimeRefused once read LastSeq 2 with
// Applied 1 in the gap between the two.
func TestStatsShowASliceOnlyOnceSwitched(t *testing.T) {
	checkLeaks(t)
	net := NewMockNetwork(1)
	ctl, tr := net.Transport("ctl"), net.Transport("a")
	t.Cleanup(func() { ctl.Close(); tr.Close() })
	entered, release := make(chan int, 4), make(chan struct{})
	sw := func(row int) time.Duration {
		entered <- row
		<-release
		return 0
	}
	f := NewFollower(FollowerConfig{Name: "a", Transport: tr, Switch: sw, Log: zaptest.NewLogger(t)})
	runFollower(t, f)
	t.Cleanup(func() { close(release) }) // before Run is stopped: a failed check leaves no switch blocked
	s := NewSender(ctl, 100, zaptest.NewLogger(t))
	for seq := uint64(1); seq <= 3; seq++ {
		if seq == 3 { // slice 2 lost: the row is kept through it
			continue
		}
		if _, err := s.Strobe([]string{"a"}, seq, int(seq), 1, 0); err != nil {
			t.Fatal(err)
		}
		<-entered // the switch to row seq is under way
		st := f.Stats()
		if st.LastSeq != seq-1 || st.Applied != seq-1 || !st.Accounted() {
			t.Fatalf("during slice %d's switch: LastSeq %d Applied %d Accounted %v", seq, st.LastSeq, st.Applied, st.Accounted())
		}
		release <- struct{}{}
		eventually(t, fmt.Sprintf("slice %d shown", seq), func() bool { return f.Stats().LastSeq == seq })
		if st := f.Stats(); st.Applied != seq || !st.Accounted() {
			t.Fatalf("after slice %d: %+v", seq, st)
		}
	}
	if _, err := s.Strobe([]string{"a"}, 4, 4, 1, 0); err != nil {
		t.Fatal(err)
	}
	<-entered
	if st := f.Stats(); st.LastSeq != 2 || st.Lost != 0 || !st.Accounted() {
		t.Fatalf("during slice 4's switch (3 lost): %+v", st)
	}
	release <- struct{}{}
	eventually(t, "slice 4 shown", func() bool { return f.Stats().LastSeq == 4 })
	if st := f.Stats(); st.Applied != 3 || st.Lost != 1 || !st.Accounted() {
		t.Fatalf("after slice 4: %+v", st)
	}
}
