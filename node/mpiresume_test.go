package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
)

// A --mpi cosched job (a C program compiled by MPICH's mpicc, run on
// cosched's MPI library) in bcs mode with a rank on each of two agents
// exchanges numbered messages (Isend/Irecv on two tags matched out of
// order, a blocking Send/Recv ping-pong, an Allreduce every third round,
// a Barrier every fourth) while first the compute agent and then the
// controller's agent are killed with SIGKILL and started again: the
// library resumes its relay connection (protocol 3; no restart of the
// program), every message arrives exactly once and in order, the
// collectives give the right sums, and the job completes.
func TestMPICoschedJobSurvivesRelayRestarts(t *testing.T) {
	kit, progs := mpiKit(t, "node/testdata/mpistream.c")
	for _, tc := range []struct {
		mode  string
		ranks int
	}{
		{"bcs", 2}, // a rank on each agent: every message through the relays
		// two on each agent: a pair of them on a same-node channel
		// (immediate delivery), the others through the relays (no
		// cross-node channels: TestRanksResumeOnRestartedRelays of ./mpi
		// has one live through restarts)
		{"gang", 4},
	} {
		t.Run(fmt.Sprintf("%s-%d", tc.mode, tc.ranks), func(t *testing.T) {
			mpiStreamThroughRestarts(t, kit.LibDir, progs, tc.mode, tc.ranks)
		})
	}
}

func mpiStreamThroughRestarts(t *testing.T, libDir string, progs []string, mode string, ranks int) {
	// ranks/2 processors each (the last --processors is the one used)
	k := startKeptClusterMode(t, time.Minute, mode, "--mpi-lib", libDir, "--processors", strconv.Itoa(ranks/2))
	stop := filepath.Join(k.dir, "stop")
	id, err := k.client().Submit(context.Background(), api.JobSpec{Processors: ranks, TimeLimit: api.Duration{D: 3 * time.Minute},
		Command: progs, MPI: api.MPICosched, Env: []string{envStreamStop + "=" + stop, "COSCHED_MPI_DEBUG=1", "COSCHED_MPI_CHANNELS=node"}})
	if err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, k.client(), id, 20*time.Second, inState(api.Running))
	outs := map[string][]string{} // each node's ranks' outputs
	perNode := map[string]int{}
	for i, r := range j.Ranks {
		outs[r.Node] = append(outs[r.Node], k.outOf(r.Node, id, i))
		perNode[r.Node]++
	}
	if ranks > 2 && perNode["c0"] < 2 && perNode["w1"] < 2 {
		t.Fatalf("ranks placed %v: no two on one agent, so no same-node channel", perNode)
	}
	errOf := func(out string) string { return strings.TrimSuffix(out, ".out") + ".err" }
	t.Cleanup(func() { // before the directory goes
		if t.Failed() {
			for _, node := range outs {
				for _, out := range node {
					o, _ := os.ReadFile(out)
					e, _ := os.ReadFile(errOf(out))
					t.Logf("%s: %s\n%s: %s", out, o, errOf(out), e)
				}
			}
		}
	})
	// round is the lowest round the node's ranks are at.
	round := func(node string) int {
		low := -1
		for _, out := range outs[node] {
			if n := lastGot(out); low < 0 || n < low {
				low = n
			}
		}
		return low
	}
	progress := func(name string, after int, within time.Duration) {
		t.Helper()
		eventually(t, within, func() error {
			if n := round(name); n <= after {
				return fmt.Errorf("%s's ranks at round %d, want past %d", name, n, after)
			}
			return nil
		})
	}
	progress("w1", 3, 30*time.Second)
	for _, step := range []struct{ p, other *agentProc }{{k.w1, k.c0}, {k.c0, k.w1}} {
		step.p.kill9(t)
		at := max(round("c0"), round("w1"))
		step.p.args = append(step.p.args, "--join", step.other.ready.Gossip)
		restarted := time.Now()
		step.p.start(t, k.dir)
		progress(step.p.name, at, 60*time.Second)
		t.Logf("%s: messages flowing again %v after the agent's restart (at round %d)", step.p.name, time.Since(restarted).Round(time.Millisecond), at)
		progress(step.other.name, at+4, 30*time.Second) // past an Allreduce and a Barrier
	}
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, k.client(), id, 60*time.Second, inState(api.Completed))
	for i, r := range j.Ranks {
		out := k.outOf(r.Node, id, i)
		rounds := checkStreamRun(t, out, i, r.Node)
		e, _ := os.ReadFile(errOf(out))
		resumed := strings.Count(string(e), "relay connection resumed")
		if resumed == 0 {
			t.Errorf("rank %d on %s: no resumed connection in its stderr %q", i, r.Node, e)
		}
		t.Logf("rank %d on %s: %d rounds, each message once and in order; %d connection(s) resumed; stderr: %s", i, r.Node, rounds, resumed, strings.TrimSpace(string(e)))
	}
}
