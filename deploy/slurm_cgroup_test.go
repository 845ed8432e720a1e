package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/deploy/slurmtest"
	"github.com/cosched/cosched/internal/proctest"
)

// Under Slurm's proctrack/cgroup (the usual production setting) an agent
// that dies without stopping (SIGKILL: the OOM killer, a crash) leaves
// nothing: Slurm kills what is left in the step's cgroup, which the
// agent's cleanup guard has left for one beside the jobs' (where Slurm's
// kill does not reach), so the guard lives to thaw and kill the jobs'
// ranks, frozen ones included. (Before, Slurm killed the guard with the
// agent, and the frozen ranks stayed, frozen, for ever.)
func TestRealSlurmProctrackCgroupAgentKilled(t *testing.T) {
	needSlurm(t)
	bin := buildCosched(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A cluster of its own: the shared one tracks processes by parentage.
	c, err := slurmtest.Start(ctx, slurmtest.Options{Nodes: 2, CPUs: 4, Extra: []string{"ProctrackType=proctrack/cgroup"},
		CgroupConf: "CgroupPlugin=autodetect\nCgroupMountpoint=/sys/fs/cgroup\nConstrainCores=no\nConstrainRAMSpace=no\n"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Stop()
		// Slurm's own step cgroups, left empty on this path (see
		// docs/cgroups.md): removed, deepest first, so runs do not pile
		// them up on a host.
		for _, n := range c.Nodes {
			var dirs []string
			filepath.WalkDir(filepath.Join("/sys/fs/cgroup/freezer", "slurm_"+n), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				os.Remove(dirs[i])
			}
		}
	}()
	script, _ := filepath.Abs("slurm/bench-run.sbatch")
	work := t.TempDir()
	out := filepath.Join(work, "res")
	t.Cleanup(func() { killAgentsUnder(t, out) })
	env := append(benchEnv(bin), "COSCHED_MODES=gang", "COSCHED_SUSPEND=freezer")
	id := sbatch(ctx, t, c, work, env, "-N", "2", "--time=10", script, out, "--jobs", "20", "--mean-runtime", "10s", "--work", "wall")
	waitRanks(ctx, t, c, out, work, id)
	// Two jobs a node, one running, one frozen.
	deadline := time.Now().Add(60 * time.Second)
	for len(ranksUnder(out)) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d ranks running after a minute, want 4", len(ranksUnder(out)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	freezer := func(pid int) string { return proctest.Cgroup(pid, "freezer") }
	agents, guards := agentsUnder(out), guardsUnder(out)
	if len(agents) != 2 || len(guards) != 2 {
		t.Fatalf("agents %v, guards %v: want 2 of each", agents, guards)
	}
	for _, pid := range agents {
		if cg := freezer(pid); !strings.Contains(cg, "/slurm_") || !strings.Contains(cg, "/step_") {
			t.Fatalf("agent %d's freezer cgroup %q: not a Slurm step's (proctrack/cgroup not in effect)", pid, cg)
		}
	}
	for _, pid := range guards {
		if cg := freezer(pid); !strings.HasSuffix(cg, ".guard") {
			t.Errorf("guard %d's freezer cgroup %q: still the step's", pid, cg)
		}
	}
	frozen := 0
	for _, pid := range ranksUnder(out) {
		if proctest.Frozen(pid) {
			frozen++
		}
	}
	t.Logf("ranks %v, %d frozen", ranksUnder(out), frozen)
	for _, pid := range agents {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(out, "gang", "state", "agents", "*", "cleanup-guard.log"))
	deadline = time.Now().Add(30 * time.Second)
	for len(ranksUnder(out)) > 0 || len(guardsUnder(out)) > 0 {
		if time.Now().After(deadline) {
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, b)
			}
			t.Fatalf("30 s after their agents were killed: ranks %v, guards %v left", ranksUnder(out), guardsUnder(out))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(logs) != 2 {
		t.Errorf("guard logs %v, want 2", logs)
	}
	for _, l := range logs {
		if b, _ := os.ReadFile(l); !strings.Contains(string(b), "cleaned up after the agent") {
			t.Errorf("%s does not say its guard cleaned up:\n%s", l, b)
		}
	}
	if _, err := c.Run(ctx, "scancel", id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitJob(ctx, id); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for len(c.JobProcesses(id)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes of job %s left: %v", id, c.JobProcesses(id))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
