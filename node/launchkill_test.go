package node

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cosched/cosched/comm/relay"
	"github.com/cosched/cosched/node/agentctl"
	"github.com/cosched/cosched/node/jobcg"
	"github.com/cosched/cosched/strobe"
)

// launchKillAgent is an agent with what launch and kill use: a rank
// manager, a switcher, a relay, a follower and no cgroups.
func launchKillAgent(t *testing.T) *Agent {
	t.Helper()
	a := controlAgent(t)
	dir := t.TempDir()
	rl, err := relay.New(relay.Config{Node: "n1", SocketPath: filepath.Join(dir, "relay.sock"), Listen: "127.0.0.1:0", Log: a.log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rl.Close() })
	udp, err := strobe.ListenUDP("127.0.0.1:0", a.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	if a.cg, err = jobcg.Open(jobcg.Config{Agent: "launchkill", Mode: "none", Log: a.log}); err != nil {
		t.Fatal(err)
	}
	a.cfg.StateDir, a.relay = dir, rl
	a.follower = strobe.NewFollower(strobe.FollowerConfig{Name: "n1", Transport: udp, Switch: a.sw.Switch, Log: a.log})
	return a
}

// A kill that comes while the job's launch is still starting its ranks
// (from another goroutine: a newer control connection, or the controller
// grace's killAll) ends every rank of the launch, not only those started
// so far: the ranks started after it ran on for a job the agent no
// longer had, unscheduled (or stopped for good, in a time-shared mode).
func TestKillDuringLaunchLeavesNoRank(t *testing.T) {
	a := launchKillAgent(t)
	const job, size = 9, 40
	l := launch{Job: job, Size: size, Argv: []string{"sleep", "60"}}
	for r := range size {
		l.Ranks = append(l.Ranks, launchRank{Rank: r})
	}
	if a.takeLaunch(l, a.actl.Welcomes()) != agentctl.Taken {
		t.Fatal("launch refused")
	}
	launched := make(chan struct{})
	go func() { defer close(launched); a.launch(l) }()
	deadline := time.Now().Add(30 * time.Second)
	for len(a.ranks.Ranks(job)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no rank started")
		}
		time.Sleep(time.Millisecond)
	}
	a.kill(job, "test: killed while launching")
	<-launched
	for {
		n := len(a.ranks.Ranks(job))
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ranks of the killed job still run", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A launch whose rank names a negative slot (a malformed frame from a
// controller) does not take the agent down: the rank runs on no
// particular CPU. It indexed the CPU list with the slot and panicked.
func TestLaunchWithANegativeSlotDoesNotPanic(t *testing.T) {
	a := launchKillAgent(t)
	a.cfg.CPUs = []int{0}
	l := launch{Job: 3, Size: 1, Argv: []string{"true"}, Ranks: []launchRank{{Rank: 0, Slot: -1}}}
	if a.takeLaunch(l, a.actl.Welcomes()) != agentctl.Taken {
		t.Fatal("launch refused")
	}
	a.launch(l)
	select {
	case x := <-a.ranks.Exits():
		if x.Job != 3 || x.Rank != 0 {
			t.Fatalf("exit %+v, want job 3 rank 0's", x)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit for the rank")
	}
}

// Nor does a rank number out of the job's range: it indexed the job's
// node list with it and panicked. The rank is refused, and its failure
// reported as its exit.
func TestLaunchWithABadRankDoesNotPanic(t *testing.T) {
	a := launchKillAgent(t)
	for i, rk := range []int{-1, 2} {
		job := int64(4 + i) // a job launched once: a second launch of it is a duplicate
		l := launch{Job: job, Size: 2, Argv: []string{"true"}, Ranks: []launchRank{{Rank: rk}}, Nodes: []string{"n1", "n1"}}
		if a.takeLaunch(l, a.actl.Welcomes()) != agentctl.Taken {
			t.Fatal("launch refused")
		}
		a.launch(l)
		a.mu.Lock()
		st := a.actl.Status()
		got := slices.ContainsFunc(st.Pending, func(x agentctl.Exit) bool { return x.Job == job && x.Rank == rk && x.Report.(rankExit).Err != "" })
		unreported := slices.ContainsFunc(st.Unreported, func(r agentctl.Rank) bool { return r.Job == job && r.Rank == rk })
		a.mu.Unlock()
		if !got || unreported {
			t.Fatalf("rank %d of a job of 2: no failure reported (%v) or still unreported (%v)", rk, got, unreported)
		}
		if n := len(a.ranks.Ranks(job)); n != 0 {
			t.Fatalf("rank %d of a job of 2: %d ranks started", rk, n)
		}
	}
}
