package node_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/node/jobcg"
	"github.com/cosched/cosched/sharing"
)

// Integration tests of job containment by cgroups (node/jobcg) with real
// agents and processes. They skip where this host's cgroups cannot be used.

// allocArg makes the test binary a rank that touches the given number of
// MiB and exits 0.
const allocArg = "__alloc"

func allocate(mib string) int {
	n, err := strconv.Atoi(mib)
	if err != nil {
		return 2
	}
	buf := make([]byte, n<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	return 0
}

func needCgroups(t *testing.T) {
	t.Helper()
	if why := jobcg.Usable("i15-probe-" + strconv.Itoa(os.Getpid())); why != "" {
		t.Skipf("cgroups unavailable here: %s", why)
	}
}

// A rank whose children double-fork into a new session (setsid): out of
// its process group's reach, not of its job's cgroup.
var escaper = []string{"sh", "-c", `setsid sh -c 'sleep 300 & wait' & sleep 300`}

func TestCancelLeavesNoSetsidDescendant(t *testing.T) {
	needCgroups(t)
	c := startCluster(t, clusterOpts{agents: 1, processors: 2, mode: sharing.Space})
	id := c.submit(api.JobSpec{Command: escaper, Processors: 2})
	var pids []int // per rank: sh, setsid sh, two sleeps
	eventually(t, 20*time.Second, func() error {
		if pids = c.jobProcs(id); len(pids) != 8 {
			return fmt.Errorf("%d of 8 processes", len(pids))
		}
		return nil
	})
	// The job's cgroup accounting is on the agent's /metrics while it
	// runs. At least 8: it is the most tasks seen at once (pids.current
	// counts threads), and a sample taken while a rank was still its shim,
	// a Go program of a few threads, beside the other's 4 processes counts
	// more (9 seen once).
	if n := metric(t, c.agents[0].APIAddr(), "cosched_job_processes"); n < 8 {
		t.Errorf("cosched_job_processes %v, want at least 8", n)
	}
	if cpu := metric(t, c.agents[0].APIAddr(), "cosched_job_cpu_seconds_total"); cpu <= 0 {
		t.Errorf("cosched_job_cpu_seconds_total %v, want > 0", cpu)
	}
	if st, err := c.client.Nodes(context.Background(), true); err != nil || st.Nodes[0].Stats == nil || st.Nodes[0].Stats.Cgroups != "v1" && st.Nodes[0].Stats.Cgroups != "v2" {
		t.Errorf("nodes --stats: cgroups not reported in use: %+v %v", st, err)
	}
	if err := c.client.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	c.waitGone(id)
	j := c.waitState(id, api.Cancelled, 10*time.Second)
	if j.Usage == nil || j.Usage.Processes < 8 {
		t.Errorf("usage %+v: want the job's processes accounted (8 at once)", j.Usage)
	}
	for _, p := range pids {
		if s := procState(p); s != 0 && s != 'Z' {
			t.Errorf("pid %d survived the cancel (state %c)", p, s)
		}
	}
}

func TestOutOfMemoryFailsOnlyThatJob(t *testing.T) {
	needCgroups(t)
	c := startCluster(t, clusterOpts{agents: 1, processors: 2, mode: sharing.Space})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	hog := c.submit(api.JobSpec{Name: "hog", Command: []string{self, allocArg, "256"}, Processors: 1, Memory: 48 << 20})
	calm := c.submit(api.JobSpec{Name: "calm", Command: []string{"sh", "-c", "sleep 0.5"}, Processors: 1, Memory: 48 << 20})
	j := c.waitState(hog, api.Failed, 20*time.Second)
	if !strings.Contains(j.Reason, "out of memory") || !strings.Contains(j.Reason, "peak") {
		t.Errorf("hog failed with %q, want an out-of-memory reason with the peak", j.Reason)
	}
	if j.Usage == nil || j.Usage.OOMKills < 1 || j.Usage.MemoryLimit != 48<<20 || j.Usage.PeakMemory < 24<<20 {
		t.Errorf("hog's usage %+v: want an OOM kill, the 48 MiB limit and a peak near it", j.Usage)
	}
	if k := c.waitState(calm, api.Completed, 20*time.Second); k.Usage == nil || k.Usage.OOMKills != 0 {
		t.Errorf("calm: %+v", k.Usage)
	}
}

// schedRuntime is a task's CPU time so far in ns (/proc/pid/schedstat).
func schedRuntime(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n
}

// Under --suspend freezer, gang rows still alternate: on every node the
// two jobs' ranks make progress (CPU time) in turns, never together for
// longer than a switch, and the ranks' parent (the agent, in this test
// process) never sees one of them stopped.
func TestFreezerRowsAlternateUnseen(t *testing.T) {
	needCgroups(t)
	c := startCluster(t, clusterOpts{agents: 3, processors: 1, mode: sharing.Gang, mpl: 2, slice: 40 * time.Millisecond, priority: 50, suspend: api.SuspendFreezer})
	st, err := c.client.Nodes(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.Stats == nil || n.Stats.Suspend != api.SuspendFreezer {
			t.Fatalf("node %s does not suspend with the freezer: %+v", n.Name, n.Stats)
		}
	}
	a := c.submit(api.JobSpec{Name: "a", Command: busy, Processors: 3})
	b := c.submit(api.JobSpec{Name: "b", Command: busy, Processors: 3})
	pa, pb := c.waitExec(a, 3, "sh"), c.waitExec(b, 3, "sh")
	byNode := ranksByNode(t, 3, pa, pb)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	normalPriority(t)
	type track struct {
		last    [2]int64
		ran     [2]int // intervals in which each job progressed
		overlap int    // consecutive intervals in which both did
	}
	tr := map[string]*track{}
	for name, p := range byNode {
		tr[name] = &track{last: [2]int64{schedRuntime(p[0]), schedRuntime(p[1])}}
	}
	deadline := time.Now().Add(3 * time.Second)
	last := time.Now()
	for time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
		// An interval the sampler overslept (a loaded machine, -race)
		// may contain a switch: both jobs progressing in it proves
		// nothing. Such intervals break a run of overlaps.
		short := time.Since(last) < 5*time.Millisecond
		last = time.Now()
		for name, p := range byNode {
			k := tr[name]
			var moved [2]bool
			for i := range 2 {
				now := schedRuntime(p[i])
				moved[i] = now > k.last[i]
				k.last[i] = now
				if moved[i] {
					k.ran[i]++
				}
				var info unix.Siginfo
				if err := unix.Waitid(unix.P_PID, p[i], &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil); err == nil && info.Signo != 0 {
					t.Fatalf("node %s: the parent of rank pid %d was notified of a stop (si_code %d): %s", name, p[i], info.Code, describeProc(p[i]))
				}
			}
			if moved[0] && moved[1] && short {
				k.overlap++
				// A switch spans one or two 2 ms intervals; a row
				// running in the wrong slice would span twenty.
				if k.overlap >= 5 {
					t.Fatalf("node %s: both jobs progressed for 5 intervals in a row (pids %v)", name, p)
				}
			} else {
				k.overlap = 0
			}
		}
	}
	for name, k := range tr {
		if k.ran[0] == 0 || k.ran[1] == 0 {
			t.Errorf("node %s: job a progressed in %d intervals, b in %d: the rows did not alternate", name, k.ran[0], k.ran[1])
		}
		t.Logf("node %s: a progressed in %d intervals, b in %d", name, k.ran[0], k.ran[1])
	}
	for _, id := range []int64{a, b} {
		if err := c.client.Cancel(context.Background(), id); err != nil {
			// A job ending on its own here (CI saw one, once, on a
			// loaded host) is a fault: say what ended it.
			j, jerr := c.client.Job(context.Background(), id)
			t.Fatalf("cancel job %d: %v; the job: %s %q, ranks %+v (%v)", id, err, j.State, j.Reason, j.Ranks, jerr)
		}
	}
	c.waitGone(a)
	c.waitGone(b)
}

// Agents advertise their memory (MemTotal less the reserve): a job whose
// processes need more than a processor's share waits, explained, while a
// smaller one runs.
func TestAdmissionByAdvertisedMemory(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 1, processors: 2, mode: sharing.Space})
	rep, err := c.client.Nodes(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != 1 || rep.Nodes[0].Memory <= 0 {
		t.Fatalf("nodes: %+v, want the agent's memory advertised", rep.Nodes)
	}
	big := c.submit(api.JobSpec{Command: []string{"true"}, Processors: 1, Memory: rep.Nodes[0].Memory})
	small := c.submit(api.JobSpec{Command: []string{"true"}, Processors: 1, Memory: 1 << 20})
	c.waitState(small, api.Completed, 20*time.Second)
	j, err := c.client.Job(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != api.Pending || !strings.Contains(j.Reason, "memory") {
		t.Errorf("a job needing all the node's memory per process: %s (%s), want pending for memory", j.State, j.Reason)
	}
}

// A job that ends normally takes with it what it daemonized.
func TestNormalEndLeavesNoDaemon(t *testing.T) {
	needCgroups(t)
	c := startCluster(t, clusterOpts{agents: 1, processors: 1, mode: sharing.Space})
	id := c.submit(api.JobSpec{Command: []string{"sh", "-c", "setsid sleep 300 & sleep 1"}, Processors: 1})
	var daemon []int
	eventually(t, 10*time.Second, func() error {
		if daemon = c.jobProcs(id); len(daemon) < 2 {
			return fmt.Errorf("%d processes, want the rank and its daemon", len(daemon))
		}
		return nil
	})
	j := c.waitState(id, api.Completed, 20*time.Second)
	eventually(t, 10*time.Second, func() error {
		if left := c.jobProcs(id); len(left) > 0 {
			return fmt.Errorf("left after the job ended: %v", left)
		}
		return nil
	})
	if j.Usage == nil || j.Usage.Processes < 2 {
		t.Errorf("usage %+v: want at least 2 processes seen", j.Usage)
	}
}

// TestStopWaitsForALaunchUnderWay: an agent told to stop while a launch
// is under way (its control connection's goroutine between taking the
// launch and starting its ranks) closes its cgroups only after it. Before,
// the launch made its job's cgroup again after Close had removed the
// subtree, and that empty cgroup was left on the host.
func TestStopWaitsForALaunchUnderWay(t *testing.T) {
	needCgroups(t)
	c := startCluster(t, clusterOpts{agents: 1, processors: 1, mode: sharing.Space})
	a := c.agents[0]
	release := node.HoldLaunch(a)
	stopped := make(chan error, 1)
	go func() { stopped <- a.Shutdown() }()
	// For 2 s the launch can still make its job's cgroup: the stop waits.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := node.CreateJobCgroup(a, 77); err != nil {
			release()
			t.Fatalf("the agent closed its cgroups while a launch was under way: %v", err)
		}
	}
	release()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not stop within 30 s of the launch's end")
	}
	if err := node.CreateJobCgroup(a, 78); !errors.Is(err, jobcg.ErrClosed) {
		t.Errorf("a cgroup made after the stop: err %v, want ErrClosed", err)
	}
	sub := node.CgroupSubtree(a)
	err := filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.Contains(p, sub) {
			t.Errorf("left after the stop: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
