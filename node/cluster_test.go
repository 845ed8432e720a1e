package node_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench"
	benchrank "github.com/cosched/cosched/bench/rank"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/internal/shimtest"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// The test binary doubles as the programs agents start: a benchmark
// rank, a comm program (see comm_test.go) and an agent process
// (agentproc_test.go). TestMain dispatches on the first argument. The
// rank shim is the real one, cmd/cosched-rank, built once per run
// (shimtest.Run): the test binary's start-up is ten times the shim's and
// starved past the rank manager's start timeout on a loaded host.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "bench-rank":
			os.Exit(benchRankMain())
		case agentProcArg:
			os.Exit(agentProcMain(os.Args[2:]))
		case allocArg:
			if len(os.Args) > 2 {
				os.Exit(allocate(os.Args[2]))
			}
		case commScenarioArg:
			if len(os.Args) > 2 {
				os.Exit(commScenario(os.Args[2]))
			}
		case commClaimArg:
			os.Exit(commClaim(os.Args[2:]))
		case mpiWireArg:
			os.Exit(mpiWireMain(os.Args[2:]))
		}
	}
	// The agents and ranks the tests start from this binary exit without
	// the race detector's one-second sleep at exit.
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	code := shimtest.Run(m)
	removeMPIKit()
	removePMIxKit()
	os.Exit(code)
}

// testShim is the rank shim the agents use: cmd/cosched-rank, as
// installed (TestMain built it).
func testShim(t testing.TB) []string {
	t.Helper()
	return shimtest.Command(t)
}

// testBenchRank is how the agents run benchmark ranks: this binary
// (TestMain's bench-rank). An agent given a shim would otherwise run
// Shim[0] bench-rank, which the shim binary is not.
func testBenchRank(t testing.TB) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "bench-rank"}
}

// benchRankMain runs a benchmark rank of the job its agent gives it
// (bench.EnvJob), as cosched bench-rank does.
func benchRankMain() int {
	j, err := bench.DecodeJob(os.Getenv(bench.EnvJob))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg, err := benchrank.ConfigOf(j)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := (benchrank.Program{Config: cfg}).Run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// testCluster is n agents in this process on loopback; agent 0 runs the
// controller.
type testCluster struct {
	t      testing.TB
	agents []*node.Agent
	client *api.Client
	dir    string
	opts   clusterOpts
	log    *zap.Logger
	// host is the loopback address the agents bind: one of this
	// cluster's own (multicast strobes aside, which want 127.0.0.1), so
	// that an agent of another cluster (an earlier test's, or another
	// package's test binary beside this one) still redialling a peer
	// that has gone cannot reach these through a recycled port: every
	// test's agents are n0, n1, … and, without a key, take any peer.
	host string
}

type clusterOpts struct {
	agents     int
	processors int // per agent
	mode       sharing.Mode
	mpl        int
	slice      time.Duration
	policy     gang.Policy
	backfill   gang.Backfill // the priority-backfill policies' options
	priority   int
	bandwidth  float64 // bcs: bytes per second per node
	key        *clusterkey.Key
	adminGID   *uint32
	shim       []string // default: testShim
	suspend    string   // api.SuspendSignal (default) or api.SuspendFreezer
	// controllerGrace is every agent's ControllerGrace (0: ranks die as
	// soon as the controller leaves).
	controllerGrace time.Duration
	journal         node.Journal // the controller's (default: its own, in memory)
	multicast       string       // every agent's StrobeMulticast
	// stateDir holds the agents' state directories (default: a test
	// temporary directory, which only its owner may enter).
	stateDir string
	// configure, if set, changes every agent's configuration.
	configure func(*node.Config)
}

func startCluster(t testing.TB, o clusterOpts) *testCluster {
	t.Helper()
	if o.processors == 0 {
		o.processors = 1
	}
	if o.policy == "" {
		o.policy = gang.EASY
	}
	if o.mpl == 0 {
		o.mpl = 1
	}
	if o.slice == 0 {
		o.slice = 20 * time.Millisecond
	}
	c := &testCluster{t: t, dir: o.stateDir, opts: o, host: "127.0.0.1"}
	if o.multicast == "" {
		c.host = fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
	}
	if c.dir == "" {
		c.dir = t.TempDir()
	}
	level := zap.WarnLevel
	if os.Getenv("COSCHED_TEST_LOG") == "debug" {
		level = zap.DebugLevel
	}
	c.log = zaptest.NewLogger(t, zaptest.Level(level))
	for i := 0; i < o.agents; i++ {
		cfg := c.agentConfig(i)
		if o.configure != nil {
			o.configure(&cfg)
		}
		if i > 0 {
			cfg.Join = []string{c.agents[0].GossipAddr()}
		}
		a, err := node.Start(cfg)
		if err != nil {
			c.stop()
			t.Fatalf("agent %d: %v", i, err)
		}
		c.agents = append(c.agents, a)
	}
	t.Cleanup(c.stop)
	c.client = api.NewClient(c.agents[0].APIAddr())
	if o.key != nil {
		c.client = api.NewKeyClient(o.key, c.agents[0].APIAddr())
	}
	c.waitNodes(o.agents)
	return c
}

// agentConfig is agent i's configuration (agent 0 runs the controller),
// without Join.
func (c *testCluster) agentConfig(i int) node.Config {
	o := c.opts
	cfg := node.Config{
		Name: fmt.Sprintf("n%d", i), Bind: net.JoinHostPort(c.host, "0"), Local: true,
		Processors: o.processors, StateDir: filepath.Join(c.dir, fmt.Sprintf("n%d", i)),
		Shim: o.shim, Priority: o.priority, ControllerGrace: o.controllerGrace, Log: c.log, Key: o.key, AdminGID: o.adminGID,
		Suspend: o.suspend, StrobeMulticast: o.multicast,
	}
	if cfg.Shim == nil {
		cfg.Shim = testShim(c.t)
	}
	cfg.BenchRank = testBenchRank(c.t)
	if i == 0 {
		cfg.Controller, cfg.Mode, cfg.MPL, cfg.Slice, cfg.Policy, cfg.Bandwidth = true, o.mode, o.mpl, o.slice, o.policy, o.bandwidth
		cfg.Backfill, cfg.Journal = o.backfill, o.journal
	}
	return cfg
}

func (c *testCluster) stop() {
	for i := len(c.agents) - 1; i >= 0; i-- {
		if err := c.agents[i].Shutdown(); err != nil {
			c.t.Logf("shutdown %s: %v", c.agents[i].Name(), err)
		}
	}
}

func (c *testCluster) waitNodes(n int) {
	c.t.Helper()
	eventually(c.t, 20*time.Second, func() error {
		rep, err := c.client.Nodes(context.Background(), false)
		if err != nil {
			return err
		}
		up := 0
		for _, nd := range rep.Nodes {
			if nd.State == "up" {
				up++
			}
		}
		if up != n {
			return fmt.Errorf("%d of %d agents up", up, n)
		}
		return nil
	})
}

// eventually retries f until it succeeds or the (generous) timeout passes.
func eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *testCluster) submit(spec api.JobSpec) int64 {
	c.t.Helper()
	if spec.TimeLimit.D == 0 {
		spec.TimeLimit = api.Duration{D: time.Minute}
	}
	id, err := c.client.Submit(context.Background(), spec)
	if err != nil {
		c.t.Fatalf("submit %+v: %v", spec, err)
	}
	return id
}

func (c *testCluster) waitState(id int64, want api.State, timeout time.Duration) api.Job {
	c.t.Helper()
	var j api.Job
	eventually(c.t, timeout, func() error {
		var err error
		if j, err = c.client.Job(context.Background(), id); err != nil {
			return err
		}
		if j.State != want {
			return fmt.Errorf("job %d is %s (%s), want %s", id, j.State, j.Reason, want)
		}
		return nil
	})
	return j
}

// jobPIDs finds the live processes of a job among this test's ranks: the
// children of this process, whose agents run in it (other tests on the
// machine have jobs of the same numbers).
func jobPIDs(t testing.TB, id int64) []int {
	t.Helper()
	self := os.Getpid()
	pids, err := proctest.JobPIDs(id, func(r proctest.Rank) bool { return r.PPID == self })
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// procState is a process's state letter (0 if gone).
func procState(pid int) byte { return proctest.State(pid) }

// rankNode reports which agent runs a pid (COSCHED_NODE).
func rankNode(pid int) string {
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "COSCHED_NODE="); ok {
			return v
		}
	}
	return ""
}

var busy = []string{"sh", "-c", "while :; do :; done"}

// startBound is how long the waits for ranks to appear, exec or go may
// take: many ranks' programs are this test binary, race-built, which at
// load 20–30 took over 20 s to start.
const startBound = time.Minute

func (c *testCluster) waitPIDs(id int64, n int) []int {
	c.t.Helper()
	var pids []int
	eventually(c.t, startBound, func() error {
		pids = jobPIDs(c.t, id)
		if len(pids) != n {
			return fmt.Errorf("job %d has %d processes, want %d", id, len(pids), n)
		}
		return nil
	})
	return pids
}

func (c *testCluster) waitGone(id int64) {
	c.t.Helper()
	eventually(c.t, startBound, func() error {
		if pids := jobPIDs(c.t, id); len(pids) > 0 {
			return fmt.Errorf("job %d still has processes %v", id, pids)
		}
		return nil
	})
}

// waitExec waits until a job has n processes that have exec'd program.
func (c *testCluster) waitExec(id int64, n int, program string) []int {
	c.t.Helper()
	var pids []int
	eventually(c.t, startBound, func() error {
		pids = pids[:0]
		for _, p := range jobPIDs(c.t, id) {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
			if strings.TrimSpace(string(comm)) == program {
				pids = append(pids, p)
			}
		}
		if len(pids) != n {
			return fmt.Errorf("job %d: %d processes run %s, want %d", id, len(pids), program, n)
		}
		return nil
	})
	return pids
}

// executing reports whether a process may be executing its program: it is
// not stopped (T), gone or a zombie, has no SIGSTOP pending, and is not in
// a frozen or freezing cgroup (a frozen task reads D).
func executing(pid int) bool {
	switch procState(pid) {
	case 'R', 'S', 'D':
	default:
		return false
	}
	if proctest.Frozen(pid) {
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	const sigstop = 1 << (19 - 1)
	for _, line := range strings.Split(string(status), "\n") {
		for _, key := range []string{"ShdPnd:", "SigPnd:"} {
			if v, ok := strings.CutPrefix(line, key); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				if err == nil && mask&sigstop != 0 {
					return false
				}
			}
		}
	}
	return true
}

// describeProc says what the tests know of a process, for failures.
func describeProc(pid int) string {
	cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	var freezer string
	for _, line := range strings.Split(string(cg), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "freezer" {
			st, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", parts[2], "freezer.state"))
			freezer = parts[2] + " " + strings.TrimSpace(string(st))
		}
	}
	return fmt.Sprintf("pid %d state %c freezer %s", pid, procState(pid), freezer)
}

// jobProcs is every process of a job of this cluster, its ranks'
// descendants included (jobPIDs counts the ranks only): by COSCHED_JOB
// and a relay socket in this cluster's directory (other test runs on the
// machine number their jobs from 1 too).
func (c *testCluster) jobProcs(id int64) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		c.t.Fatal(err)
	}
	job := "COSCHED_JOB=" + strconv.FormatInt(id, 10)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		vars := strings.Split(string(env), "\x00")
		ours := false
		for _, kv := range vars {
			if v, ok := strings.CutPrefix(kv, "COSCHED_RELAY="); ok {
				ours = strings.HasPrefix(v, c.dir) || strings.HasSuffix(v, fmt.Sprintf("-%d.sock", os.Getpid()))
			}
		}
		if ours && slices.Contains(vars, job) && procState(pid) != 'Z' && procState(pid) != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}
