package strobe

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/comm/relay/barrier"
)

// The BCS barrier at scale: one job with a rank on every agent, every
// rank arriving at barrier 1 during one slice, on the scale simulation's
// network with heartbeats delivered. The agents' Followers are the real
// ones; the barrier counting is comm/relay/barrier, which the relays run.
// Each node's heartbeat carries its cumulative arrivals until its rank is
// released, then the release (the relays' Released).
//
//   - barrierAll, the design before: every node heartbeats every other
//     node of the job, counts every node's reports and releases its own
//     rank when they add up;
//   - barrierRoot, the relays' design now (the rooted exchange): the
//     nodes heartbeat the job's root (its first node) only; the root
//     counts, sends the release to every other node at once as a relay
//     frame (TCP: never lost), and each slice, once every node has
//     reported or a quarter slice after its switch, sends each node the
//     job's sliceReady frame.
type barrierDesign int

const (
	barrierAll barrierDesign = iota
	barrierRoot
)

func (d barrierDesign) String() string {
	if d == barrierRoot {
		return "barrier-root"
	}
	return "barrier-all"
}

// simBarrierLoad is the size of a heartbeat's data while its node's rank
// waits in a barrier (comm/relay's load: node name, one barrier entry,
// one blocked rank, msgpack keys).
const simBarrierLoad = 48

// simArriveSlice is the slice in which every rank arrives.
const simArriveSlice = 3

// barrierResult is one barrier's outcome.
type barrierResult struct {
	slices    int           // slice of the last release minus the arrivals' slice: 1 = in the slice after the strobe that follows the last arrival
	afterStrb time.Duration // from that strobe's send to the last release
	hbPerNode float64       // heartbeat datagrams per node per slice
	frames    uint64        // relay frames (the root's releases and sliceReady frames)
	counted   int           // nodes that counted reports
	ran       int           // slices simulated
}

// simBarrier runs one barrier of a job spanning n agents, strobed along a
// tree of arity fanout, and returns when every rank is released (or
// after 20 slices).
func simBarrier(n, fanout int, design barrierDesign, loss float64, seed uint64) barrierResult {
	c := simSetup(n, fanout, loss, seed)
	c.net.deliverHeartbeats = true
	rng := rand.New(rand.NewPCG(seed, 77))
	slice := int64(simSlice)
	arrive := make([]int64, n)   // virtual time of each rank's arrival
	released := make([]int64, n) // when each rank was released (0: not yet)
	counters := map[int]*barrier.Counter{}
	index := map[string]int{}
	for i := range n {
		index[fmt.Sprintf("n%04d", i)] = i
		// Arrivals spread over the slice, clear of the strobes' fan-out.
		arrive[i] = (simArriveSlice-1)*slice + int64(time.Millisecond) + rng.Int64N(slice-2*int64(time.Millisecond))
		if design == barrierAll || i == 0 {
			counters[i] = barrier.NewCounter(n)
		}
	}
	var release func(i int)
	release = func(i int) {
		if released[i] != 0 {
			return
		}
		released[i] = c.net.now
		if design == barrierRoot && i == 0 {
			for k := 1; k < n; k++ {
				c.nodes[0].frame(c.targets[k], func() { release(k) })
			}
		}
	}
	// The rooted exchange: heartbeats to the root only, and the root's
	// sliceReady to every node once all have reported for a slice, or a
	// quarter slice after its own switch.
	reported := map[uint64]int{}
	readySent := map[uint64]bool{}
	ready := func(seq uint64) {
		if readySent[seq] {
			return
		}
		readySent[seq] = true
		for k := 1; k < n; k++ {
			c.nodes[0].frame(c.targets[k], func() {})
		}
	}
	if design == barrierRoot {
		c.nodes[0].follower.SetPeers(nil)
		for i := 1; i < n; i++ {
			c.nodes[i].follower.SetPeers(c.targets[:1])
		}
		c.nodes[0].follower.cfg.Applied = func(r SliceRecord) {
			c.lastSeq[0] = r.Seq
			c.net.after(c.net.now+slice/4, func() { ready(r.Seq) })
		}
	}
	report := func(at, from int) {
		if ct := counters[at]; ct != nil && ct.Report(fmt.Sprint(from), 1, 1) {
			ct.Release(1)
			release(at)
		}
	}
	// A heartbeat's data: the node's arrival (first byte 1) until its rank
	// is released, then the release (2), which a node that missed some
	// reports releases from (the relays' Released).
	arrived, done := randomData(simBarrierLoad), randomData(simBarrierLoad)
	arrived[0], done[0] = 1, 2
	for i, nd := range c.nodes {
		nd.follower.cfg.HeartbeatData = func(uint64, uint64) []byte {
			// The cut is the switch just made: an arrival before it is
			// reported, and counted here if this node counts.
			switch {
			case released[i] != 0:
				return done
			case arrive[i] > c.switched[i]:
				return nil
			}
			report(i, i)
			return arrived
		}
		nd.follower.cfg.Heartbeat = func(hb Heartbeat, _ int64) {
			switch { // the report first: a completed barrier's release goes before the sliceReady frames, as in the relay
			case len(hb.Data) == 0:
			case hb.Data[0] == 2:
				release(i)
			default:
				report(i, index[hb.From])
			}
			if design == barrierRoot && i == 0 {
				if reported[hb.Seq]++; reported[hb.Seq] == n-1 {
					ready(hb.Seq)
				}
			}
		}
	}
	seq := uint64(0)
	for seq < simArriveSlice+20 && slices.Contains(released, 0) {
		seq++
		c.slice(seq)
	}
	last := slices.Max(released)
	if slices.Contains(released, 0) {
		last = int64(seq) * slice
	}
	hb := c.net.counts[TypeHeartbeat]
	return barrierResult{
		slices:    int(last/slice) + 1 - simArriveSlice,
		afterStrb: time.Duration(last - simArriveSlice*slice),
		hbPerNode: float64(hb.packets) / float64(seq) / float64(n),
		frames:    c.net.frames,
		counted:   len(counters),
		ran:       int(seq),
	}
}

// benchBarrier reports, over b.N barriers of a job of n ranks:
// barrier-slices, the slices from the one the ranks arrived in to the one
// the last rank was released in (1: at the strobe after the last
// arrival; the goal); barrier-ms, from that strobe's send to the last
// release; hb-pkts/node per slice (including one to the strobe's source,
// the tree parent: the simulation's Followers use one socket);
// relay-frames/slice, the root's sliceReady and release frames (TCP).
func benchBarrier(b *testing.B, n, fanout int, design barrierDesign, loss float64) {
	var sl, worst int
	var ms float64
	var hb float64
	var frames float64
	for i := range b.N {
		r := simBarrier(n, fanout, design, loss, uint64(i+1))
		sl += r.slices
		worst = max(worst, r.slices)
		ms += r.afterStrb.Seconds() * 1e3
		hb += r.hbPerNode
		frames += float64(r.frames) / float64(r.ran)
	}
	runs := float64(b.N)
	b.ReportMetric(float64(sl)/runs, "barrier-slices")
	b.ReportMetric(float64(worst), "barrier-slices-max")
	b.ReportMetric(ms/runs, "barrier-ms")
	b.ReportMetric(hb/runs, "hb-pkts/node")
	b.ReportMetric(frames/runs, "relay-frames/slice")
}

// TestSimBarrier: on a perfect network both designs release every rank
// of a 128-rank job in the slice after its last arrival; only the root
// counts in the root design, and it sends n−1 releases. With loss, the
// root design is never later than counting everywhere: every node must
// have every report there, one node (the root) here.
func TestSimBarrier(t *testing.T) {
	const n = 128
	for _, d := range []barrierDesign{barrierAll, barrierRoot} {
		r := simBarrier(n, 8, d, 0, 1)
		if r.slices != 1 {
			t.Fatalf("%v: released %d slices after the arrivals (%v after the strobe), want 1", d, r.slices, r.afterStrb)
		}
		wantCounted, wantHB := n, float64(n-1)
		if d == barrierRoot {
			wantCounted, wantHB = 1, float64(n-1)/n // the root sends none
		}
		// Plus, for the first level of the tree, one to the controller.
		if r.counted != wantCounted || r.hbPerNode < wantHB || r.hbPerNode > wantHB+1 {
			t.Fatalf("%v: %d nodes counted, %.2f heartbeats per node and slice; want %d, %.2f (+ the controller's)", d, r.counted, r.hbPerNode, wantCounted, wantHB)
		}
		if d == barrierRoot && r.frames != uint64((r.slices+simArriveSlice+1)*(n-1)) {
			t.Fatalf("%v: %d frames from the root over %d slices, want a sliceReady per node and slice and one release each", d, r.frames, r.slices+simArriveSlice)
		}
		t.Logf("%v: every rank released %v after the strobe that followed the last arrival", d, r.afterStrb)
	}
	for seed := uint64(1); seed <= 2; seed++ {
		all, root := simBarrier(n, 8, barrierAll, 0.02, seed), simBarrier(n, 8, barrierRoot, 0.02, seed)
		if root.slices > all.slices {
			t.Fatalf("2%% loss, seed %d: root design released in slice +%d, counting everywhere +%d", seed, root.slices, all.slices)
		}
		if all.slices > 20 || root.slices > 20 {
			t.Fatalf("2%% loss, seed %d: not released in 20 slices", seed)
		}
		t.Logf("2%% loss, seed %d: all +%d slices, root +%d", seed, all.slices, root.slices)
	}
}
