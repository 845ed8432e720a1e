package journal

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// group is N journals on loopback TCP, each in its own directory.
type group struct {
	t     testing.TB
	dirs  []string
	addrs []string
	peers []Peer
	js    []*Journal
	fsms  []*listFSM
}

func newGroup(t testing.TB, n int, timing Timing) *group {
	g := &group{t: t, js: make([]*Journal, n), fsms: make([]*listFSM, n)}
	lns := make([]net.Listener, n)
	root := t.TempDir()
	for i := range n {
		lns[i] = listen(t, "127.0.0.1:0")
		g.addrs = append(g.addrs, lns[i].Addr().String())
		g.dirs = append(g.dirs, filepath.Join(root, fmt.Sprintf("c%d", i)))
		g.peers = append(g.peers, Peer{ID: fmt.Sprintf("c%d", i), Addr: g.addrs[i]})
	}
	for i := range n {
		g.start(i, lns[i], timing)
	}
	t.Cleanup(func() {
		for _, j := range g.js {
			if j != nil {
				j.Close()
			}
		}
	})
	return g
}

// start opens server i with a fresh FSM (ln nil: listen on its address
// again, as a restarted process would).
func (g *group) start(i int, ln net.Listener, timing Timing) {
	if ln == nil {
		ln = listen(g.t, g.addrs[i])
	}
	g.fsms[i] = &listFSM{}
	j, err := Open(ctxFor(g.t, 10*time.Second), Config{
		Dir: g.dirs[i], NodeID: g.peers[i].ID, Listener: ln,
		Bootstrap: true, Peers: g.peers, FSM: g.fsms[i], Timing: timing,
	})
	if err != nil {
		g.t.Fatal(err)
	}
	g.js[i] = j
}

// leader waits until exactly one live server leads and every live server
// agrees on it, and returns its position.
func (g *group) leader(d time.Duration) int {
	g.t.Helper()
	at := -1
	eventually(g.t, d, "no agreed leader", func() bool {
		at = -1
		for i, j := range g.js {
			if j != nil && j.IsLeader() {
				if at >= 0 {
					return false
				}
				at = i
			}
		}
		if at < 0 {
			return false
		}
		for _, j := range g.js {
			if j != nil && j.Leader().ID != g.peers[at].ID {
				return false
			}
		}
		return true
	})
	return at
}

func (g *group) kill(i int) {
	if err := g.js[i].Close(); err != nil {
		g.t.Fatal(err)
	}
	g.js[i] = nil
}

func (g *group) waitApplied(i int, want []string) {
	g.t.Helper()
	eventually(g.t, 10*time.Second, fmt.Sprintf("%s did not apply every entry", g.peers[i].ID), func() bool {
		return len(g.fsms[i].list()) >= len(want)
	})
	if got := g.fsms[i].list(); !slices.Equal(got, want) {
		g.t.Fatalf("%s applied\n %v\nwant\n %v", g.peers[i].ID, got, want)
	}
}

func TestGroupKeepsEveryEntryWhenTheLeaderDies(t *testing.T) {
	g := newGroup(t, 3, DefaultLANTiming())
	first := g.leader(10 * time.Second)
	want := appendN(t, g.js[first], "first-leader", 0, 40)

	// A follower does not append; it names the leader.
	follower := (first + 1) % 3
	err := g.js[follower].Append(ctxFor(t, time.Second), [][]byte{[]byte("nope")})
	var nl *NotLeaderError
	if !errors.Is(err, ErrNotLeader) || !errors.As(err, &nl) || nl.Leader.ID != g.peers[first].ID || nl.Leader.Addr != g.addrs[first] {
		t.Fatalf("Append on a follower: %v", err)
	}
	for i := range 3 {
		g.waitApplied(i, want)
	}

	// The leader dies abruptly; another leads and nothing committed is lost.
	g.kill(first)
	second := g.leader(10 * time.Second)
	if second == first {
		t.Fatal("the dead server still leads")
	}
	if err := g.js[second].Barrier(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	want = append(want, appendN(t, g.js[second], "second-leader", 0, 40)...)
	for i := range 3 {
		if i != first {
			g.waitApplied(i, want)
		}
	}
	for i := range 3 {
		if i != first && g.js[i].Stats().Failovers < 1 {
			t.Errorf("%s counted no failover: %+v", g.peers[i].ID, g.js[i].Stats())
		}
	}

	// The dead server comes back from its directory and catches up.
	g.start(first, nil, DefaultLANTiming())
	g.waitApplied(first, want)
	if l := g.leader(10 * time.Second); l == first {
		t.Logf("the restarted server leads again")
	}
}

func TestGroupCannotCommitWithoutAMajority(t *testing.T) {
	g := newGroup(t, 3, DefaultLANTiming())
	lead := g.leader(10 * time.Second)
	appendN(t, g.js[lead], "e", 0, 3)
	for i := range 3 {
		if i != lead {
			g.kill(i)
		}
	}
	// With two of three gone the survivor cannot commit: it steps down (its
	// lease ends) and Append fails rather than pretending.
	err := g.js[lead].Append(ctxFor(t, 3*time.Second), [][]byte{[]byte("alone")})
	if err == nil {
		t.Fatal("a server without a majority committed an entry")
	}
	if got := g.fsms[lead].list(); slices.Contains(got, "alone") {
		t.Fatal("an uncommitted entry was applied")
	}
}

// Peers learned late (through gossip) bootstrap a running journal.
func TestGroupBootstrappedAfterOpen(t *testing.T) {
	root := t.TempDir()
	var peers []Peer
	var lns []net.Listener
	for i := range 3 {
		ln := listen(t, "127.0.0.1:0")
		lns = append(lns, ln)
		peers = append(peers, Peer{ID: fmt.Sprintf("c%d", i), Addr: ln.Addr().String()})
	}
	js := make([]*Journal, 3)
	fsms := make([]*listFSM, 3)
	for i := range 3 {
		fsms[i] = &listFSM{}
		j, err := Open(ctxFor(t, 10*time.Second), Config{Dir: filepath.Join(root, peers[i].ID), NodeID: peers[i].ID, Listener: lns[i], FSM: fsms[i]})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		js[i] = j
	}
	time.Sleep(100 * time.Millisecond)
	for _, j := range js {
		if j.IsLeader() {
			t.Fatal("a journal with no group leads")
		}
	}
	if err := js[1].Bootstrap(ctxFor(t, 5*time.Second), peers[:1]); err == nil {
		t.Fatal("bootstrap with peers that exclude this server was accepted")
	}
	for i, j := range js {
		if err := j.Bootstrap(ctxFor(t, 5*time.Second), peers); err != nil {
			t.Fatalf("bootstrap %d: %v", i, err)
		}
	}
	var lead *Journal
	eventually(t, 10*time.Second, "no leader after bootstrap", func() bool {
		for _, j := range js {
			if j.IsLeader() {
				lead = j
				return true
			}
		}
		return false
	})
	if err := lead.Append(ctxFor(t, 5*time.Second), [][]byte{[]byte("x")}); err != nil {
		t.Fatal(err)
	}
	// A second bootstrap of a formed group does nothing.
	if err := lead.Bootstrap(ctxFor(t, 5*time.Second), peers); err != nil {
		t.Fatalf("bootstrap of a formed group: %v", err)
	}
	for i := range 3 {
		eventually(t, 5*time.Second, "entry not applied everywhere", func() bool { return len(fsms[i].list()) == 1 })
	}
}
