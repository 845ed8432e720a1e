package node_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/node"
)

// keptCluster is two agent processes with --keep-ranks, each with one
// processor, time-sharing in gang mode: c0 also runs the controller.
type keptCluster struct {
	t      testing.TB
	dir    string
	c0, w1 *agentProc
}

func startKeptCluster(t testing.TB, grace time.Duration) *keptCluster {
	return startKeptClusterMode(t, grace, "gang")
}

// startKeptClusterMode is startKeptCluster in another time-sharing mode;
// extra flags go to both agents.
func startKeptClusterMode(t testing.TB, grace time.Duration, mode string, extra ...string) *keptCluster {
	dir := t.TempDir()
	common := []string{"--processors", "1", "--keep-ranks", "--mode", mode, "--mpl", "2", "--slice", "50ms", "--controller-grace", grace.String(),
		// Not weighed below the agents: on a host shared with other
		// clusters' busy jobs a keeper's start-up could starve past the
		// rank manager's start timeout.
		"--jobs-cpu-weight", "-1"}
	common = append(common, extra...)
	k := &keptCluster{t: t, dir: dir}
	// The agents stop leaving their kept ranks (SIGTERM detaches);
	// startAgentProc's cleanup kills them: nothing may outlive the test.
	k.c0 = startAgentProc(t, dir, "c0", append([]string{"--controller"}, common...)...)
	k.w1 = startAgentProc(t, dir, "w1", append(common, "--join", k.c0.ready.Gossip)...)
	waitComputeUp(t, k.client(), 2) // a submit before would not fit
	return k
}

func (k *keptCluster) client() *api.Client { return api.NewClient(k.c0.ready.API, k.w1.ready.API) }

// counterJob prints "start" then 1…n, one a tenth of a second: its output
// shows whether it ran once, without a restart.
func counterJob(n int) []string {
	return []string{"sh", "-c", fmt.Sprintf(`echo start; i=0; while [ $i -lt %d ]; do i=$((i+1)); echo $i; sleep 0.1; done`, n)}
}

// checkOneRun checks a counter rank's output: one start, 1…n in order.
func checkOneRun(t *testing.T, path string, n int) {
	t.Helper()
	checkCountedRun(t, path, n)
}

// checkCountedRun checks that the words of the output at path are one
// uninterrupted run: "start", 1…n, then last.
func checkCountedRun(t *testing.T, path string, n int, last ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"start"}
	for i := 1; i <= n; i++ {
		want = append(want, strconv.Itoa(i))
	}
	want = append(want, last...)
	if got := strings.Fields(string(b)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: %q, want one uninterrupted run (%s)", path, got, strings.Join(append([]string{"start", fmt.Sprintf("1…%d", n)}, last...), ", "))
	}
}

func (k *keptCluster) submit(cmd []string) int64 {
	k.t.Helper()
	id, err := k.client().Submit(context.Background(), api.JobSpec{Processors: 2, TimeLimit: api.Duration{D: 2 * time.Minute}, Command: cmd})
	if err != nil {
		k.t.Fatal(err)
	}
	return id
}

// outOf is where rank r of job id on agent name writes its stdout.
func (k *keptCluster) outOf(name string, id int64, r int) string {
	return filepath.Join(k.dir, name, "jobs", strconv.FormatInt(id, 10), fmt.Sprintf("rank-%d.out", r))
}

// rankOn is the rank of job j that runs on node name.
func rankOn(t *testing.T, j api.Job, name string) int {
	for i, r := range j.Ranks {
		if r.Node == name {
			return i
		}
	}
	t.Fatalf("job %d has no rank on %s: %+v", j.ID, name, j.Ranks)
	return -1
}

// keeperOf waits for the keeper of job id's rank on agent name: the rank
// process (its output in that agent's job directory) whose parent is not
// one.
func (k *keptCluster) keeperOf(name string, id int64) int {
	k.t.Helper()
	dir := filepath.Join(k.dir, name, "jobs", strconv.FormatInt(id, 10))
	var keeper int
	eventually(k.t, 20*time.Second, func() error {
		ranks, err := proctest.Ranks(proctest.OutputUnder(dir))
		if err != nil {
			return err
		}
		pids := map[int]bool{}
		for _, r := range ranks {
			pids[r.PID] = true
		}
		var keepers []int
		for _, r := range ranks {
			if !pids[r.PPID] {
				keepers = append(keepers, r.PID)
			}
		}
		if len(keepers) != 1 || len(ranks) < 2 {
			return fmt.Errorf("job %d on %s: processes %+v, want a keeper and its program", id, name, ranks)
		}
		keeper = keepers[0]
		return nil
	})
	return keeper
}

// jobCgroups lists agent name's job cgroups (v2, or any v1 hierarchy).
func (k *keptCluster) jobCgroups(name string) []string {
	sum := sha256.Sum256([]byte(filepath.Join(k.dir, name)))
	sub := name + "-" + hex.EncodeToString(sum[:4])
	var out []string
	for _, pat := range []string{"/sys/fs/cgroup/cosched/" + sub + "/job-*", "/sys/fs/cgroup/*/cosched/" + sub + "/job-*"} {
		m, _ := filepath.Glob(pat)
		out = append(out, m...)
	}
	return out
}

// waitLines waits until a file has at least n lines.
func waitLines(t testing.TB, path string, n int) {
	eventually(t, 20*time.Second, func() error {
		b, _ := os.ReadFile(path)
		if got := strings.Count(string(b), "\n"); got < n {
			return fmt.Errorf("%s: %d lines, want %d", path, got, n)
		}
		return nil
	})
}

// A shell job runs on while first a compute agent is stopped with SIGTERM
// (with --keep-ranks it leaves its ranks, as for `systemctl restart`) and
// then the agent that runs the controller is killed with SIGKILL, each
// started again: its ranks are the same processes, each rank's output
// shows one run, and the job completes.
func TestKeptRanksOutliveTheirAgent(t *testing.T) {
	k := startKeptCluster(t, time.Minute)
	const n = 40
	id := k.submit(counterJob(n))
	j := waitJob(t, k.client(), id, 20*time.Second, inState(api.Running))
	keepers := map[string]int{"c0": k.keeperOf("c0", id), "w1": k.keeperOf("w1", id)}
	before := sorted([]int{keepers["c0"], keepers["w1"]})
	r1 := rankOn(t, j, "w1")
	waitLines(t, k.outOf("w1", id, r1), 3)

	for _, step := range []struct {
		p, other *agentProc
		term     bool
	}{{k.w1, k.c0, true}, {k.c0, k.w1, false}} {
		keeper := keepers[step.p.name]
		if step.term {
			step.p.stop()
		} else {
			step.p.kill9(t)
		}
		if !alive(keeper) {
			t.Fatalf("the keeper of %s's rank (pid %d) died with its agent", step.p.name, keeper)
		}
		eventually(t, 10*time.Second, func() error { // time-shared: stopped while its agent is away
			if s := procState(keeper); s != 'T' {
				return fmt.Errorf("keeper %d in state %c while its agent is away, want T (stopped)", keeper, s)
			}
			return nil
		})
		step.p.args = append(step.p.args, "--join", step.other.ready.Gossip)
		gossip := step.p.ready.Gossip
		restarted := time.Now()
		step.p.start(t, k.dir)
		if step.p.ready.Gossip != gossip {
			// Another address: the others refuse it until they declare
			// the first dead (seconds); not an error, but slower.
			t.Logf("%s came back at %s, not at its gossip address %s", step.p.name, step.p.ready.Gossip, gossip)
		}
		lines := func() int {
			b, _ := os.ReadFile(k.outOf(step.p.name, id, rankOn(t, j, step.p.name)))
			return strings.Count(string(b), "\n")
		}
		at := lines()
		eventually(t, 30*time.Second, func() error {
			if lines() <= at {
				return fmt.Errorf("%s's rank has not run since its agent's restart", step.p.name)
			}
			return nil
		})
		t.Logf("%s: its rank ran again %v after the agent's restart", step.p.name, time.Since(restarted).Round(time.Millisecond))
	}
	j = waitJob(t, k.client(), id, 60*time.Second, inState(api.Completed))
	if got := sorted(rankPIDs(j)); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Errorf("rank pids %v at the end, %v at the start: restarted", got, before)
	}
	for i, r := range j.Ranks {
		checkOneRun(t, k.outOf(r.Node, id, i), n)
	}
}

// An agent kept down past the grace: its jobs fail with the reason; when
// it comes back its kept ranks are killed, and nothing is left.
func TestKeptRanksPastTheGraceAreKilled(t *testing.T) {
	const grace = 3 * time.Second
	k := startKeptCluster(t, grace)
	id := k.submit([]string{"sleep", "120"})
	waitJob(t, k.client(), id, 20*time.Second, inState(api.Running))
	keeper := k.keeperOf("w1", id)
	if len(k.jobCgroups("w1")) == 0 {
		t.Log("no job cgroups on this host: only the processes are checked")
	}
	k.w1.kill9(t)
	j := waitJob(t, api.NewClient(k.c0.ready.API), id, 30*time.Second, inState(api.Failed))
	if !strings.Contains(j.Reason, "w1") || !strings.Contains(j.Reason, "within "+grace.String()) {
		t.Errorf("reason %q: want it to name w1 and the grace", j.Reason)
	}
	if !alive(keeper) {
		t.Fatalf("keeper %d died before its agent came back", keeper)
	}
	k.w1.args = append(k.w1.args, "--join", k.c0.ready.Gossip)
	k.w1.start(t, k.dir)
	eventually(t, 20*time.Second, func() error {
		if alive(keeper) && procState(keeper) != 'Z' {
			return fmt.Errorf("keeper %d of a failed job still runs", keeper)
		}
		return nil
	})
	eventually(t, 10*time.Second, func() error {
		if left, _ := filepath.Glob(filepath.Join(k.dir, "w1", "ranks", "*")); len(left) > 0 {
			return fmt.Errorf("keeper records left: %v", left)
		}
		if left := k.jobCgroups("w1"); len(left) > 0 {
			return fmt.Errorf("job cgroups left: %v", left)
		}
		return nil
	})
}

// A keeper killed by hand fails its job with that reason.
func TestKeeperKilledFailsItsJob(t *testing.T) {
	k := startKeptCluster(t, time.Minute)
	id := k.submit([]string{"sleep", "120"})
	waitJob(t, k.client(), id, 20*time.Second, inState(api.Running))
	if err := syscall.Kill(k.keeperOf("w1", id), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	j := waitJob(t, k.client(), id, 20*time.Second, inState(api.Failed))
	if r := j.Ranks[rankOn(t, j, "w1")]; !strings.Contains(r.Error, "keeper") {
		t.Errorf("rank on w1: %+v; reason %q: want the keeper named", r, j.Reason)
	}
}

// A state directory whose kept ranks cannot be read, or are another
// agent's, is refused with an error naming the file, and the process it
// names is not signalled.
func TestKeptStateDirRefused(t *testing.T) {
	for _, tc := range []struct{ name, record, want string }{
		{"corrupt", `{"version":1,`, "is corrupt"},
		{"foreign", `{"version":1,"owner":"other","job":1,"rank":0,"pid":PID,"start_ticks":1}`, `belongs to agent "other"`},
		{"newer", `{"version":9,"owner":"n0","job":1,"rank":0,"pid":PID,"start_ticks":1}`, "version 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := startSleep(t)
			path := filepath.Join(dir, "ranks", "1.0.keeper")
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(tc.record, "PID", strconv.Itoa(victim))), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := node.Start(node.Config{Name: "n0", Bind: "127.0.0.1:0", Local: true, StateDir: dir, KeepRanks: true, Shim: testShim(t)})
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v; want a refusal naming %s (%s)", err, path, tc.want)
			}
			if s := procState(victim); s != 'S' && s != 'R' {
				t.Errorf("the process the record names is in state %c: signalled", s)
			}
		})
	}
}

// startSleep starts a process for a record to name; it is killed at the
// end of the test.
func startSleep(t *testing.T) int {
	var attr syscall.ProcAttr
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "60"}, &attr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	})
	return pid
}

// What an agent's restart costs a gang job: the same 2-rank counter job
// (3 s of work) runs once undisturbed and once while its compute agent is
// restarted (SIGTERM, which with --keep-ranks leaves the ranks, as
// systemctl restart does; or SIGKILL, a crash) and started again at once;
// the metrics are both
// runtimes, their ratio, and the times from the stop to the agent serving
// again and to its rank running again.
func BenchmarkAgentRestartCost(b *testing.B) {
	b.Run("sigterm", func(b *testing.B) { benchRestartCost(b, false) })
	b.Run("sigkill", func(b *testing.B) { benchRestartCost(b, true) })
}

func benchRestartCost(b *testing.B, kill bool) {
	for range b.N {
		k := startKeptCluster(b, time.Minute)
		var ready, running time.Duration // from the kill
		run := func(restart bool) time.Duration {
			id := k.submit(counterJob(30))
			if restart {
				out := k.outOf("w1", id, 1)
				waitLines(b, out, 3)
				keeper := k.keeperOf("w1", id)
				killed := time.Now()
				if kill {
					k.w1.kill9(b)
				} else {
					k.w1.stop()
				}
				eventually(b, 10*time.Second, func() error {
					if procState(keeper) != 'T' {
						return fmt.Errorf("keeper %d not stopped", keeper)
					}
					return nil
				})
				b0, _ := os.ReadFile(out)
				k.w1.args = append(k.w1.args, "--join", k.c0.ready.Gossip)
				k.w1.start(b, k.dir)
				ready = time.Since(killed)
				waitLines(b, out, strings.Count(string(b0), "\n")+1)
				running = time.Since(killed)
			}
			var j api.Job
			eventually(b, 60*time.Second, func() error {
				var err error
				if j, err = k.client().Job(context.Background(), id); err != nil {
					return err
				}
				if !j.State.Done() {
					return fmt.Errorf("job %d is %s", id, j.State)
				}
				return nil
			})
			if j.State != api.Completed {
				b.Fatalf("job %d is %s (%s)", id, j.State, j.Reason)
			}
			return j.Elapsed.D
		}
		base, restarted := run(false), run(true)
		b.ReportMetric(base.Seconds(), "s-undisturbed")
		b.ReportMetric(restarted.Seconds(), "s-restarted")
		b.ReportMetric(restarted.Seconds()/base.Seconds(), "ratio")
		b.ReportMetric(ready.Seconds(), "s-stop-to-ready")
		b.ReportMetric(running.Seconds(), "s-stop-to-running")
	}
}

// Two agents started at once on one state directory (a unit started twice,
// an operator's typo): exactly one starts; the other is refused, naming
// the directory, before it reads the kept ranks or touches a cgroup.
func TestTwoAgentsRaceForOneStateDir(t *testing.T) {
	dir := t.TempDir()
	type result struct {
		a   *node.Agent
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			a, err := node.Start(node.Config{Name: "n0", Bind: "127.0.0.1:0", Local: true, StateDir: dir, KeepRanks: true, Shim: testShim(t)})
			results <- result{a, err}
		}()
	}
	var started []*node.Agent
	var refusals []error
	for range 2 {
		r := <-results
		if r.err == nil {
			started = append(started, r.a)
		} else {
			refusals = append(refusals, r.err)
		}
	}
	for _, a := range started {
		a.Shutdown()
	}
	if len(started) != 1 || len(refusals) != 1 {
		t.Fatalf("%d agents started, refusals %v; want exactly one of each", len(started), refusals)
	}
	if err := refusals[0]; !strings.Contains(err.Error(), "in use by a running agent") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("the second agent: %v; want a refusal naming %s", err, dir)
	}
}
