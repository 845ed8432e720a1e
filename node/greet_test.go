package node

import (
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/node/agentctl"
	"github.com/cosched/cosched/node/rank"
)

// controlAgent is agent n1 (incarnation 7) with what its control link
// uses: a rank manager and a switcher.
func controlAgent(t *testing.T) *Agent {
	t.Helper()
	log := zaptest.NewLogger(t)
	ranks, err := rank.NewManager(rank.Config{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ranks.Close() })
	return &Agent{cfg: Config{Name: "n1"}, log: log, ranks: ranks, sw: newSwitcher(ranks, false, log),
		ctlChanged: make(chan struct{}, 1), actl: agentctl.New(agentctl.Config{Incarnation: 7})}
}

// greetPipe has agent a greet a controller on a new in-memory connection
// and returns the welcome it read and the controller's end.
func greetPipe(t *testing.T, a *Agent) (welcome, *frame.Reader, net.Conn, uint64) {
	t.Helper()
	ctlEnd, agentEnd := net.Pipe()
	t.Cleanup(func() { ctlEnd.Close(); agentEnd.Close() })
	type result struct {
		gen uint64
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, gen := a.greet(agentEnd)
		done <- result{gen, nil}
	}()
	ctlEnd.SetDeadline(time.Now().Add(10 * time.Second))
	r := frame.NewReader(ctlEnd, maxControlFrame)
	typ, body, err := r.Read()
	if err != nil || typ != msgWelcome {
		t.Fatalf("welcome: type %d, %v", typ, err)
	}
	var w welcome
	if err := frame.Decode(body, &w); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	return w, r, ctlEnd, res.gen
}

// A welcome lists every rank of the launches the agent took whose exit it
// has not reported: one still starting (no process yet), and one that
// ended whose exit is on its way from the reaper to the controller. The
// controller takes a rank the agent neither lists nor reports as ended for
// lost, and fails its job: a control connection that broke and came back
// in that gap failed TestMPIBarrierAcrossControlBreak with "rank 1 lost on
// n1". The exit reported next goes to the new connection, after the
// welcome; a launch read from a connection a newer welcome replaced is
// refused (that welcome did not list it: the controller sends it again).
func TestWelcomeListsRanksWhoseExitIsNotReported(t *testing.T) {
	a := controlAgent(t)

	_, _, _, gen := greetPipe(t, a)
	if a.takeLaunch(launch{Job: 5, Size: 2, Ranks: []launchRank{{Rank: 0}, {Rank: 1}}}, gen) != agentctl.Taken {
		t.Fatal("launch of the current connection refused")
	}
	pid, err := a.ranks.Start(rank.Spec{Job: 5, Rank: 0, Size: 2, Argv: []string{"true"}, LogDir: t.TempDir(), CPU: -1})
	if err != nil {
		t.Fatal(err)
	}
	a.rankStarted(5, 0, pid)
	var x rank.Exit
	select {
	case x = <-a.ranks.Exits(): // rank 0 has ended; its exit is in hand, not reported
	case <-time.After(30 * time.Second):
		t.Fatal("no exit for rank 0")
	}

	w, r, _, gen2 := greetPipe(t, a)
	if want := []liveRank{{Job: 5, Rank: 0, PID: pid}, {Job: 5, Rank: 1}}; !slices.Equal(w.Ranks, want) {
		t.Fatalf("welcome ranks %+v, want %+v (rank 0 ended unreported, rank 1 starting)", w.Ranks, want)
	}
	if len(w.Exits) != 0 || !slices.Equal(w.Launched, []int64{5}) || w.Incarnation != 7 {
		t.Fatalf("welcome %+v: want no exit, launched [5], incarnation 7", w)
	}
	if a.takeLaunch(launch{Job: 6, Size: 1, Ranks: []launchRank{{Rank: 0}}}, gen) == agentctl.Taken {
		t.Fatal("a launch from the replaced connection was taken")
	}

	go a.report(rankExit{Job: x.Job, Rank: x.Rank, Node: "n1", PID: x.PID, Code: x.Code})
	typ, body, err := r.Read()
	if err != nil || typ != msgRankExit {
		t.Fatalf("after the welcome: type %d, %v; want the rank exit", typ, err)
	}
	var got rankExit
	if err := frame.Decode(body, &got); err != nil || got.Job != 5 || got.Rank != 0 || got.PID != pid {
		t.Fatalf("rank exit %+v, %v", got, err)
	}

	// Reported, rank 0 is among the exits delivered, no longer a rank.
	w, _, _, gen3 := greetPipe(t, a)
	// Rows read on a replaced connection are not applied either (the new
	// controller restates every row); those on the current one are.
	if a.currentWelcome(gen2) || !a.currentWelcome(gen3) {
		t.Fatalf("welcome %d current, %d not: want only the latest current", gen2, gen3)
	}
	if want := []liveRank{{Job: 5, Rank: 1}}; !slices.Equal(w.Ranks, want) {
		t.Fatalf("welcome ranks %+v, want %+v", w.Ranks, want)
	}
	if len(w.Exits) != 1 || w.Exits[0].Rank != 0 {
		t.Fatalf("welcome exits %+v, want rank 0's", w.Exits)
	}
	if a.takeLaunch(launch{Job: 6, Size: 1, Ranks: []launchRank{{Rank: 0}}}, gen2) == agentctl.Taken {
		t.Fatal("a launch from a replaced connection was taken")
	}
}

// A welcome that cannot be written (the new controller's connection broke
// during the handshake) loses nothing: the exits it carried go back to
// pending and the next welcome carries them, once each; the connection
// it replaced is closed, not left current with its launches silently
// dropped as stale, so its controller sees the break and dials again.
func TestFailedWelcomeLosesNoExit(t *testing.T) {
	a := controlAgent(t)
	a.actl.Adopt([]agentctl.Rank{{Job: 4, Rank: 0}})
	a.report(rankExit{Job: 4, Rank: 0, Node: "n1", Code: 3}) // no controller: kept pending

	_, _, first, _ := greetPipe(t, a)
	a.report(rankExit{Job: 4, Rank: 1, Node: "n1", Code: 0}) // queued on the first link
	broken, agentEnd := net.Pipe()
	broken.Close()
	a.greet(agentEnd)
	first.SetReadDeadline(time.Now().Add(10 * time.Second))
	var err error
	for err == nil { // the welcome, maybe the exit, then the close
		_, err = first.Read(make([]byte, 4096))
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("the replaced connection: %v, want it closed", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) { // the failed link's writer lets go
		a.mu.Lock()
		gone := a.link == nil
		a.mu.Unlock()
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed welcome's link is still current")
		}
	}
	w, _, _, _ := greetPipe(t, a)
	got := map[rankKey]int{}
	for _, x := range w.Exits {
		got[rankKey{x.Job, x.Rank}]++
	}
	if len(got) != 2 || got[rankKey{4, 0}] != 1 || got[rankKey{4, 1}] != 1 {
		t.Fatalf("welcome after the failed one: exits %+v, want job 4's ranks 0 and 1, once each", w.Exits)
	}
}

// An exit handed over in a welcome (it ended while no controller was
// connected) is repeated to the next controller, as one written after a
// welcome is: the controller that got it may die before it journals it,
// and its successor, hearing of neither the rank nor its exit, would take
// the rank for lost.
func TestExitHandedInAWelcomeIsRepeated(t *testing.T) {
	a := controlAgent(t)
	a.actl.Adopt([]agentctl.Rank{{Job: 4, Rank: 0}})
	a.report(rankExit{Job: 4, Rank: 0, Node: "n1", Code: 3}) // no controller: kept pending

	w, _, _, _ := greetPipe(t, a)
	if len(w.Exits) != 1 || w.Exits[0].Job != 4 {
		t.Fatalf("first welcome's exits %+v, want job 4 rank 0's", w.Exits)
	}
	w, _, _, _ = greetPipe(t, a) // the first controller died before journaling it
	if len(w.Exits) != 1 || w.Exits[0].Job != 4 || w.Exits[0].Code != 3 {
		t.Fatalf("next welcome's exits %+v, want job 4 rank 0's again", w.Exits)
	}
	if len(w.Ranks) != 0 {
		t.Fatalf("next welcome's ranks %+v, want none", w.Ranks)
	}
}
