package strobe

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// The scale simulation: the real Sender and Followers on simNetwork's
// virtual clock. Figures are simulated time, so they do not depend on
// the machine running the benchmark.
const (
	simLatency  = 100 * time.Microsecond // one-way, as the goal
	simSendCost = 3 * time.Microsecond   // one small sendto on Linux: syscall + stack (2–5 µs measured on commodity hosts)
	simSlice    = 10 * time.Millisecond
)

// simCluster is n followers and a sender on one simNetwork.
type simCluster struct {
	net      *simNetwork
	sender   *Sender
	targets  []string
	nodes    []*simNode
	switched []int64 // per node: virtual time of its last switch
	lastSeq  []uint64
}

// simSetup builds a cluster of n agents whose heartbeats go all-to-all
// (today's design), strobed directly (fanout 0) or along a k-ary tree.
func simSetup(n, fanout int, loss float64, seed uint64) *simCluster {
	return simSetupData(n, fanout, loss, seed, 0, 0, false)
}

// simBCSBytesPerPeer is the size of BCS's per-slice control data per
// destination node in a heartbeat (comm/relay's load: a flow entry).
const simBCSBytesPerPeer = 30

// simSetupData is simSetup with heartbeats carrying dataBytes of data
// (BCS's control data), split across packets when it does not fit. With
// jobSize > 0 the agents run jobs of jobSize agents each (consecutive
// agents) and heartbeat as the agents do now: to the agents of their job
// and to the controller (the strobe's source), not to everyone; rooted,
// only to their job's first agent (the rooted exchange: the root answers
// with relay frames, not modelled here).
func simSetupData(n, fanout int, loss float64, seed uint64, dataBytes, jobSize int, rooted bool) *simCluster {
	c := &simCluster{net: newSimNetwork(seed, simLatency, simSendCost, loss),
		switched: make([]int64, n), lastSeq: make([]uint64, n)}
	ctl := c.net.node("ctl")
	c.sender = NewSender(ctl, 1, nil)
	c.sender.SetFanout(fanout)
	for i := range n {
		c.targets = append(c.targets, fmt.Sprintf("10.0.%d.%d:7947", i/256, i%256))
	}
	for i, addr := range c.targets {
		nd := c.net.node(addr)
		i := i
		nd.follower = NewFollower(FollowerConfig{Name: fmt.Sprintf("n%04d", i), Transport: nd,
			Switch:  func(int) time.Duration { c.switched[i] = c.net.now; return 0 },
			Applied: func(r SliceRecord) { c.lastSeq[i] = r.Seq }})
		if dataBytes > 0 {
			data := randomData(dataBytes)
			nd.follower.cfg.HeartbeatData = func(uint64, uint64) []byte { return data }
		}
		switch first := i / max(jobSize, 1) * jobSize; {
		case jobSize > 0 && rooted:
			nd.follower.SetPeers(c.targets[first : first+1]) // the root: SetPeers drops the node itself
		case jobSize > 0:
			nd.follower.SetPeers(c.targets[first:min(first+jobSize, n)]) // SetPeers drops the node itself
		default:
			nd.follower.SetPeers(c.targets) // all-to-all heartbeats
		}
		c.nodes = append(c.nodes, nd)
	}
	return c
}

// slice strobes slice seq and runs the network to the next boundary. It
// returns the time from the send to the last live node's switch and how
// many live nodes did not apply the slice.
func (c *simCluster) slice(seq uint64) (fanout time.Duration, missed int) {
	start := c.net.now
	if _, err := c.sender.Strobe(c.targets, seq, 0, 1, 0); err != nil {
		panic(err)
	}
	c.net.run(start + int64(simSlice))
	var last int64
	for i, nd := range c.nodes {
		switch {
		case nd.dead:
		case c.lastSeq[i] != seq:
			missed++
		default:
			last = max(last, c.switched[i]-start)
		}
	}
	return time.Duration(last), missed
}

// BenchmarkScale reports, per slice at 10 ms slices with 100 µs one-way
// latency: fanout-µs, the simulated time from the controller's send to
// the last agent's switch; hb-pkts/node and hb-bytes/node, the heartbeat
// datagrams and bytes each node sends; strobe-pkts/slice, every strobe
// datagram sent (controller and forwarding agents). direct is today's
// design (the baseline), tree-kK the k-ary fan-out; loss=1% drops one
// datagram in a hundred on every link (missed/slice: agents that did not
// apply the slice, each counted Lost and caught up at the next); bcs
// adds 30 bytes of control data per destination to every heartbeat, split
// into parts above a packet: bcs-all heartbeats every agent (the design
// before issue 17), bcs-jobs16 only the 15 others of a 16-agent job and
// the controller (the design before the rooted exchange), bcs-rooted16
// only the job's root and the controller (the agents' design now: the
// root's 15 sliceReady frames a slice are not counted here, see
// barrier-root); barrier-all and barrier-root
// time one BCS barrier of a job with a rank on every agent
// (scale_barrier_test.go: barrier-all counts at every node, the design
// before, barrier-root at the job's root, the relays' design now).
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		for _, k := range []int{0, 8, 16} {
			name := "direct"
			if k > 0 {
				name = fmt.Sprintf("tree-k%d", k)
			}
			for _, loss := range []float64{0, 0.01} {
				if loss > 0 && n != 1024 {
					continue
				}
				sub := fmt.Sprintf("n=%d/%s", n, name)
				if loss > 0 {
					sub += "/loss=1%"
				}
				b.Run(sub, func(b *testing.B) { benchScale(b, n, k, loss, 0, 0, false) })
			}
		}
		b.Run(fmt.Sprintf("n=%d/direct/bcs-all", n), func(b *testing.B) { benchScale(b, n, 0, 0, simBCSBytesPerPeer*n, 0, false) })
		b.Run(fmt.Sprintf("n=%d/direct/bcs-jobs16", n), func(b *testing.B) { benchScale(b, n, 0, 0, simBCSBytesPerPeer*16, 16, false) })
		b.Run(fmt.Sprintf("n=%d/direct/bcs-rooted16", n), func(b *testing.B) { benchScale(b, n, 0, 0, simBCSBytesPerPeer*16, 16, true) })
		for _, d := range []barrierDesign{barrierAll, barrierRoot} {
			for _, loss := range []float64{0, 0.01} {
				if loss > 0 && n != 1024 {
					continue
				}
				sub := fmt.Sprintf("n=%d/tree-k8/%v", n, d)
				if loss > 0 {
					sub += "/loss=1%"
				}
				b.Run(sub, func(b *testing.B) { benchBarrier(b, n, 8, d, loss) })
			}
		}
	}
}

// benchScale runs b.N slices of a simulated cluster of n agents.
func benchScale(b *testing.B, n, k int, loss float64, dataBytes, jobSize int, rooted bool) {
	c := simSetupData(n, k, loss, 1, dataBytes, jobSize, rooted)
	var worst time.Duration
	var sum int64
	var missed int
	b.ResetTimer()
	for i := range b.N {
		f, m := c.slice(uint64(i + 1))
		worst = max(worst, f)
		sum += int64(f)
		missed += m
	}
	slices := float64(b.N)
	hb, st := c.net.counts[TypeHeartbeat], c.net.counts[TypeStrobe]
	b.ReportMetric(float64(sum)/slices/1e3, "fanout-µs")
	b.ReportMetric(float64(worst)/1e3, "fanout-max-µs")
	b.ReportMetric(float64(hb.packets)/slices/float64(n), "hb-pkts/node")
	b.ReportMetric(float64(hb.bytes)/slices/float64(n), "hb-bytes/node")
	b.ReportMetric(float64(st.packets)/slices, "strobe-pkts/slice")
	b.ReportMetric(float64(missed)/slices, "missed/slice")
}

// TestSimFanoutReachesEveryone checks the simulation itself on today's
// design: every node applies every slice on a perfect network, and the
// last switch comes after n back-to-back sends plus the latency.
func TestSimFanoutReachesEveryone(t *testing.T) {
	c := simSetup(64, 0, 0, 1)
	for seq := uint64(1); seq <= 5; seq++ {
		f, missed := c.slice(seq)
		if missed != 0 {
			t.Fatalf("slice %d: %d nodes missed it", seq, missed)
		}
		if want := 64*simSendCost + simLatency; f != want {
			t.Fatalf("slice %d: fan-out %v, want %v (64 sends + latency)", seq, f, want)
		}
	}
	if got := slices.Max(c.lastSeq); got != 5 {
		t.Fatalf("last seq %d", got)
	}
}

// TestSimTreeReachesEveryone: along the tree every node applies every
// slice, sooner than with direct sends, and the controller sends only k
// datagrams.
func TestSimTreeReachesEveryone(t *testing.T) {
	direct, tree := simSetup(300, 0, 0, 1), simSetup(300, 4, 0, 1)
	for seq := uint64(1); seq <= 5; seq++ {
		fd, _ := direct.slice(seq)
		ft, missed := tree.slice(seq)
		if missed != 0 {
			t.Fatalf("slice %d: %d nodes missed it", seq, missed)
		}
		if ft >= fd {
			t.Fatalf("slice %d: tree fan-out %v, direct %v", seq, ft, fd)
		}
	}
	if st := tree.net.counts[TypeStrobe]; st.packets != 5*300 {
		t.Fatalf("%d strobe datagrams for 5 slices of 300 nodes", st.packets)
	}
	var fwd uint64
	for _, nd := range tree.nodes {
		fwd += nd.follower.Stats().Forwarded
	}
	if fwd != 5*(300-4) {
		t.Fatalf("agents forwarded %d datagrams, want %d", fwd, 5*(300-4))
	}
}

// TestSimTreeDeadInnerNode: a dead agent, until membership drops it, is
// an inner node now and then; its subtree of the moment loses that slice
// (counted Lost, applied at the next), never two slices running.
func TestSimTreeDeadInnerNode(t *testing.T) {
	const n, slicesRun = 64, 200
	c := simSetup(n, 4, 0, 1)
	c.nodes[10].dead = true
	missedBy := make([]int, n)
	prev := make([]bool, n)
	totalMissed := 0
	for seq := uint64(1); seq <= slicesRun; seq++ {
		c.slice(seq)
		for i, nd := range c.nodes {
			if nd.dead {
				continue
			}
			missed := c.lastSeq[i] != seq
			if missed && prev[i] {
				t.Fatalf("node %d missed slices %d and %d", i, seq-1, seq)
			}
			if missed {
				missedBy[i]++
				totalMissed++
			}
			prev[i] = missed
		}
	}
	if totalMissed == 0 {
		t.Fatal("a dead inner node cost nobody a slice: is it ever an inner node?")
	}
	for i, nd := range c.nodes {
		if nd.dead {
			continue
		}
		if st := nd.follower.Stats(); !st.Accounted() || st.LastSeq < slicesRun-1 || st.Lost > slicesRun/10 {
			t.Fatalf("node %d: applied %d, lost %d, last %d of %d slices", i, st.Applied, st.Lost, st.LastSeq, slicesRun)
		}
	}
	t.Logf("%d agents, k=4, one dead: %d slice-misses over %d slices (%.2f%% of strobes)",
		n-1, totalMissed, slicesRun, 100*float64(totalMissed)/float64((n-1)*slicesRun))
}

// TestSimHeartbeatsSizedByJobs: heartbeating only the agents of one's job
// and the controller, an agent sends jobSize datagrams a slice whatever
// the cluster's size; heartbeating everyone with BCS data for everyone,
// the heartbeat no longer fits a packet at 512 agents and goes in parts.
func TestSimHeartbeatsSizedByJobs(t *testing.T) {
	const n = 512
	scoped := simSetupData(n, 0, 0, 1, simBCSBytesPerPeer*16, 16, false)
	all := simSetupData(n, 0, 0, 1, simBCSBytesPerPeer*n, 0, false)
	rooted := simSetupData(n, 0, 0, 1, simBCSBytesPerPeer*16, 16, true)
	rooted.slice(1)
	// 15 of 16 agents heartbeat their root and the controller, roots the controller.
	if got, want := rooted.net.counts[TypeHeartbeat].packets, uint64(n/16*(15*2+1)); got != want {
		t.Fatalf("rooted: %d heartbeat datagrams in a slice, want %d", got, want)
	}
	if _, missed := scoped.slice(1); missed != 0 {
		t.Fatalf("scoped: %d missed", missed)
	}
	all.slice(1)
	if got := scoped.net.counts[TypeHeartbeat].packets; got != n*16 {
		t.Fatalf("scoped: %d heartbeat datagrams in a slice, want %d (15 job peers + the controller each)", got, n*16)
	}
	parts := (simBCSBytesPerPeer*n + heartbeatPiece - 1) / heartbeatPiece
	if got := all.net.counts[TypeHeartbeat].packets; parts < 2 || got != uint64(n*n*parts) {
		t.Fatalf("all-to-all: %d heartbeat datagrams in a slice, want %d (%d parts to each of %d)", got, n*n*parts, parts, n)
	}
}

// TestSimLivenessPeriod: with a liveness period of 8 slices, the
// controller's agent hears each agent on one slice in 8, spread over the
// slices by the agents' names, instead of every agent every slice; a
// liveness peer that is also a job peer hears every heartbeat.
func TestSimLivenessPeriod(t *testing.T) {
	const n, every, slicesRun = 256, 8, 80
	c := simSetup(n, 0, 0, 1)
	ctl := c.targets[0] // the controller's agent
	for i, nd := range c.nodes {
		nd.follower.SetPeers(nil)
		if i == 1 {
			nd.follower.SetPeers([]string{ctl}) // shares a job rooted at the controller's agent
		}
		nd.follower.SetLivenessPeers([]string{ctl}, every)
	}
	perSlice := make([]uint64, 0, slicesRun)
	for seq := uint64(1); seq <= slicesRun; seq++ {
		before := c.net.hbTo[ctl]
		c.slice(seq)
		perSlice = append(perSlice, c.net.hbTo[ctl]-before)
	}
	if got, want := c.net.hbTo[ctl], uint64((n-2)*slicesRun/every+slicesRun); got != want {
		t.Fatalf("the controller's agent heard %d heartbeats in %d slices, want %d ((n−2)/%d a slice and node 1's every one)", got, slicesRun, want, every)
	}
	if m := slices.Max(perSlice); m > (n-2)/every*2+1 {
		t.Fatalf("liveness bunched: %d heartbeats in one slice (%v)", m, perSlice[:every])
	}
	t.Logf("heartbeats a slice at the controller's agent, first period: %v", perSlice[:every])
}
