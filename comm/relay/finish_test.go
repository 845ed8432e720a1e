package relay

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/comm"
)

// bcsNodes are buffered relays driven as agents drive them: at each
// strobe every relay cuts the slice and heartbeats the nodes that
// HeartbeatNodes named before the cut (an agent's heartbeat peers take
// effect at the next strobe), and no transfer goes at a timeout.
type bcsNodes []*Relay

func newBCSNodes(t *testing.T, names ...string) bcsNodes {
	var rs bcsNodes
	for _, n := range names {
		r := newRelay(t, n, nil)
		r.SetDelivery(Buffered, 40*time.Millisecond, 0)
		r.mu.Lock()
		r.hbTimeout = time.Minute // every transfer waits for the exchange
		r.unlock()
		rs = append(rs, r)
	}
	link(rs...)
	return rs
}

func (rs bcsNodes) node(name string) *Relay {
	for _, r := range rs {
		if r.cfg.Node == name {
			return r
		}
	}
	return nil
}

func (rs bcsNodes) addJob(t *testing.T, id int64, nodes []string) {
	t.Helper()
	for _, r := range rs {
		if slices.Contains(nodes, r.cfg.Node) {
			if err := r.AddJob(id, nodes); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// cut cuts slice seq everywhere and returns where each node's heartbeat
// for it goes.
func (rs bcsNodes) cut(seq uint64) map[string][]string {
	targets := map[string][]string{}
	for _, r := range rs {
		targets[r.cfg.Node] = r.HeartbeatNodes()
	}
	for _, r := range rs {
		r.Cut(1, seq)
	}
	return targets
}

// heartbeatTimeout sets how long node's transfers wait for heartbeats.
func (rs bcsNodes) heartbeatTimeout(node string, d time.Duration) {
	r := rs.node(node)
	r.mu.Lock()
	r.hbTimeout = d
	r.unlock()
}

// heartbeat sends from's heartbeat for seq to targets.
func (rs bcsNodes) heartbeat(from string, seq uint64, targets []string) {
	data := rs.node(from).HeartbeatData(1, seq)
	for _, to := range targets {
		rs.node(to).PeerHeartbeat(from, 1, seq, data)
	}
}

// exchange cuts slice seq and exchanges its heartbeats.
func (rs bcsNodes) exchange(seq uint64) {
	targets := rs.cut(seq)
	for _, r := range rs {
		rs.heartbeat(r.cfg.Node, seq, targets[r.cfg.Node])
	}
}

// strobe exchanges slice seq and waits until every node has transferred
// it (as the next strobe would find them).
func (rs bcsNodes) strobe(t *testing.T, seq uint64) {
	t.Helper()
	rs.exchange(seq)
	eventually(t, fmt.Sprintf("slice %d transferred everywhere", seq), func() bool {
		for _, r := range rs {
			if r.transferred() < seq {
				return false
			}
		}
		return true
	})
}

// announcedAll waits until what was announced to r is what it received,
// want messages of wantBytes bytes.
func announcedAll(t *testing.T, r *Relay, want, wantBytes uint64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := r.Stats()
		if s.ReceivedIn == want && s.ReceivedInBytes == wantBytes && s.AnnouncedIn == want && s.AnnouncedInBytes == wantBytes {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s received %d messages (%d bytes), was announced %d (%d bytes); want %d (%d)",
				r.cfg.Node, s.ReceivedIn, s.ReceivedInBytes, s.AnnouncedIn, s.AnnouncedInBytes, want, wantBytes)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A job's root whose ranks end first (FinishJob) while their last
// messages wait for the next slice stays the job's root until that slice
// is announced and transferred, then leaves it: the messages arrive
// announced (issue 17: one run in five of node's TestBCSBenchmarks had
// one arrive unannounced), and the other node then stops heartbeating it.
func TestBufferedRootFinishingFirstAnnouncesItsLastSlice(t *testing.T) {
	rs := newBCSNodes(t, "n0", "n1")
	nodes := []string{"n0", "n1"} // n0 is the root
	rs.addJob(t, 5, nodes)
	a, b := dialRank(t, rs[0], 5, 0, 2), dialRank(t, rs[1], 5, 1, 2)
	rs.strobe(t, 1)
	a.msg(1, 0, "last")
	eventually(t, "outbox", func() bool { return rs[0].Stats().Outbox == 1 })
	a.send(comm.FrameFinalize, &comm.Finalize{})
	rs[0].FinishJob(5) // n0's ranks ended before the strobe that sends "last"
	if _, why := tryRank(t, rs[0], 5, 0, 2); !strings.Contains(why, "job 5 has ended on node n0") {
		t.Fatalf("a rank of the finishing job connected: %q", why)
	}
	rs.strobe(t, 2)
	if d := b.recv(0, 0); string(d.Data) != "last" {
		t.Fatalf("%+v", d)
	}
	announcedAll(t, rs[1], 1, 4)
	eventually(t, "n0 left the job once its last slice went", func() bool {
		return len(rs[1].SharedNodes()) == 0 && len(rs[1].HeartbeatNodes()) == 0 && len(rs[0].SharedNodes()) == 0
	})
	for _, r := range rs {
		if s := r.Stats(); s.HeartbeatWaits != 0 {
			t.Fatalf("%s waited for a heartbeat: %+v", r.cfg.Node, s)
		}
	}
}

// A finishing node whose job is then removed (killed while its last
// slice waits) still tells the job's other nodes that it left, so they
// wait for no heartbeat of it.
func TestBufferedFinishingNodeRemovedTellsItLeft(t *testing.T) {
	rs := newBCSNodes(t, "n0", "n1")
	rs.addJob(t, 5, []string{"n0", "n1"})
	a := dialRank(t, rs[0], 5, 0, 2)
	dialRank(t, rs[1], 5, 1, 2)
	rs.strobe(t, 1)
	a.msg(1, 0, "last")
	eventually(t, "outbox", func() bool { return rs[0].Stats().Outbox == 1 })
	rs[0].FinishJob(5) // finishing: "last" still to go
	rs[0].RemoveJob(5)
	eventually(t, "n1 told that n0 left", func() bool { return len(rs[1].SharedNodes()) == 0 })
}

// A node that is not the root and whose ranks end first still heartbeats
// the root for the slice that carries their last messages, so the root
// announces them to their destination.
func TestBufferedNodeFinishingFirstAnnouncesItsLastSlice(t *testing.T) {
	rs := newBCSNodes(t, "n0", "n1", "n2")
	nodes := []string{"n0", "n1", "n2"} // n0 is the root
	rs.addJob(t, 5, nodes)
	b, c := dialRank(t, rs[1], 5, 1, 3), dialRank(t, rs[2], 5, 2, 3)
	rs.strobe(t, 1)
	b.msg(2, 0, "last")
	eventually(t, "outbox", func() bool { return rs[1].Stats().Outbox == 1 })
	b.send(comm.FrameFinalize, &comm.Finalize{})
	rs[1].FinishJob(5)
	rs.strobe(t, 2)
	if d := c.recv(1, 0); string(d.Data) != "last" {
		t.Fatalf("%+v", d)
	}
	announcedAll(t, rs[2], 1, 4)
	eventually(t, "n1 left the job once its last slice went", func() bool {
		return slices.Equal(rs[0].SharedNodes(), []string{"n2"}) && slices.Equal(rs[2].SharedNodes(), []string{"n0"})
	})
}

// A root whose ranks end after a slice was cut, with nothing of its own
// left to send, still answers that slice (another node's messages are
// announced in its sliceReady) before it leaves; no node waits for a
// timeout.
func TestBufferedRootFinishingMidSliceAnswersIt(t *testing.T) {
	rs := newBCSNodes(t, "n0", "n1", "n2")
	nodes := []string{"n0", "n1", "n2"}
	rs.addJob(t, 5, nodes)
	b, c := dialRank(t, rs[1], 5, 1, 3), dialRank(t, rs[2], 5, 2, 3)
	rs.strobe(t, 1)
	b.msg(2, 0, "x")
	eventually(t, "outbox", func() bool { return rs[1].Stats().Outbox == 1 })
	targets := rs.cut(2)
	rs.heartbeat("n1", 2, targets["n1"])
	rs[0].FinishJob(5) // n0's ranks end; n2 has not reported slice 2 yet
	rs.heartbeat("n2", 2, targets["n2"])
	if d := c.recv(1, 0); string(d.Data) != "x" {
		t.Fatalf("%+v", d)
	}
	announcedAll(t, rs[2], 1, 1)
	eventually(t, "n0 left the job", func() bool {
		return slices.Equal(rs[1].SharedNodes(), []string{"n2"}) && slices.Equal(rs[2].HeartbeatNodes(), []string{"n1"})
	})
	for _, r := range rs {
		if s := r.Stats(); s.HeartbeatWaits != 0 {
			t.Fatalf("%s waited for a heartbeat: %+v", r.cfg.Node, s)
		}
	}
}

// A finishing root whose last slice went at its heartbeat timeout stays
// in the job one slice more: a heartbeat of that slice that comes late
// still has its flows announced (lateFlowsLocked), then the root leaves.
func TestBufferedFinishingRootWaitsASliceAfterATimeout(t *testing.T) {
	rs := newBCSNodes(t, "n0", "n1", "n2")
	rs[0].mu.Lock()
	rs[0].hbTimeout = 20 * time.Millisecond // the root alone times out
	rs[0].unlock()
	nodes := []string{"n0", "n1", "n2"}
	rs.addJob(t, 5, nodes)
	b, c := dialRank(t, rs[1], 5, 1, 3), dialRank(t, rs[2], 5, 2, 3)
	rs.strobe(t, 1)
	c.msg(1, 0, "late")
	eventually(t, "outbox", func() bool { return rs[2].Stats().Outbox == 1 })
	targets := rs.cut(2)
	rs.heartbeat("n1", 2, targets["n1"])
	rs[0].FinishJob(5)
	late := rs[2].HeartbeatData(1, 2) // n2's heartbeat is held back: the root times out
	if d := b.recv(2, 0); string(d.Data) != "late" {
		t.Fatalf("%+v", d)
	}
	eventually(t, "the root's slice 2 transferred", func() bool { return rs[0].transferred() == 2 })
	if s := rs[1].Stats(); s.AnnouncedIn != 0 || !slices.Equal(rs[1].SharedNodes(), []string{"n0", "n2"}) {
		t.Fatalf("before the late heartbeat: n1 shares the job with %v, stats %+v", rs[1].SharedNodes(), s)
	}
	for _, to := range targets["n2"] {
		rs.node(to).PeerHeartbeat("n2", 1, 2, late)
	}
	announcedAll(t, rs[1], 1, 4)
	rs.strobe(t, 3)
	eventually(t, "n0 left the job after the next slice", func() bool {
		return slices.Equal(rs[1].SharedNodes(), []string{"n2"}) && len(rs[0].SharedNodes()) == 0
	})
}

// A root that finished and left before it cut a slice its nodes had
// already cut (strobe skew) still hears their heartbeats of that slice,
// sent before they learnt it left: it announces their flows, but the new
// root's, which the new root announces itself when it answers the slice
// (at its heartbeat timeout: the other heartbeats went to the old root).
func TestBufferedLeftRootAnnouncesHeartbeatsSentBeforeItsLeaveWasKnown(t *testing.T) {
	rs := newBCSNodes(t, "n0", "n1", "n2")
	rs.heartbeatTimeout("n1", 20*time.Millisecond) // the new root answers slice 2 at its timeout
	nodes := []string{"n0", "n1", "n2"}
	rs.addJob(t, 5, nodes)
	b, c := dialRank(t, rs[1], 5, 1, 3), dialRank(t, rs[2], 5, 2, 3)
	rs.strobe(t, 1)
	b.msg(2, 0, "to n2")
	c.msg(1, 0, "to n1")
	eventually(t, "outboxes", func() bool { return rs[1].Stats().Outbox == 1 && rs[2].Stats().Outbox == 1 })
	targets := rs[1:].cut(2) // n1 and n2 cut slice 2 before n0
	rs[0].FinishJob(5)       // owes nothing: leaves at once
	eventually(t, "n1 and n2 know n0 left", func() bool {
		return slices.Equal(rs[1].SharedNodes(), []string{"n2"}) && slices.Equal(rs[2].SharedNodes(), []string{"n1"})
	})
	rs.heartbeat("n1", 2, targets["n1"])
	rs.heartbeat("n2", 2, targets["n2"])
	if d := b.recv(2, 0); string(d.Data) != "to n1" {
		t.Fatalf("%+v", d)
	}
	if d := c.recv(1, 0); string(d.Data) != "to n2" {
		t.Fatalf("%+v", d)
	}
	announcedAll(t, rs[1], 1, 5)
	announcedAll(t, rs[2], 1, 5)
	rs[0].Cut(1, 2) // n0 catches up: nothing of the job is left there
	time.Sleep(20 * time.Millisecond)
	announcedAll(t, rs[1], 1, 5)
	announcedAll(t, rs[2], 1, 5)
}

// The record of the jobs a node left is bounded (maxLeftJobs), but a full
// one makes room for the job it leaves now by forgetting the oldest, which
// no heartbeat needs any more (one is late by a slice or two): refusing
// the newest, when more than maxLeftJobs jobs left within a minute, lost
// the announcement of the heartbeats still on their way to the old root.
func TestBufferedLeftRootRecordKeepsTheNewestWhenFull(t *testing.T) {
	rs := newBCSNodes(t, "n0", "n1", "n2")
	rs.heartbeatTimeout("n1", 20*time.Millisecond) // the new root answers slice 2 at its timeout
	rs[0].mu.Lock()
	for i := range int64(maxLeftJobs) { // jobs n0 left lately, a second ago and after
		rs[0].bcs.left[1000+i] = &leftJob{hosts: []string{"n0", "n9"}, left: map[string]bool{"n0": true}, successor: "n9",
			epoch: 1, at: time.Now().Add(-time.Second + time.Duration(i)*time.Microsecond)}
	}
	rs[0].unlock()
	nodes := []string{"n0", "n1", "n2"}
	rs.addJob(t, 5, nodes)
	c := dialRank(t, rs[2], 5, 2, 3)
	b := dialRank(t, rs[1], 5, 1, 3)
	rs.strobe(t, 1)
	c.msg(1, 0, "to n1")
	eventually(t, "outbox", func() bool { return rs[2].Stats().Outbox == 1 })
	targets := rs[1:].cut(2) // n1 and n2 cut slice 2 before n0
	rs[0].FinishJob(5)       // owes nothing: leaves at once
	eventually(t, "n1 and n2 know n0 left", func() bool {
		return slices.Equal(rs[1].SharedNodes(), []string{"n2"}) && slices.Equal(rs[2].SharedNodes(), []string{"n1"})
	})
	rs.heartbeat("n1", 2, targets["n1"])
	rs.heartbeat("n2", 2, targets["n2"]) // to n0, the root it knew
	if d := b.recv(2, 0); string(d.Data) != "to n1" {
		t.Fatalf("%+v", d)
	}
	announcedAll(t, rs[1], 1, 5)
	rs[0].mu.Lock()
	n, kept := len(rs[0].bcs.left), rs[0].bcs.left[5] != nil
	rs[0].unlock()
	if n > maxLeftJobs || !kept {
		t.Fatalf("left record: %d jobs, job 5 kept %v; want at most %d with job 5", n, kept, maxLeftJobs)
	}
}
