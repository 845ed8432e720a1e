package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/deploy/slurmtest"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/jss/metrics"
)

// The tests below run the scripts on a real Slurm (deploy/slurmtest): one
// cluster of six 4-CPU nodes for the package, started by the first test
// that needs it and stopped by TestMain.
var (
	slurmOnce    sync.Once
	slurmCluster *slurmtest.Cluster
	slurmErr     error
)

func realSlurm(t *testing.T) *slurmtest.Cluster {
	t.Helper()
	needSlurm(t)
	slurmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		slurmCluster, slurmErr = slurmtest.Start(ctx, slurmtest.Options{Nodes: 6, CPUs: 4})
	})
	if slurmErr != nil {
		t.Fatal(slurmErr)
	}
	return slurmCluster
}

// needSlurm skips a test that starts a real Slurm where it cannot (or in
// -short runs).
func needSlurm(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real Slurm")
	}
	if err := slurmtest.Available(); err != nil {
		t.Skip(err)
	}
}

func stopRealSlurm() {
	if slurmCluster != nil {
		slurmCluster.Stop()
	}
}

// sbatch submits a batch script from dir (where its output file goes) and
// returns the job id.
func sbatch(ctx context.Context, t *testing.T, c *slurmtest.Cluster, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := c.Command(ctx, "sbatch", append([]string{"--parsable"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch %v: %v\n%s", args, err, out)
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	return id
}

var tinySweep = []string{"--mode", "space,gang,bcs", "--mpl", "1,2", "--load", "0.4,0.8", "--jobs", "12"}

// A sharded sweep submitted by submit-sweep.sh (a 3-task array, then the
// merge depending on it) gives exactly the unsharded sweep's files; a
// --parallel no node can hold is refused before anything is submitted.
func TestRealSlurmSweep(t *testing.T) {
	c := realSlurm(t)
	bin := buildCosched(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	work := t.TempDir()
	out := filepath.Join(work, "sharded")
	flags := append([]string{"--parallel", "2"}, tinySweep...)

	script, _ := filepath.Abs("slurm/submit-sweep.sh")
	cmd := c.Command(ctx, "bash", append([]string{script, out, "3"}, flags...)...)
	cmd.Dir = work
	cmd.Env = append(cmd.Env, "COSCHED="+bin)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("submit-sweep.sh: %v\n%s", err, b)
	}
	m := regexp.MustCompile(`^sweep: array job (\d+) \(3 shards, 2 CPUs each\), then merge and plot job (\d+); results in `).FindSubmatch(b)
	if m == nil {
		t.Fatalf("submit-sweep.sh's output:\n%s", b)
	}
	array, merge := string(m[1]), string(m[2])
	// The tasks asked for the sweep's --parallel in CPUs.
	if job, err := c.Run(ctx, "scontrol", "-o", "show", "job", array); err != nil || !strings.Contains(job, " CPUs/Task=2 ") {
		t.Errorf("array tasks: %v\n%s", err, job)
	}
	states, err := c.WaitJob(ctx, merge)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := c.WaitJob(ctx, array)
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(work, "cosched-sweep*.out"))
	if len(states) != 1 || states[0] != "COMPLETED" || len(tasks) != 3 || strings.Count(strings.Join(tasks, " "), "COMPLETED") != 3 {
		t.Fatalf("merge %v, array tasks %v; job outputs:\n%s", states, tasks, catFiles(logs))
	}
	if len(logs) != 4 {
		t.Errorf("want 3 task outputs and the merge's in %s, got %v", work, logs)
	}

	whole := filepath.Join(work, "whole")
	if b, err := c.Command(ctx, bin, append([]string{"sim", "sweep", "--out", whole}, tinySweep...)...).CombinedOutput(); err != nil {
		t.Fatalf("unsharded sweep: %v\n%s", err, b)
	}
	for _, name := range []string{"results.csv", "results.json"} {
		a, _ := os.ReadFile(filepath.Join(out, name))
		b, _ := os.ReadFile(filepath.Join(whole, name))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: merged shards differ from the unsharded sweep (%d and %d bytes)", name, len(a), len(b))
		}
	}
	if plots, _ := filepath.Glob(filepath.Join(out, "plots", "*.svg")); len(plots) == 0 {
		t.Error("no plots written")
	}

	// Too big for every node: a clear error, nothing submitted.
	before, _ := c.Run(ctx, "squeue", "-h", "-t", "all", "-o", "%i")
	cmd = c.Command(ctx, "bash", script, filepath.Join(work, "big"), "2", "--parallel", "64", "--load", "0.5")
	cmd.Env = append(cmd.Env, "COSCHED="+bin)
	b, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "--parallel 64 needs 64 CPUs per array task, but the largest node has 4") {
		t.Errorf("--parallel 64 on 4-CPU nodes: %v\n%s", err, b)
	}
	// More tasks than Slurm's MaxArraySize (1001): sbatch's refusal, then
	// the script's own line.
	cmd = c.Command(ctx, "bash", script, filepath.Join(work, "many"), "5000", "--load", "0.5")
	cmd.Env = append(cmd.Env, "COSCHED="+bin)
	b, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "sbatch: error") || !strings.Contains(string(b), "submit-sweep.sh: sbatch refused the array of 5000 tasks of 1 CPUs") {
		t.Errorf("5000 shards: %v\n%s", err, b)
	}
	if after, _ := c.Run(ctx, "squeue", "-h", "-t", "all", "-o", "%i"); after != before {
		t.Errorf("jobs submitted despite the errors:\n%s", after)
	}
}

// checkSlowdowns returns what in a bench run's results breaks the
// slowdown's definition: every job's slowdown, measured and simulated, and
// every figure of them, at least 1.
func checkSlowdowns(run *experiment.Run) []string {
	var bad []string
	for _, m := range run.Modes {
		s := m.Summary.Metrics.Slowdown
		if s.Mean < 1 || s.Median < 1 || s.P95 < 1 || s.Max < 1 {
			bad = append(bad, fmt.Sprintf("%v: measured slowdown %+v", m.Mode, s))
		}
		if m.Simulated == nil || m.Simulated.MeanSlowdown < 1 {
			bad = append(bad, fmt.Sprintf("%v: simulated %+v", m.Mode, m.Simulated))
		}
		for _, j := range m.Jobs {
			if sd := metrics.Slowdown(j.End-j.Submit, j.Dedicated); j.Completed() && sd < 1 {
				bad = append(bad, fmt.Sprintf("%v: measured job %d: slowdown %g", m.Mode, j.Seq, sd))
			}
		}
		for _, j := range m.SimJobs {
			if sd := metrics.Slowdown(j.End-run.WorkloadJobs[j.Seq].Submit, j.Runtime); sd < 1 {
				bad = append(bad, fmt.Sprintf("%v: simulated job %d: slowdown %g", m.Mode, j.Seq, sd))
			}
		}
		if len(m.SimJobs) == 0 {
			bad = append(bad, fmt.Sprintf("%v: no simulated jobs", m.Mode))
		}
	}
	return bad
}

// benchEnv is bench-run.sbatch's environment for a test: agents on
// loopback sharing this host (wall-clock work, one processor each), no
// real-time priority.
func benchEnv(bin string) []string {
	return []string{"COSCHED=" + bin, "COSCHED_PROCESSORS=1", "COSCHED_REALTIME_PRIORITY=0", "COSCHED_START_TIMEOUT=60"}
}

// bench-run.sbatch on 2 nodes measures space, gang and bcs in turn, with
// the script's own settings (MPL 3 but one row for space, ports chosen per
// agent): every job completes in every mode, the reports are written, and
// no agent or rank is left.
func TestRealSlurmBenchRun(t *testing.T) {
	c := realSlurm(t)
	bin := buildCosched(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	work := t.TempDir()
	out := filepath.Join(work, "res")
	t.Cleanup(func() { killAgentsUnder(t, out) })
	script, _ := filepath.Abs("slurm/bench-run.sbatch")
	id := sbatch(ctx, t, c, work, append(benchEnv(bin), "COSCHED_MODES=space,gang,bcs"),
		"-N", "2", "--time=5", script, out, "--jobs", "3", "--mean-runtime", "1s", "--work", "wall")
	states, err := c.WaitJob(ctx, id)
	log, _ := os.ReadFile(filepath.Join(work, "cosched-bench-"+id+".out"))
	if err != nil {
		t.Fatalf("%v\njob output:\n%s", err, log)
	}
	if len(states) != 1 || states[0] != "COMPLETED" {
		t.Fatalf("job %s: %v; output:\n%s", id, states, log)
	}
	t.Logf("job output:\n%s", log)
	for _, mode := range []string{"space", "gang", "bcs"} {
		if !strings.Contains(string(log), "bench-run: "+mode+": 2 agents up, 2 processors") {
			t.Errorf("%s: no agents-up line in the job's output:\n%s", mode, log)
		}
		var res experiment.Run
		b, err := os.ReadFile(filepath.Join(out, mode, "results.json"))
		if err == nil {
			err = json.Unmarshal(b, &res)
		}
		if err != nil || res.Nodes != 2 || len(res.Modes) != 1 || string(res.Modes[0].Mode) != mode || res.Modes[0].Summary.Completed != 3 {
			t.Errorf("%s: results.json: %v %+v", mode, err, res.Modes)
			continue
		}
		for _, bad := range checkSlowdowns(&res) {
			t.Error(bad)
		}
		for _, name := range []string{"report.md", "results.csv"} {
			if fi, err := os.Stat(filepath.Join(out, mode, name)); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %s: %v", mode, name, err)
			}
		}
		// Both nodes of the allocation ran an agent, stopped by a SIGTERM
		// of its own (not srun's SIGKILL): it left the cluster.
		logs, _ := filepath.Glob(filepath.Join(out, mode, "state", "agents", "n*", "agent.log"))
		if len(logs) != 2 {
			t.Errorf("%s: agent logs %v, want 2", mode, logs)
		}
		for _, l := range logs {
			if b, _ := os.ReadFile(l); !strings.Contains(string(b), "signal received: leaving the cluster") {
				t.Errorf("%s: %s: the agent was not stopped by a signal of its own:\n%s", mode, l, b)
			}
		}
	}
	if left := agentsUnder(out); len(left) > 0 {
		t.Errorf("agents left running: %v", left)
	}
	if left := guardsUnder(out); len(left) > 0 {
		t.Errorf("cleanup guards left running after their agents stopped: %v", left)
	}
}

// A bench run cancelled with scancel, and one past its time limit, stop
// their agents and ranks: no process of theirs is left. The two run side by
// side (Slurm checks time limits every 30 s: the limit is set to 0 once
// the run is under way, so it expires at the next check). The cancelled
// one suspends with the freezer, whose frozen ranks an agent SIGKILLed by
// srun would leave frozen for ever but for its cleanup guard.
func TestRealSlurmBenchRunStopped(t *testing.T) {
	c := realSlurm(t)
	bin := buildCosched(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	script, _ := filepath.Abs("slurm/bench-run.sbatch")
	type run struct {
		how, id, work, out string
	}
	var runs []*run
	for _, how := range []string{"scancel", "time limit"} {
		r := &run{how: how, work: t.TempDir()}
		r.out = filepath.Join(r.work, "res")
		t.Cleanup(func() { killAgentsUnder(t, r.out) })
		// Long jobs: the run is still measuring when it is stopped.
		env := append(benchEnv(bin), "COSCHED_MODES=gang")
		if how == "scancel" {
			// Suspended with the freezer: an agent srun kills outright
			// leaves its frozen ranks to its cleanup guard.
			env = append(env, "COSCHED_SUSPEND=freezer")
		}
		r.id = sbatch(ctx, t, c, r.work, env,
			"-N", "2", "--time=10", script, r.out, "--jobs", "20", "--mean-runtime", "10s", "--work", "wall")
		runs = append(runs, r)
	}
	for _, r := range runs {
		ranks := waitRanks(ctx, t, c, r.out, r.work, r.id)
		if n := len(agentsUnder(r.out)); n != 2 {
			t.Errorf("%s: %d agents running, want 2", r.how, n)
		}
		// The check below sees the job's processes: its slurmstepd, the
		// script, the sruns, the agents.
		if n := len(c.JobProcesses(r.id)); n < 4 {
			t.Errorf("%s: %d processes of job %s seen", r.how, n, r.id)
		}
		t.Logf("%s: %d ranks running at %v", r.how, len(ranks), time.Now().Format(time.TimeOnly))
		if r.how == "scancel" {
			_, err := c.Run(ctx, "scancel", r.id)
			if err != nil {
				t.Fatal(err)
			}
		} else if _, err := c.Run(ctx, "scontrol", "update", "JobId="+r.id, "TimeLimit=0"); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"scancel": "CANCELLED", "time limit": "TIMEOUT"}
	for _, r := range runs {
		states, err := c.WaitJob(ctx, r.id)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: job %s ended %v at %v", r.how, r.id, states, time.Now().Format(time.TimeOnly))
		if len(states) != 1 || states[0] != want[r.how] {
			t.Errorf("%s: job %s ended %v, want %s", r.how, r.id, states, want[r.how])
		}
	}
	// Slurm reports the job ended once its steps are gone; give the
	// kernel a moment to reap, then nothing of the runs may be left.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		for _, r := range runs {
			if a := agentsUnder(r.out); len(a) > 0 {
				left = append(left, fmt.Sprintf("%s: agents %v", r.how, a))
			}
			if g := guardsUnder(r.out); len(g) > 0 {
				left = append(left, fmt.Sprintf("%s: cleanup guards %v", r.how, g))
			}
			if rk := ranksUnder(r.out); len(rk) > 0 {
				left = append(left, fmt.Sprintf("%s: ranks %v", r.how, rk))
			}
			for _, pid := range c.JobProcesses(r.id) {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				left = append(left, fmt.Sprintf("%s: process %d of job %s: %q", r.how, pid, r.id, cmdline))
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left running after the jobs ended: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The cancelled run's agents suspended with the freezer, each with a
	// cleanup guard.
	logs, _ := filepath.Glob(filepath.Join(runs[0].out, "gang", "state", "agents", "*", "agent.log"))
	if len(logs) != 2 {
		t.Errorf("scancel: agent logs %v, want 2", logs)
	}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if !strings.Contains(string(b), `"suspend":"freezer"`) || !strings.Contains(string(b), "cleanup guard started") {
			t.Errorf("scancel: %s: no start with the freezer and a cleanup guard:\n%s", l, b)
		}
	}
	// The script's exit removed the cluster key.
	for _, r := range runs {
		if keys, _ := filepath.Glob(filepath.Join(r.out, "*", "state", "cluster.key")); len(keys) > 0 {
			t.Errorf("%s: key file left: %v", r.how, keys)
		}
	}
	// An agent that srun killed outright (see docs/slurm.md) had its
	// cleanup guard clean up after it; what a guard could not do, the
	// command the docs give does (and it must succeed either way).
	for _, r := range runs {
		dirs, _ := filepath.Glob(filepath.Join(r.out, "*", "state", "agents", "*"))
		for _, dir := range dirs {
			if b, err := c.Command(ctx, bin, "agent", "--cleanup", "--name", filepath.Base(dir), "--state-dir", dir).CombinedOutput(); err != nil {
				t.Errorf("%s: agent --cleanup of %s: %v\n%s", r.how, dir, err, b)
			}
		}
	}
}

// ranksUnder lists the rank processes whose output goes under dir.
func ranksUnder(dir string) []int {
	ranks, _ := proctest.Ranks(func(r proctest.Rank) bool { return strings.HasPrefix(r.Stdout, dir) })
	var pids []int
	for _, r := range ranks {
		pids = append(pids, r.PID)
	}
	return pids
}

// waitRanks waits until a bench run's job has ranks running under out.
func waitRanks(ctx context.Context, t *testing.T, c *slurmtest.Cluster, out, work, id string) []int {
	t.Helper()
	for {
		if r := ranksUnder(out); len(r) > 0 {
			return r
		}
		select {
		case <-ctx.Done():
			state, reason, _ := c.JobState(context.Background(), id)
			log, _ := os.ReadFile(filepath.Join(work, "cosched-bench-"+id+".out"))
			t.Fatalf("job %s (%s, %s): no rank started: %v\noutput:\n%s\n%s", id, state, reason, ctx.Err(), log, c.Logs())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// An agent that cannot start (a bad setting) fails the run with its log,
// before bench run; a port another program holds fails it naming the
// variables to set. Nothing is left either way.
func TestRealSlurmBenchRunAgentFails(t *testing.T) {
	c := realSlurm(t)
	bin := buildCosched(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	work := t.TempDir()
	out := filepath.Join(work, "res")
	t.Cleanup(func() { killAgentsUnder(t, out) })
	script, _ := filepath.Abs("slurm/bench-run.sbatch")
	id := sbatch(ctx, t, c, work, append(benchEnv(bin), "COSCHED_SLICE=soon"), "-N", "2", "--time=5", script, out, "--jobs", "1")
	states, err := c.WaitJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(work, "cosched-bench-"+id+".out"))
	if len(states) != 1 || states[0] != "FAILED" || !strings.Contains(string(log), "an agent exited") ||
		!strings.Contains(string(log), "--slice") || strings.Contains(string(log), "agents up") {
		t.Errorf("job %s ended %v; output:\n%s", id, states, log)
	}
	if left := agentsUnder(out); len(left) > 0 {
		t.Errorf("agents left running: %v", left)
	}
	if left := guardsUnder(out); len(left) > 0 {
		t.Errorf("cleanup guards left running after their agents stopped: %v", left)
	}
}

// A port another program holds fails the run at once, naming the
// variables to set.
func TestRealSlurmBenchRunPortInUse(t *testing.T) {
	c := realSlurm(t)
	bin := buildCosched(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	work := t.TempDir()
	out := filepath.Join(work, "res")
	t.Cleanup(func() { killAgentsUnder(t, out) })
	script, _ := filepath.Abs("slurm/bench-run.sbatch")
	id := sbatch(ctx, t, c, work, append(benchEnv(bin), fmt.Sprintf("COSCHED_API_PORT=%d", port)),
		"-N", "2", "--time=5", script, out, "--jobs", "1")
	states, err := c.WaitJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(work, "cosched-bench-"+id+".out"))
	if len(states) != 1 || states[0] != "FAILED" ||
		!strings.Contains(string(log), fmt.Sprintf("a port is in use (COSCHED_PORT=0, COSCHED_API_PORT=%d): set COSCHED_PORT and COSCHED_API_PORT", port)) {
		t.Errorf("job %s ended %v; output:\n%s", id, states, log)
	}
	if left := agentsUnder(out); len(left) > 0 {
		t.Errorf("agents left running: %v", left)
	}
	if left := guardsUnder(out); len(left) > 0 {
		t.Errorf("cleanup guards left running after their agents stopped: %v", left)
	}
}

func catFiles(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "==> %s <==\n%s\n", p, data)
	}
	return b.String()
}
