package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/internal/stableport"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/telemetry"
)

// agentProc is a `cosched agent` process.
type agentProc struct {
	name  string
	args  []string // to start it again the same way
	cmd   *exec.Cmd
	ready struct {
		Name   string `json:"name"`
		PID    int    `json:"pid"`
		Gossip string `json:"gossip"`
		API    string `json:"api"`
	}
	exited chan struct{}
}

// startAgentProc starts an agent process whose state lives in dir/name.
func startAgentProc(t testing.TB, dir, name string, extra ...string) *agentProc {
	t.Helper()
	args := append([]string{agentProcArg, "--name", name, "--bind", "127.0.0.1:0",
		"--state-dir", filepath.Join(dir, name), "--controller-grace", "1m"}, extra...)
	p := &agentProc{name: name, args: args}
	// Registered before the agent's stop, so it runs after it: what a
	// SIGKILLed agent left (its cgroup subtree, its kept ranks), as its
	// cleanup guard (which a test binary's agent has not) would clean.
	t.Cleanup(func() {
		if _, err := node.CleanupCgroups(node.Config{Name: name, StateDir: filepath.Join(dir, name)}); err != nil {
			t.Errorf("cleaning up after %s: %v", name, err)
		}
	})
	p.start(t, dir)
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, name+".log"))
			lines := strings.Split(string(log), "\n")
			t.Logf("%s's log (last lines):\n%s", name, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	})
	return p
}

func (p *agentProc) start(t testing.TB, dir string) {
	t.Helper()
	ready := filepath.Join(dir, p.name+".ready")
	os.Remove(ready)
	logf, err := os.OpenFile(filepath.Join(dir, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(exe, append(slices.Clone(p.args), "--ready-file", ready)...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		cmd.Wait()
		close(done)
	}(p.cmd, p.exited)
	t.Cleanup(p.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && json.Unmarshal(b, &p.ready) == nil {
			return
		}
		select {
		case <-p.exited:
			log, _ := os.ReadFile(filepath.Join(dir, p.name+".log"))
			t.Fatalf("agent %s exited before it was ready:\n%s", p.name, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent %s not ready after 30s", p.name)
		}
	}
}

// kill9 kills the agent as a crash would.
func (p *agentProc) kill9(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
}

// stop ends the agent gracefully (its ranks die with it), forcefully if
// it takes too long.
func (p *agentProc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// freePorts are n distinct loopback TCP ports nothing listens on now,
// below the ephemeral range: a restarted controller binds its journal
// port again (internal/stableport).
func freePorts(t testing.TB, n int) []int {
	ports, err := stableport.Pick(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// waitComputeUp waits until n agents offering processors are up.
func waitComputeUp(t testing.TB, client *api.Client, n int) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		rep, err := client.Nodes(context.Background(), false)
		if err != nil {
			return err
		}
		up := 0
		for _, node := range rep.Nodes {
			if node.State == "up" && node.CPUs > 0 {
				up++
			}
		}
		if up != n {
			return fmt.Errorf("%d agents up, want %d: %+v", up, n, rep.Nodes)
		}
		return nil
	})
}

func waitJob(t *testing.T, c *api.Client, id int64, timeout time.Duration, ok func(api.Job) error) api.Job {
	t.Helper()
	var j api.Job
	eventually(t, timeout, func() error {
		var err error
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if j, err = c.Job(ctx, id); err != nil {
			return err
		}
		return ok(j)
	})
	return j
}

func inState(want api.State) func(api.Job) error {
	return func(j api.Job) error {
		if j.State != want {
			return fmt.Errorf("job %d is %s (%s), want %s", j.ID, j.State, j.Reason, want)
		}
		return nil
	}
}

func rankPIDs(j api.Job) []int {
	var pids []int
	for _, r := range j.Ranks {
		pids = append(pids, r.PID)
	}
	return pids
}

// procJobPIDs lists the live processes of job id whose parent is one of
// the agent processes (other tests on the machine run jobs of the same ids).
func procJobPIDs(t *testing.T, id int64, agents ...*agentProc) []int {
	t.Helper()
	pids, err := proctest.JobPIDs(id, func(r proctest.Rank) bool {
		return slices.ContainsFunc(agents, func(a *agentProc) bool { return a.cmd.Process.Pid == r.PPID })
	})
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// waitPIDs waits until n processes of job id run under the agents and
// returns their PIDs, sorted.
func waitPIDs(t *testing.T, id int64, n int, agents ...*agentProc) []int {
	t.Helper()
	var pids []int
	eventually(t, 20*time.Second, func() error {
		if pids = procJobPIDs(t, id, agents...); len(pids) != n {
			return fmt.Errorf("job %d: processes %v, want %d", id, pids, n)
		}
		return nil
	})
	return sorted(pids)
}

func sorted(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// The only controller is killed with a job running and one queued; started
// again from its state directory, it finds both in its journal: the
// running job's ranks were not restarted (same PIDs), every job completes
// under its id, and the next id follows the last.
func TestControllerKilledAndRestartedKeepsEveryJob(t *testing.T) {
	dir := t.TempDir()
	ctlArgs := []string{"--controller", "--no-compute", "--mode", "space"}
	c0 := startAgentProc(t, dir, "c0", ctlArgs...)
	w1 := startAgentProc(t, dir, "w1", "--processors", "1", "--join", c0.ready.Gossip)
	w2 := startAgentProc(t, dir, "w2", "--processors", "1", "--join", c0.ready.Gossip)
	client := api.NewClient(w1.ready.API, w2.ready.API)
	waitComputeUp(t, client, 2)
	submit := func(cmd ...string) int64 {
		id, err := client.Submit(context.Background(), api.JobSpec{Processors: 2, TimeLimit: api.Duration{D: time.Minute}, Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	running := submit("sleep", "6")
	queued := submit("sleep", "0.5")
	if running != 1 || queued != 2 {
		t.Fatalf("ids %d, %d", running, queued)
	}
	waitJob(t, client, running, 20*time.Second, inState(api.Running))
	before := waitPIDs(t, running, 2, w1, w2)
	if j := waitJob(t, client, queued, 5*time.Second, func(api.Job) error { return nil }); j.State != api.Pending {
		t.Fatalf("job %d is %s, want it queued", queued, j.State)
	}

	c0.kill9(t)
	// Nothing answers for the jobs now; the ranks run on.
	for _, pid := range before {
		if !alive(pid) {
			t.Fatalf("rank %d died with the controller", pid)
		}
	}
	// Started again with the same flags and state directory (new ports:
	// it joins a worker to be found again).
	c0.args = append(c0.args, "--join", w1.ready.Gossip)
	c0.start(t, dir)

	after := waitJob(t, client, running, 30*time.Second, inState(api.Completed))
	if got := sorted(rankPIDs(after)); !slices.Equal(got, before) {
		t.Fatalf("ranks of job %d: PIDs %v before the crash, %v after: restarted", running, before, got)
	}
	waitJob(t, client, queued, 30*time.Second, inState(api.Completed))
	if id := submit("true"); id != 3 {
		t.Fatalf("the next id after a restart is %d, want 3", id)
	}
}

// Three controllers; the leader is killed while jobs run: another leads,
// the job table is whole, and every job completes.
func TestStandbyControllerTakesOver(t *testing.T) {
	dir := t.TempDir()
	ports := freePorts(t, 3)
	ctl := func(i int, join ...string) *agentProc {
		args := []string{"--controller", "--controllers", "3", "--no-compute", "--raft-port", strconv.Itoa(ports[i]), "--mode", "gang", "--slice", "50ms", "--mpl", "2"}
		for _, j := range join {
			args = append(args, "--join", j)
		}
		return startAgentProc(t, dir, fmt.Sprintf("c%d", i), args...)
	}
	c0 := ctl(0)
	c1 := ctl(1, c0.ready.Gossip)
	c2 := ctl(2, c0.ready.Gossip)
	w1 := startAgentProc(t, dir, "w1", "--processors", "1", "--join", c0.ready.Gossip)
	w2 := startAgentProc(t, dir, "w2", "--processors", "1", "--join", c0.ready.Gossip)
	controllers := map[string]*agentProc{"c0": c0, "c1": c1, "c2": c2}
	client := api.NewClient(w1.ready.API, w2.ready.API)
	var leader string
	var up int
	eventually(t, 30*time.Second, func() error {
		rep, err := client.Nodes(context.Background(), false)
		if err != nil {
			return err
		}
		up, leader = 0, ""
		for _, n := range rep.Nodes {
			if n.State == "up" && n.CPUs > 0 {
				up++
			}
			if n.Leader {
				leader = n.Name
			}
		}
		if up != 2 || leader == "" {
			return fmt.Errorf("%d workers up, leader %q", up, leader)
		}
		return nil
	})
	var ids []int64
	for _, secs := range []string{"4", "4", "1"} {
		id, err := client.Submit(context.Background(), api.JobSpec{Processors: 2, TimeLimit: api.Duration{D: time.Minute}, Command: []string{"sleep", secs}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	waitJob(t, client, ids[0], 20*time.Second, inState(api.Running))
	before := waitPIDs(t, ids[0], 2, w1, w2)
	// The workers' slice records, read before the failover…
	records := map[string][]telemetry.SliceRecord{}
	rep, err := client.NodesSince(context.Background(), api.MaxRecords, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range rep.Nodes {
		if n.Stats != nil {
			records[n.Name] = n.Stats.Records
		}
	}
	cursor := rep.Cursor

	start := time.Now()
	controllers[leader].kill9(t)
	var next string
	eventually(t, 20*time.Second, func() error {
		rep, err := client.Nodes(context.Background(), false)
		if err != nil {
			return err
		}
		for _, n := range rep.Nodes {
			if n.Leader && n.Name != leader {
				next = n.Name
				return nil
			}
		}
		return errors.New("no new leader")
	})
	t.Logf("%s leads %v after %s was killed", next, time.Since(start).Round(time.Millisecond), leader)
	// …and after it with the cursor from before, through the new leader:
	// its slices (a new epoch, numbered from 1 again) come after the old
	// leader's, none skipped nor repeated.
	old, err := api.ParseCursor(cursor)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		rep, err := client.NodesSince(context.Background(), api.MaxRecords, old)
		if err != nil {
			return err
		}
		for _, w := range []string{"w1", "w2"} {
			var s *api.NodeStats
			for _, n := range rep.Nodes {
				if n.Name == w {
					s = n.Stats
				}
			}
			if s == nil || len(s.Records) == 0 || s.Records[len(s.Records)-1].Epoch <= old[w].Epoch {
				return fmt.Errorf("no slice of the new leader's on %s yet", w)
			}
		}
		for _, w := range []string{"w1", "w2"} {
			for _, n := range rep.Nodes {
				if n.Name == w {
					records[w] = append(records[w], n.Stats.Records...)
				}
			}
		}
		cursor = rep.Cursor
		return nil
	})
	recordsOnce(t, client, records, cursor, []string{"w1", "w2"})
	for _, id := range ids {
		waitJob(t, client, id, 60*time.Second, inState(api.Completed))
	}
	after, err := client.Job(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := sorted(rankPIDs(after)); !slices.Equal(got, before) {
		t.Fatalf("ranks of job %d: PIDs %v before the failover, %v after", ids[0], before, got)
	}
	// The new leader goes on numbering.
	id, err := client.Submit(context.Background(), api.JobSpec{Processors: 1, TimeLimit: api.Duration{D: time.Minute}, Command: []string{"true"}})
	if err != nil || id != ids[len(ids)-1]+1 {
		t.Fatalf("submission after the failover: id %d, %v", id, err)
	}
}
