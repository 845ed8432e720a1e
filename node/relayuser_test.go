package node_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// commClaimArg makes the test binary connect to a relay as a rank and
// print the answer: `node.test __comm_claim SOCKET JOB RANK SIZE`.
const commClaimArg = "__comm_claim"

func commClaim(args []string) int {
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: __comm_claim SOCKET JOB RANK SIZE")
		return 2
	}
	job, _ := strconv.ParseInt(args[1], 10, 64)
	rank, _ := strconv.Atoi(args[2])
	size, _ := strconv.Atoi(args[3])
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := comm.Dial(ctx, comm.Config{Relay: args[0], Job: job, Rank: rank, Size: size})
	if err != nil {
		fmt.Println("refused:", err)
		return 0
	}
	c.Finalize(ctx)
	fmt.Println("welcome")
	return 0
}

// A root agent's relay serves ranks that run as their submitter: a comm
// job of a user other than root runs across two agents (relay socket and
// keyed relay link), and a process of another user claiming a rank of
// that user's job is refused by the kernel's word (SO_PEERCRED).
func TestCommJobOfAUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it creates users and runs ranks as them")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("useradd not installed")
	}
	alice, bob := addUser(t, ""), addUser(t, "")
	dir := worldDir(t)
	exe := worldExe(t, dir)
	state, err := os.MkdirTemp("", "i14-links-state-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	if err := os.Chmod(state, 0o755); err != nil { // the ranks reach the relay sockets inside
		t.Fatal(err)
	}
	key := newKey(t)
	c := startCluster(t, clusterOpts{agents: 2, processors: 2, mode: sharing.Space, key: key, stateDir: state})
	tok, err := key.Mint(alice.uid, alice.gid, time.Now(), clusterkey.DefaultTTL, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	asAlice := tokenClient(c.agents[0].APIAddr(), tok)

	id, err := asAlice.Submit(ctx, api.JobSpec{Name: "semantics", Command: []string{exe, commScenarioArg, "semantics"},
		Processors: 3, TimeLimit: api.Duration{D: time.Minute}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	j := waitDone(t, c, id, 90*time.Second)
	if j.State != api.Completed {
		t.Fatalf("alice's comm job: %s (%s); ranks %+v; output in %s", j.State, j.Reason, j.Ranks, state)
	}
	nodes := map[string]bool{}
	for _, r := range j.Ranks {
		nodes[r.Node] = true
	}
	if len(nodes) != 2 {
		t.Errorf("the job ran on %v, want both agents", nodes)
	}

	// Bob's process claims rank 0 of Alice's running job: refused.
	id, err = asAlice.Submit(ctx, api.JobSpec{Command: []string{"sleep", "1000"}, Processors: 1,
		TimeLimit: api.Duration{D: time.Minute}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c.waitState(id, api.Running, 20*time.Second)
	j, err = asAlice.Job(ctx, id)
	if err != nil || len(j.Ranks) != 1 {
		t.Fatalf("job %d: %+v %v", id, j, err)
	}
	var agent *node.Agent
	for _, a := range c.agents {
		if a.Name() == j.Ranks[0].Node {
			agent = a
		}
	}
	claim := func(u testUser) string {
		cmd := exec.Command(exe, commClaimArg, node.RelaySocket(agent), strconv.FormatInt(id, 10), "0", "1")
		cmd.Env = []string{"GORACE=atexit_sleep_ms=0"}
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.uid, Gid: u.gid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claim as %s: %v\n%s", u.name, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	want := fmt.Sprintf("runs as uid %d, the job's ranks as uid %d", bob.uid, alice.uid)
	if got := claim(bob); !strings.Contains(got, want) {
		t.Errorf("bob claiming alice's rank: %q, want %q", got, want)
	}
	if got := metric(t, agent.APIAddr(), "cosched_relay_ranks_refused_total"); got != 1 {
		t.Errorf("cosched_relay_ranks_refused_total = %v, want 1", got)
	}
	// Alice's own process may (the sleep never connects).
	if got := claim(alice); got != "welcome" {
		t.Errorf("alice claiming her rank: %q", got)
	}
	if err := asAlice.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	c.waitGone(id)
}
