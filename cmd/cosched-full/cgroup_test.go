package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/containerd/cgroups/v3"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/node/jobcg"
)

// needCgroups skips a test where this host's cgroups cannot be used.
func needCgroups(t *testing.T) {
	t.Helper()
	if why := jobcg.Usable("i15-probe-" + strconv.Itoa(os.Getpid())); why != "" {
		t.Skipf("cgroups unavailable here: %s", why)
	}
}

// A rank whose children double-fork into a new session (setsid).
var escaper = []string{"sh", "-c", `setsid sh -c 'sleep 300 & wait' & sleep 300`}

// killedAgent is an agent SIGKILLed while a job of escaper ran on it.
type killedAgent struct {
	dir   string   // the test's directory: state, ready file
	args  []string // the agent's command line
	id    int64    // the job
	start func()   // starts the agent again, as before
}

// killAgentUnderEscaper starts agent name with a job of escaper and
// SIGKILLs it and its cleanup guard at once (as a node-wide kill would):
// the rank dies with its agent (parent-death signal); its descendants (the
// child of its group, the setsid pair) do not, and only the job's cgroup
// still holds them.
func killAgentUnderEscaper(t *testing.T, name string) killedAgent {
	return killAgentUnder(t, name, true)
}

// killAgentUnder is killAgentUnderEscaper, with the guard killed too or
// left alone.
func killAgentUnder(t *testing.T, name string, withGuard bool) killedAgent {
	k := killedAgent{dir: t.TempDir()}
	ready := filepath.Join(k.dir, "ready.json")
	k.args = []string{"agent", "--name", name, "--controller", "--mode", "space", "--bind", "127.0.0.1:0",
		"--local", "--processors", "1", "--state-dir", filepath.Join(k.dir, "state"),
		"--realtime-priority", "0", "--nice", "0", "--log-level", "warn"}
	var proc *os.Process
	var addr string
	k.start = func() {
		t.Helper()
		var cmd *exec.Cmd
		cmd, addr = startAgentProcess(t, append(slices.Clone(k.args), "--ready-file", ready), ready)
		t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }) // graceful: it removes its cgroups
		proc = cmd.Process
	}
	k.start()
	client := api.NewClient(addr)
	eventually(t, 20*time.Second, func() error {
		var err error
		k.id, err = client.Submit(context.Background(), api.JobSpec{Command: escaper, Processors: 1, TimeLimit: api.Duration{D: time.Minute}})
		return err
	})
	var pids []int
	eventually(t, 20*time.Second, func() error {
		if pids = jobPIDs(t, k.dir, k.id); len(pids) != 4 {
			return fmt.Errorf("%d of 4 processes", len(pids))
		}
		return nil
	})
	t.Logf("job %d: processes %v", k.id, pids)
	if withGuard {
		guard := guardOf(t, filepath.Join(k.dir, "state"))
		if err := syscall.Kill(guard, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if withGuard {
		eventually(t, 10*time.Second, func() error {
			if n := len(jobPIDs(t, k.dir, k.id)); n != 3 {
				return fmt.Errorf("%d processes of the job alive after the agent's death, want the rank's 3 descendants", n)
			}
			return nil
		})
	}
	return k
}

// waitJobGone waits until no process of the killed agent's job is left.
func (k killedAgent) waitJobGone(t *testing.T, after string) {
	t.Helper()
	eventually(t, 20*time.Second, func() error {
		if left := jobPIDs(t, k.dir, k.id); len(left) > 0 {
			return fmt.Errorf("processes left after %s: %v", after, left)
		}
		return nil
	})
}

// An agent SIGKILLed with its guard leaves what its ranks setsid'd;
// restarted with the same name and state directory it finds its previous
// life's job cgroups and kills them.
func TestAgentRestartCleansWhatItsKilledLifeLeft(t *testing.T) {
	needCgroups(t)
	k := killAgentUnderEscaper(t, "i15-restart")
	k.start()
	k.waitJobGone(t, "the agent's restart")
}

// An agent that died with its guard and will not start again is cleaned
// up after by `cosched agent --cleanup` with its name and state directory
// (systemd's ExecStopPost, cluster down), which a running agent refuses.
func TestAgentCleanupKillsWhatADeadAgentLeft(t *testing.T) {
	needCgroups(t)
	k := killAgentUnderEscaper(t, "i15-cleanup")
	cleanup := func() (string, error) {
		out, err := coschedCmd(append(slices.Clone(k.args), "--cleanup")...).CombinedOutput()
		return string(out), err
	}
	k.start() // a running agent: --cleanup must not touch it
	if out, err := cleanup(); err == nil || !strings.Contains(out, "in use by a running agent") {
		t.Fatalf("--cleanup beside a running agent: %v\n%s\nwant refused: state dir in use", err, out)
	}
	k.waitJobGone(t, "the agent's restart") // (the restart cleaned its own)

	k = killAgentUnderEscaper(t, "i15-cleanup2")
	out, err := cleanup()
	if err != nil {
		t.Fatalf("--cleanup: %v\n%s", err, out)
	}
	if !strings.Contains(out, `"jobs": 1`) {
		t.Errorf("--cleanup says %q, want one job cgroup cleaned", out)
	}
	k.waitJobGone(t, "--cleanup")
}

// cluster down cleans up after an agent that was SIGKILLed with its
// cleanup guard and never restarted: what its rank setsid'd lives on in
// the job's cgroup until then, and is gone after.
func TestClusterDownCleansUpAfterAKilledAgent(t *testing.T) {
	needCgroups(t)
	dir, run := clusterCLI(t, "-N", "1", "--mode", "space", "--realtime-priority", "0")
	lc, err := localcluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	id, err := lc.Client().Submit(context.Background(), api.JobSpec{Command: escaper, Processors: 1, TimeLimit: api.Duration{D: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() error {
		if n := len(jobPIDs(t, dir, id)); n != 4 {
			return fmt.Errorf("%d of 4 processes", n)
		}
		return nil
	})
	if err := syscall.Kill(guardOf(t, filepath.Join(dir, "agents", lc.Agents[0].Name)), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(lc.Agents[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		if n := len(jobPIDs(t, dir, id)); n != 3 {
			return fmt.Errorf("%d processes of the job alive after its agent's death, want the rank's 3 descendants", n)
		}
		return nil
	})
	run("cluster", "down")
	if left := jobPIDs(t, dir, id); len(left) > 0 {
		t.Fatalf("processes left after cluster down: %v", left)
	}
}

// An agent SIGKILLed while one of its jobs is frozen (--suspend freezer,
// a gang of two jobs on one processor) leaves no process of either job.
// On cgroup v1 a frozen task takes the rank's parent-death SIGKILL only
// once thawed, which the dead agent cannot do: its cleanup guard, started
// with it and no descendant of it, does (thaw, kill, remove) once the
// agent is gone. On v2 the kernel delivers the SIGKILL to the frozen task.
func TestAgentKilledWhileAJobIsFrozenLeavesNothing(t *testing.T) {
	needCgroups(t)
	dir := t.TempDir()
	ready, state := filepath.Join(dir, "ready.json"), filepath.Join(dir, "state")
	name := "i23-frozen"
	cmd, addr := startAgentProcess(t, []string{"agent", "--name", name, "--controller", "--mode", "gang", "--mpl", "2", "--slice", "3s",
		"--bind", "127.0.0.1:0", "--local", "--processors", "1", "--state-dir", state, "--suspend", "freezer",
		"--realtime-priority", "0", "--nice", "0", "--log-level", "warn", "--ready-file", ready}, ready)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		cleanupAfter(t, name, state) // whatever a failure left, frozen or not
	})
	client := api.NewClient(addr)
	ids := submitSleepers(t, client, 2)
	pids := func() []int { return append(jobPIDs(t, dir, ids[0]), jobPIDs(t, dir, ids[1])...) }
	// Killed within a slice in which one job is frozen and the other runs.
	eventually(t, 30*time.Second, func() error {
		p := pids()
		if len(p) != 2 || proctest.Frozen(p[0]) == proctest.Frozen(p[1]) {
			return fmt.Errorf("processes %v: not one frozen and one running", p)
		}
		return cmd.Process.Kill()
	})
	eventually(t, 20*time.Second, func() error {
		if left := pids(); len(left) > 0 {
			return fmt.Errorf("processes of the jobs left after their agent's death: %v (frozen: %v)", left, proctest.Frozen(left[0]))
		}
		return nil
	})
	if m := cgroups.Mode(); m == cgroups.Legacy || m == cgroups.Hybrid { // jobcg's v1, where the guard does it
		// It logs once it has removed the cgroups, after their processes
		// are gone.
		eventually(t, 10*time.Second, func() error {
			b, _ := os.ReadFile(filepath.Join(state, node.GuardLogName))
			if !strings.Contains(string(b), `"job cgroups":2`) {
				return fmt.Errorf("the cleanup guard's log does not say it cleaned the two jobs' cgroups:\n%s", b)
			}
			return nil
		})
	}
}

// An agent SIGKILLed alone leaves nothing of its job: its cleanup guard,
// no descendant of it, kills what the rank setsid'd once the agent is
// gone, and removes the job's cgroup and the agent's subtree. An agent
// that stops cleanly stops its guard before it exits.
func TestAgentKilledAloneItsGuardCleansUp(t *testing.T) {
	needCgroups(t)
	k := killAgentUnder(t, "i23-guard", false)
	k.waitJobGone(t, "the agent's death, by its guard")
	state := filepath.Join(k.dir, "state")
	eventually(t, 10*time.Second, func() error {
		b, _ := os.ReadFile(filepath.Join(state, node.GuardLogName))
		if !strings.Contains(string(b), `"job cgroups":1`) {
			return fmt.Errorf("the guard's log does not say it cleaned one job cgroup:\n%s", b)
		}
		return nil
	})
	// On v1 (this test's hosts) the subtree is at a known place; on v2
	// it is below the agent's own cgroup.
	m := cgroups.Mode()
	v1 := m == cgroups.Legacy || m == cgroups.Hybrid
	sum := sha256.Sum256([]byte(state)) // the subtree's name, as node names it
	subtree := "/sys/fs/cgroup/freezer/cosched/i23-guard-" + hex.EncodeToString(sum[:4])
	if _, err := os.Stat(subtree); v1 && err == nil {
		t.Errorf("the agent's cgroup subtree %s is left", subtree)
	}

	k.start() // a clean stop this time
	if _, err := os.Stat(subtree); v1 && err != nil {
		t.Fatalf("the agent's cgroup subtree, while it runs: %v", err)
	}
	guard := guardOf(t, state)
	cmd := exec.Command("kill", "-INT", strconv.Itoa(agentPID(t, state)))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	eventually(t, 20*time.Second, func() error {
		if agentPID(t, state) != 0 {
			return fmt.Errorf("the agent still runs")
		}
		return nil
	})
	// Gone (or a zombie until init reaps it) by the time its agent exited:
	// stopped by it, not woken by its exit.
	if st := procState(guard); st != 0 && st != 'Z' {
		t.Errorf("the guard (pid %d) outlives its agent's clean stop: state %c", guard, st)
	}
	if b, _ := os.ReadFile(filepath.Join(state, node.GuardLogName)); !strings.Contains(string(b), "stopped while the agent runs") {
		t.Errorf("the guard's log does not say its agent stopped it:\n%s", b)
	}
}

// guardOf finds the cleanup guard of the agent whose state directory is
// state.
func guardOf(t *testing.T, state string) int {
	t.Helper()
	var pid int
	eventually(t, 10*time.Second, func() error {
		pid = processWith(state, "--when-gone")
		if pid == 0 {
			return fmt.Errorf("no cleanup guard of %s", state)
		}
		return nil
	})
	return pid
}

// agentPID is the running agent of state (0: none).
func agentPID(t *testing.T, state string) int {
	t.Helper()
	return processWith(state, "--ready-file")
}

// processWith is a live process whose command line has both strings.
func processWith(a, b string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(cmdline, []byte(a)) || !bytes.Contains(cmdline, []byte(b)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if st := procState(pid); st != 0 && st != 'Z' {
			return pid
		}
	}
	return 0
}

// startAgentProcess starts an agent process with args, whose --ready-file
// is ready, and returns it and its API address once it is up.
func startAgentProcess(t *testing.T, args []string, ready string) (*exec.Cmd, string) {
	t.Helper()
	os.Remove(ready)
	cmd := coschedCmd(args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var info struct{ API string }
	eventually(t, 20*time.Second, func() error {
		b, err := os.ReadFile(ready)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &info)
	})
	return cmd, info.API
}

// An agent with --keep-ranks SIGKILLed leaves its ranks to its next life
// (time-shared ones stopped by their keepers meanwhile). Its guard waits
// --controller-grace for that life: one that comes in time takes the
// ranks and the guard leaves them; when none comes, the guard kills them,
// rather than leave them stopped for ever.
func TestKeptRanksWaitTheGraceForTheNextLife(t *testing.T) {
	dir := t.TempDir()
	ready, state := filepath.Join(dir, "ready.json"), filepath.Join(dir, "state")
	name := "i23-keep"
	args := []string{"agent", "--name", name, "--controller", "--mode", "gang", "--mpl", "2", "--slice", "300ms",
		"--bind", "127.0.0.1:0", "--local", "--processors", "1", "--state-dir", state, "--keep-ranks", "--controller-grace", "3s",
		"--realtime-priority", "0", "--nice", "0", "--log-level", "warn", "--ready-file", ready}
	var agent *exec.Cmd
	start := func() string {
		var addr string
		agent, addr = startAgentProcess(t, args, ready)
		return addr
	}
	t.Cleanup(func() {
		if agent != nil {
			_ = agent.Process.Kill()
			_ = agent.Wait()
		}
		cleanupAfter(t, name, state) // whatever a failure left, kept ranks included
	})
	client := api.NewClient(start())
	ids := submitSleepers(t, client, 2)
	pids := func() []int { return append(jobPIDs(t, dir, ids[0]), jobPIDs(t, dir, ids[1])...) }
	// Running, and recorded for the next life (its keeper's record and
	// its launch).
	eventually(t, 20*time.Second, func() error {
		if n := len(pids()); n < 2 {
			return fmt.Errorf("%d processes of the two jobs", n)
		}
		for _, id := range ids {
			keeper := filepath.Join(state, "ranks", fmt.Sprintf("%d.0.keeper", id))
			if _, err := os.Stat(filepath.Join(state, "jobs", strconv.FormatInt(id, 10), "launch.msgpack")); err != nil {
				return err
			}
			if _, err := os.Stat(keeper); err != nil {
				return err
			}
		}
		return nil
	})
	kill := func() {
		t.Helper()
		if err := agent.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = agent.Wait()
		agent = nil
	}
	guardLog := func() string { b, _ := os.ReadFile(filepath.Join(state, node.GuardLogName)); return string(b) }

	// Back within the grace: its next life takes the ranks.
	kill()
	client = api.NewClient(start())
	eventually(t, 20*time.Second, func() error {
		if !strings.Contains(guardLog(), "another life of the agent runs; it takes the kept ranks") {
			return fmt.Errorf("the first life's guard has not seen the next life:\n%s", guardLog())
		}
		return nil
	})
	if strings.Contains(guardLog(), "did not come back") {
		t.Fatalf("the first life's guard gave up on the next life:\n%s", guardLog())
	}
	time.Sleep(4 * time.Second) // past the grace
	if n := len(pids()); n < 2 {
		t.Fatalf("%d processes of the two jobs past the grace, their agent back within it", n)
	}
	for _, id := range ids {
		if j, err := client.Job(context.Background(), id); err != nil || j.State != api.Running {
			t.Fatalf("job %d after the restart: %+v, %v; want it running", id, j, err)
		}
	}

	// Not back: past the grace the guard kills them.
	kill()
	if left := pids(); len(left) == 0 {
		t.Fatal("the kept ranks died with their agent")
	}
	eventually(t, 30*time.Second, func() error {
		if left := pids(); len(left) > 0 {
			return fmt.Errorf("processes of the jobs left after the grace: %v", left)
		}
		return nil
	})
	if !strings.Contains(guardLog(), "did not come back within its grace") {
		t.Errorf("the guard's log does not say the agent did not come back:\n%s", guardLog())
	}
}

// submitSleepers submits n one-processor jobs that sleep for five minutes.
func submitSleepers(t *testing.T, client *api.Client, n int) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		id, err := client.Submit(context.Background(), api.JobSpec{Command: []string{"sleep", "300"}, Processors: 1, TimeLimit: api.Duration{D: 5 * time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// cleanupAfter runs `agent --cleanup` for the agent name of state, which
// must have stopped.
func cleanupAfter(t *testing.T, name, state string) {
	t.Helper()
	if out, err := coschedCmd("agent", "--cleanup", "--name", name, "--state-dir", state).CombinedOutput(); err != nil {
		t.Errorf("agent --cleanup: %v\n%s", err, out)
	}
}

// A dead agent's guard keeps its ranks as long as the controller waits for
// the agent (its reconnect grace, said in its hello), not the agent's own
// --controller-grace: here a controller-only agent waits 3 s and the
// worker's own grace is an hour, so past the controller's the guard kills
// the ranks, whose job the controller has failed.
func TestGuardKeepsRanksForTheControllersGrace(t *testing.T) {
	dir := t.TempDir()
	cReady, cState := filepath.Join(dir, "c.json"), filepath.Join(dir, "c")
	wReady, wState := filepath.Join(dir, "w.json"), filepath.Join(dir, "w")
	common := []string{"--bind", "127.0.0.1:0", "--local", "--realtime-priority", "0", "--nice", "0", "--log-level", "warn"}
	ctl, addr := startAgentProcess(t, append([]string{"agent", "--name", "gc-c", "--controller", "--no-compute", "--mode", "gang",
		"--mpl", "2", "--slice", "300ms", "--state-dir", cState, "--controller-grace", "3s", "--ready-file", cReady}, common...), cReady)
	var gossip struct{ Gossip string }
	if b, err := os.ReadFile(cReady); err != nil || json.Unmarshal(b, &gossip) != nil || gossip.Gossip == "" {
		t.Fatalf("controller's ready file: %v %s", err, b)
	}
	worker, _ := startAgentProcess(t, append([]string{"agent", "--name", "gc-w", "--processors", "1", "--state-dir", wState,
		"--keep-ranks", "--controller-grace", "1h", "--join", gossip.Gossip, "--ready-file", wReady}, common...), wReady)
	t.Cleanup(func() {
		for _, a := range []*exec.Cmd{worker, ctl} {
			_ = a.Process.Kill()
			_ = a.Wait()
		}
		cleanupAfter(t, "gc-w", wState)
		cleanupAfter(t, "gc-c", cState)
	})
	client := api.NewClient(addr)
	ids := submitSleepers(t, client, 1)
	eventually(t, 20*time.Second, func() error {
		if n := len(jobPIDs(t, dir, ids[0])); n == 0 {
			return errors.New("the job's rank is not running yet")
		}
		// kept: its keeper recorded for the next life
		if _, err := os.Stat(filepath.Join(wState, "ranks", fmt.Sprintf("%d.0.keeper", ids[0]))); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(wState, "controller-grace"))
		if err != nil || strings.TrimSpace(string(b)) != "3s" {
			return fmt.Errorf("the worker's record of the controller's grace: %q, %v", b, err)
		}
		return nil
	})
	if err := worker.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	if len(jobPIDs(t, dir, ids[0])) == 0 {
		t.Fatal("the kept rank died with its agent")
	}
	eventually(t, 30*time.Second, func() error {
		if left := jobPIDs(t, dir, ids[0]); len(left) > 0 {
			return fmt.Errorf("the job's processes are left past the controller's grace: %v", left)
		}
		return nil
	})
	b, _ := os.ReadFile(filepath.Join(wState, node.GuardLogName))
	if log := string(b); !strings.Contains(log, "did not come back within its grace") || !strings.Contains(log, "the controller's") {
		t.Errorf("the guard's log does not say it waited the controller's grace:\n%s", log)
	}
	if j, err := client.Job(context.Background(), ids[0]); err != nil || j.State != api.Failed {
		t.Errorf("job %d: %+v, %v; want it failed (its agent did not come back)", ids[0], j, err)
	}
}
