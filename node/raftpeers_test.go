package node_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/sharing"
)

// peersString is the group as "name(voter,leader,alive)" items, for messages.
func peersString(servers []api.RaftServer) string {
	var s []string
	for _, p := range servers {
		s = append(s, fmt.Sprintf("%s(voter=%t leader=%t alive=%t)", p.Name, p.Voter, p.Leader, p.Alive))
	}
	return fmt.Sprint(s)
}

// waitPeers waits until the group's servers satisfy ok and returns them.
func waitPeers(t *testing.T, c *api.Client, ok func([]api.RaftServer) error) []api.RaftServer {
	t.Helper()
	var servers []api.RaftServer
	eventually(t, 30*time.Second, func() error {
		var err error
		if servers, err = c.RaftPeers(context.Background()); err != nil {
			return err
		}
		if err := ok(servers); err != nil {
			return fmt.Errorf("%w: %s", err, peersString(servers))
		}
		return nil
	})
	return servers
}

// controllerGroup is three controller agents (c0, c1, c2, space mode) and
// a worker, with the group formed.
type controllerGroup struct {
	dir              string
	client           *api.Client // through the worker
	worker           *agentProc
	controllers      map[string]*agentProc
	leader, follower string // who leads; one that does not
	// ctl starts controller i (0 to 3), joining join ("": none).
	ctl func(i int, join string) *agentProc
}

func startControllerGroup(t *testing.T, extra ...string) controllerGroup {
	t.Helper()
	dir := t.TempDir()
	ports := freePorts(t, 4)
	g := controllerGroup{dir: dir}
	g.ctl = func(i int, join string) *agentProc {
		args := append([]string{"--controller", "--controllers", "3", "--no-compute", "--raft-port", strconv.Itoa(ports[i]), "--mode", "space"}, extra...)
		if join != "" {
			args = append(args, "--join", join)
		}
		return startAgentProc(t, dir, fmt.Sprintf("c%d", i), args...)
	}
	c0 := g.ctl(0, "")
	g.controllers = map[string]*agentProc{"c0": c0, "c1": g.ctl(1, c0.ready.Gossip), "c2": g.ctl(2, c0.ready.Gossip)}
	g.worker = startAgentProc(t, dir, "w1", "--processors", "1", "--join", c0.ready.Gossip)
	g.client = api.NewClient(g.worker.ready.API)
	waitPeers(t, g.client, func(s []api.RaftServer) error {
		g.leader = ""
		for _, p := range s {
			if !p.Voter || !p.Alive {
				return errors.New("want three live voters")
			}
			if p.Leader {
				g.leader = p.Name
			}
		}
		if len(s) != 3 || g.leader == "" {
			return errors.New("want three voters, one leading")
		}
		return nil
	})
	g.follower = "c0"
	if g.leader == "c0" {
		g.follower = "c1"
	}
	return g
}

// A controller of three killed for good still counts toward the majority
// until an operator removes it: list-peers shows it not alive, remove-peer
// removes it (never the leader, never an unknown name), the two left
// commit submissions, a new controller-eligible agent is added, the three
// of the new group survive the loss of one more, and the removed one,
// started again, is added back.
func TestRemoveDeadController(t *testing.T) {
	g := startControllerGroup(t)
	client, ctl, controllers, leader, dead := g.client, g.ctl, g.controllers, g.leader, g.follower
	ctx := context.Background()
	controllers[dead].kill9(t)
	waitPeers(t, client, func(s []api.RaftServer) error {
		i := slices.IndexFunc(s, func(p api.RaftServer) bool { return p.Name == dead })
		if len(s) != 3 || i < 0 || s[i].Alive || !s[i].Voter {
			return fmt.Errorf("want %s a voter, not alive", dead)
		}
		return nil
	})

	err := client.RemoveRaftPeer(ctx, leader)
	wantStatus(t, "removing the leader", err, http.StatusConflict, "controller "+leader+" leads")
	err = client.RemoveRaftPeer(ctx, "c9")
	wantStatus(t, "removing an unknown name", err, http.StatusNotFound, "controller c9: not in the controllers' raft group")
	alive := "c0"
	for _, name := range []string{"c0", "c1", "c2"} {
		if name != leader && name != dead {
			alive = name
		}
	}
	err = client.RemoveRaftPeer(ctx, alive)
	wantStatus(t, "removing a live controller", err, http.StatusConflict, "controller "+alive+" is alive")
	if err := client.RemoveRaftPeer(ctx, dead); err != nil {
		t.Fatalf("removing %s: %v", dead, err)
	}
	waitPeers(t, client, func(s []api.RaftServer) error {
		if len(s) != 2 || slices.ContainsFunc(s, func(p api.RaftServer) bool { return p.Name == dead }) {
			return fmt.Errorf("want two servers, %s gone", dead)
		}
		return nil
	})
	submitDone := func() {
		t.Helper()
		id, err := client.Submit(ctx, api.JobSpec{Processors: 1, TimeLimit: api.Duration{D: time.Minute}, Command: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		waitJob(t, client, id, 30*time.Second, inState(api.Completed))
	}
	submitDone()
	if n := metricValue(t, controllers[leader].ready.API, `cosched_controllers_removed_total{by="operator"`); n != 1 {
		t.Errorf("the leader counts %v removals by an operator, want 1", n)
	}

	// A new controller-eligible agent joins the group of two.
	controllers["c3"] = ctl(3, g.worker.ready.Gossip)
	waitPeers(t, client, func(s []api.RaftServer) error {
		if len(s) != 3 || !slices.ContainsFunc(s, func(p api.RaftServer) bool { return p.Name == "c3" && p.Voter && p.Alive }) {
			return errors.New("want c3 a live voter of three")
		}
		return nil
	})
	// Of the new three, one more may die: had the dead one stayed, four
	// voters with two gone would have no majority.
	controllers[alive].kill9(t)
	submitDone()

	// The removed controller, started again with its journal, is added
	// back: three of the four voters are up.
	controllers[dead].args = append(controllers[dead].args, "--join", g.worker.ready.Gossip)
	controllers[dead].start(t, g.dir)
	waitPeers(t, client, func(s []api.RaftServer) error {
		if len(s) != 4 || !slices.ContainsFunc(s, func(p api.RaftServer) bool { return p.Name == dead && p.Voter && p.Alive }) {
			return fmt.Errorf("want %s back, a live voter of four", dead)
		}
		return nil
	})
	submitDone()
}

// Only operators (root, members of the admin group) see or change the
// controllers' raft group; a lone controller's group is itself, which it
// does not remove.
func TestRaftPeersForOperatorsOnly(t *testing.T) {
	key := newKey(t)
	admins := uint32(4300)
	c := startCluster(t, clusterOpts{agents: 2, mode: sharing.Space, key: key, adminGID: &admins})
	ctx := context.Background()
	mallory, _ := key.Mint(4242, 4242, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	mc := tokenClient(c.agents[1].APIAddr(), mallory)
	_, err := mc.RaftPeers(ctx)
	wantStatus(t, "a user's list-peers", err, http.StatusForbidden, "only an operator (root, or a member of group")
	err = mc.RemoveRaftPeer(ctx, "n1")
	wantStatus(t, "a user's remove-peer", err, http.StatusForbidden, "only an operator")

	op, _ := key.Mint(4301, admins, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	servers, err := tokenClient(c.agents[1].APIAddr(), op).RaftPeers(ctx)
	if err != nil {
		t.Fatalf("an operator's list-peers: %v", err)
	}
	if len(servers) != 1 || servers[0] != (api.RaftServer{Name: "n0", Address: servers[0].Address, Voter: true, Leader: true, Alive: true}) || servers[0].Address == "" {
		t.Errorf("a lone controller's group: %s, want n0 alone, leading", peersString(servers))
	}
	err = c.client.RemoveRaftPeer(ctx, "n0")
	wantStatus(t, "root removing the leader", err, http.StatusConflict, "controller n0 leads")
}

// With --dead-controller-after, the leader removes a controller gone for
// longer than that by itself, and the two left commit; it removes no more
// (of two voters, one left would not be a majority: the pure rule's test,
// TestGoneSinceDeadVoter).
func TestDeadControllerRemovedAutomatically(t *testing.T) {
	g := startControllerGroup(t, "--dead-controller-after", "1s")
	g.controllers[g.follower].kill9(t)
	waitPeers(t, g.client, func(s []api.RaftServer) error {
		if len(s) != 2 || slices.ContainsFunc(s, func(p api.RaftServer) bool { return p.Name == g.follower || !p.Alive }) {
			return fmt.Errorf("want two live servers, %s removed", g.follower)
		}
		return nil
	})
	id, err := g.client.Submit(context.Background(), api.JobSpec{Processors: 1, TimeLimit: api.Duration{D: time.Minute}, Command: []string{"true"}})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, g.client, id, 30*time.Second, inState(api.Completed))
	if n := metricValue(t, g.controllers[g.leader].ready.API, `cosched_controllers_removed_total{by="autopilot"`); n != 1 {
		t.Errorf("the leader counts %v removals by autopilot, want 1", n)
	}
}
