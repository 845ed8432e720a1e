package node_test

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// A control connection that breaks while gang jobs run does not end them:
// the agents keep their ranks (running or stopped), the controller reaches
// them again, adopts the ranks they report, and the jobs complete with the
// processes they started with.
func TestControlLinkBreakKeepsRanks(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 3, mode: sharing.Gang, mpl: 2, slice: 30 * time.Millisecond, controllerGrace: time.Minute})
	ids := []int64{
		c.submit(api.JobSpec{Command: []string{"sleep", "3"}, Processors: 3}),
		c.submit(api.JobSpec{Command: []string{"sleep", "3"}, Processors: 3}),
	}
	before := map[int64][]int{}
	for _, id := range ids {
		c.waitState(id, api.Running, 20*time.Second)
		before[id] = c.waitPIDs(id, 3)
		slices.Sort(before[id])
	}
	for _, a := range c.agents[1:] {
		peer := node.ControlPeer(a)
		if !node.BreakControl(a) {
			t.Fatalf("%s has no control connection to break", a.Name())
		}
		eventually(t, 20*time.Second, func() error {
			if p := node.ControlPeer(a); p == "" || p == peer {
				return fmt.Errorf("%s: not reconnected (control peer %q, was %q)", a.Name(), p, peer)
			}
			return nil
		})
	}
	for _, id := range ids {
		j := c.waitState(id, api.Completed, 30*time.Second)
		var pids []int
		for _, r := range j.Ranks {
			pids = append(pids, r.PID)
		}
		slices.Sort(pids)
		if !slices.Equal(pids, before[id]) {
			t.Errorf("job %d: ranks ended as pids %v, started as %v: restarted", id, pids, before[id])
		}
	}
}

// An agent without a controller keeps its ranks as they were (the stopped
// row stopped) for its grace, then kills them all, stopped ones included,
// and none is left behind.
func TestControllerGraceExpiryKillsRanks(t *testing.T) {
	const grace = 6 * time.Second
	c := startCluster(t, clusterOpts{agents: 3, mode: sharing.Gang, mpl: 2, slice: 30 * time.Millisecond, controllerGrace: grace})
	ids := []int64{
		c.submit(api.JobSpec{Command: []string{"sleep", "120"}, Processors: 3}),
		c.submit(api.JobSpec{Command: []string{"sleep", "120"}, Processors: 3}),
	}
	for _, id := range ids {
		c.waitState(id, api.Running, 20*time.Second)
		c.waitExec(id, 3, "sleep") // every rank launched: a shim still starting would be neither row's
	}
	if err := c.agents[0].Shutdown(); err != nil { // the controller's agent: its own ranks die with it
		t.Fatal(err)
	}
	left := time.Now()
	var survivors []int
	stopped := 0
	for _, id := range ids {
		for _, pid := range jobPIDs(t, id) {
			if n := rankNode(pid); n == "n1" || n == "n2" {
				survivors = append(survivors, pid)
				if procState(pid) == 'T' {
					stopped++
				}
			}
		}
	}
	if elapsed := time.Since(left); elapsed < grace && (len(survivors) != 4 || stopped == 0) {
		t.Fatalf("right after the controller left: %d ranks on n1 and n2 (%d stopped), want all 4 with the other row's stopped", len(survivors), stopped)
	}
	for _, id := range ids {
		c.waitGone(id)
	}
	if waited := time.Since(left); waited < grace/2 {
		t.Errorf("ranks killed %v after the controller left, well before the grace (%v)", waited, grace)
	}
}

// A controller restarted with its journal rebuilds its job table: job ids
// carry on, a running job whose ranks were on the other agents is adopted
// and completes with the processes it started with, a job whose rank died
// with the controller's agent fails, and the queued job runs.
func TestControllerRestartAdoptsRanks(t *testing.T) {
	journal := &node.MemJournal{}
	c := startCluster(t, clusterOpts{agents: 3, mode: sharing.Space, controllerGrace: time.Minute, journal: journal})
	first := c.submit(api.JobSpec{Command: []string{"sleep", "60"}, Processors: 1})
	j := c.waitState(first, api.Running, 20*time.Second)
	if j.Nodes[0] != "n0" {
		t.Skipf("the first job went to %s: the controller's agent was not the first up", j.Nodes[0])
	}
	kept := c.submit(api.JobSpec{Command: []string{"sleep", "4"}, Processors: 2})
	c.waitState(kept, api.Running, 20*time.Second)
	before := c.waitPIDs(kept, 2)
	slices.Sort(before)
	queued := c.submit(api.JobSpec{Command: []string{"true"}, Processors: 3})

	// The controller's agent stops (its own rank dies) and starts again,
	// with the same journal.
	old := c.agents[0]
	if err := old.Shutdown(); err != nil {
		t.Fatal(err)
	}
	cfg := c.agentConfig(0)
	cfg.Join = []string{c.agents[1].GossipAddr()}
	restarted, err := node.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.agents[0] = restarted
	c.client = api.NewClient(restarted.APIAddr())

	j = c.waitState(kept, api.Completed, 30*time.Second)
	var pids []int
	for _, r := range j.Ranks {
		pids = append(pids, r.PID)
	}
	slices.Sort(pids)
	if !slices.Equal(pids, before) {
		t.Errorf("job %d: ranks ended as pids %v, started as %v: restarted", kept, pids, before)
	}
	c.waitState(first, api.Failed, 20*time.Second)
	c.waitState(queued, api.Completed, 20*time.Second)
	if next := c.submit(api.JobSpec{Command: []string{"true"}, Processors: 1}); next != queued+1 {
		t.Errorf("a submission after the restart got id %d, want %d", next, queued+1)
	}
}

// An agent without a controller keeps its ranks as they were and records
// how the ones that end ended; the next controller to greet it hears of
// both (the live ranks with their pids and whether they are stopped, the
// exits once).
func TestAgentReportsRanksAndExitsToTheNextController(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 2, processors: 2, mode: sharing.Gang, mpl: 2, slice: 30 * time.Millisecond, controllerGrace: time.Minute})
	ids := []int64{
		c.submit(api.JobSpec{Command: []string{"sleep", "120"}, Processors: 4}),
		c.submit(api.JobSpec{Command: []string{"sleep", "120"}, Processors: 4}),
	}
	pids := map[int]int64{} // n1's ranks: pid → job
	for _, id := range ids {
		c.waitState(id, api.Running, 20*time.Second)
		for _, pid := range c.waitExec(id, 4, "sleep") { // launched, not a shim still starting
			if rankNode(pid) == "n1" {
				pids[pid] = id
			}
		}
	}
	if err := c.agents[0].Shutdown(); err != nil {
		t.Fatal(err)
	}
	var victim int
	for pid := range pids {
		if procState(pid) != 'T' {
			victim = pid
			break
		}
	}
	if victim == 0 {
		t.Fatalf("no rank of n1 runs: %v", pids)
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	n1 := c.agents[1]
	var ranks []node.WelcomeRank
	var exits []node.ExitReport
	eventually(t, 10*time.Second, func() error {
		var err error
		if ranks, exits, err = node.Greet(n1, sharing.Gang, 2); err != nil {
			return err
		}
		if len(exits) == 0 {
			return fmt.Errorf("no exit reported yet (live ranks %+v)", ranks)
		}
		return nil
	})
	if len(exits) != 1 || exits[0].PID != victim || exits[0].Job != pids[victim] || exits[0].Signal == "" {
		t.Errorf("exits %+v, want the one of pid %d (job %d), killed", exits, victim, pids[victim])
	}
	stopped := 0
	for _, r := range ranks {
		if pids[r.PID] != r.Job || r.PID == victim {
			t.Errorf("live rank %+v: not one of n1's ranks %v, or the killed one", r, pids)
		}
		if r.Stopped {
			stopped++
		}
	}
	if len(ranks) != len(pids)-1 || stopped != 2 {
		t.Errorf("live ranks %+v (%d stopped), want the %d others, the other row's 2 stopped", ranks, stopped, len(pids)-1)
	}
	// The exit was handed over: the next greeting carries nothing new. It
	// may carry the same exit again: one that reached a controller's
	// connection is repeated to the next controller (a leader may die
	// before journaling it), and the greetings above are controllers.
	if _, again, err := node.Greet(n1, sharing.Gang, 2); err != nil || len(again) > 1 || len(again) == 1 && again[0].PID != victim {
		t.Errorf("second greeting: exits %+v, %v; want none, or the same one repeated", again, err)
	}
}
