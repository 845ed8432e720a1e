package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/sharing"
)

// Gang mode, two jobs that each fill the machine (so neither can also run
// in the other's row): sampling /proc shows the rows alternating, and on no
// node both jobs' ranks executing at once. A rank counts as executing when
// its state is R, S or D and it has no SIGSTOP pending: a stopped rank whose
// state still reads R (it has not had a CPU yet to take the stop on) will
// not execute another instruction of its program. An overlap must last
// 0.5 ms to count: a real one lasts a slice, while the kernel's stop path
// has a window of microseconds between dequeuing SIGSTOP and state T.
//
// Under --suspend freezer the same holds, a rank in a frozen cgroup
// counting as not executing.
func TestGangRowsAlternate(t *testing.T) {
	for _, suspend := range []string{api.SuspendSignal, api.SuspendFreezer} {
		t.Run(suspend, func(t *testing.T) {
			if suspend == api.SuspendFreezer {
				needCgroups(t)
			}
			gangRowsAlternate(t, suspend)
		})
	}
}

// ranksByNode pairs, node by node, a rank of job a (pids pa) with one of
// job b (pb), failing the test unless they are on nodes nodes.
func ranksByNode(t *testing.T, nodes int, pa, pb []int) map[string][2]int {
	t.Helper()
	byNode := map[string][2]int{}
	for i, pids := range [][]int{pa, pb} {
		for _, p := range pids {
			e := byNode[rankNode(p)]
			e[i] = p
			byNode[rankNode(p)] = e
		}
	}
	if len(byNode) != nodes {
		t.Fatalf("ranks by node: %v", byNode)
	}
	return byNode
}

// normalPriority sets this thread (locked to its goroutine by the
// caller) to the normal scheduling policy. The agents run in this test
// process and raise all its threads to real-time priority; a sampler must
// not, or it would compete with the ranks it watches.
func normalPriority(t *testing.T) {
	t.Helper()
	normal := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_NORMAL}
	if err := unix.SchedSetAttr(0, &normal, 0); err != nil {
		t.Fatal(err)
	}
}

func gangRowsAlternate(t *testing.T, suspend string) {
	c := startCluster(t, clusterOpts{agents: 3, processors: 1, mode: sharing.Gang, mpl: 2, slice: 40 * time.Millisecond, priority: 50, suspend: suspend})
	a := c.submit(api.JobSpec{Name: "a", Command: busy, Processors: 3})
	b := c.submit(api.JobSpec{Name: "b", Command: busy, Processors: 3})
	c.waitState(a, api.Running, 20*time.Second)
	c.waitState(b, api.Running, 20*time.Second)
	// Sample the programs, not their start-up: a rank's shim (the Go
	// binary that stops itself before exec'ing the program) runs for a
	// moment before it is stopped.
	pa, pb := c.waitExec(a, 3, "sh"), c.waitExec(b, 3, "sh")
	byNode := ranksByNode(t, 3, pa, pb)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	normalPriority(t)
	seen := map[string][2]int{} // per node: samples with a executing, b executing
	valid := 0
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for name, p := range byNode {
			// A switch may happen between two reads: read a, b, then a
			// again, and keep the sample only if a did not change.
			ea, eb, ea2 := executing(p[0]), executing(p[1]), executing(p[0])
			if ea != ea2 {
				continue
			}
			valid++
			if ea && eb {
				// A real violation lasts (a whole row would be running in
				// the wrong slice); the kernel's stop path has a window of
				// microseconds where a dequeued SIGSTOP has not yet made the
				// state T. Look again a little later.
				time.Sleep(500 * time.Microsecond)
				if executing(p[0]) && executing(p[1]) {
					t.Fatalf("node %s: both jobs executing at once, for at least 0.5 ms (pids %d and %d): %s; %s", name, p[0], p[1], describeProc(p[0]), describeProc(p[1]))
				}
			}
			s := seen[name]
			if ea {
				s[0]++
			}
			if eb {
				s[1]++
			}
			seen[name] = s
		}
		time.Sleep(time.Millisecond)
	}
	for name, s := range seen {
		// Each job executed (and, by the check above, never while the
		// other did): the rows alternated on every node.
		if s[0] == 0 || s[1] == 0 {
			t.Errorf("node %s: job a executed in %d samples, b in %d: the rows did not alternate", name, s[0], s[1])
		}
	}
	t.Logf("%d valid samples: %v", valid, seen)
	// The controller's agent measured the skew from the heartbeats.
	if n := metric(t, c.agents[0].APIAddr(), "cosched_skew_slices_total"); n < 10 {
		t.Errorf("skew measured over %v slices in 3 s of 40 ms slices", n)
	}
	if p99 := metric(t, c.agents[0].APIAddr(), "cosched_switch_skew_p99_seconds"); p99 <= 0 {
		t.Errorf("switch skew p99 %v s: three agents never switch at the same nanosecond", p99)
	}
	for _, id := range []int64{a, b} {
		if err := c.client.Cancel(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	c.waitGone(a)
	c.waitGone(b)
}

// Space mode runs jobs to completion in EASY backfill order: job 3 fits
// beside job 1 and ends (by its limit) before job 1's limit, so it starts
// before the queue head, job 2, which waits for job 1.
func TestSpaceBackfillOrder(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 2, processors: 2, mode: sharing.Space, policy: gang.EASY})
	j1 := c.submit(api.JobSpec{Name: "long", Command: []string{"sleep", "1.5"}, Processors: 3, TimeLimit: api.Duration{D: 20 * time.Second}})
	c.waitState(j1, api.Running, 20*time.Second)
	j2 := c.submit(api.JobSpec{Name: "wide", Command: []string{"sleep", "0.1"}, Processors: 4, TimeLimit: api.Duration{D: 20 * time.Second}})
	j3 := c.submit(api.JobSpec{Name: "short", Command: []string{"sleep", "0.1"}, Processors: 1, TimeLimit: api.Duration{D: 5 * time.Second}})
	r1 := c.waitState(j1, api.Completed, 30*time.Second)
	r2 := c.waitState(j2, api.Completed, 30*time.Second)
	r3 := c.waitState(j3, api.Completed, 30*time.Second)
	if !r3.Start.Before(*r2.Start) {
		t.Errorf("job 3 started at %v, not before the head job 2 at %v (backfill)", r3.Start, r2.Start)
	}
	if r2.Start.Before(*r1.End) {
		t.Errorf("job 2 started at %v, before job 1 ended at %v", r2.Start, r1.End)
	}
	for _, j := range []api.Job{r1, r2, r3} {
		for _, r := range j.Ranks {
			if !r.Exited || r.Code != 0 || r.CPUTime.D < 0 {
				t.Errorf("job %d rank %d: %+v", j.ID, r.Rank, r)
			}
		}
	}
}

// Cancel ends every rank, on every node, whether stopped or running.
func TestCancelEndsEveryRank(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 3, mode: sharing.Gang, mpl: 2, slice: 30 * time.Millisecond})
	id := c.submit(api.JobSpec{Command: busy, Processors: 3})
	c.waitState(id, api.Running, 20*time.Second)
	c.waitPIDs(id, 3)
	if err := c.client.Cancel(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	j := c.waitState(id, api.Cancelled, 20*time.Second)
	c.waitGone(id)
	for _, r := range j.Ranks {
		if !r.Exited || r.Signal == "" {
			t.Errorf("rank %d: %+v, want killed by a signal", r.Rank, r)
		}
	}
	// Cancelling again is a conflict; an unknown job is not found.
	var apiErr *api.Error
	if err := c.client.Cancel(context.Background(), id); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("second cancel: %v", err)
	}
	if err := c.client.Cancel(context.Background(), 999); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Errorf("unknown job: %v", err)
	}
}

// A rank that fails fails its job, and the job's other ranks are killed.
func TestRankFailureFailsJob(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 3, mode: sharing.Space})
	id := c.submit(api.JobSpec{Processors: 3, Command: []string{"sh", "-c", `if [ "$COSCHED_RANK" = 1 ]; then sleep 0.3; exit 3; fi; sleep 60`}})
	j := c.waitState(id, api.Failed, 20*time.Second)
	if !strings.Contains(j.Reason, "rank 1") || !strings.Contains(j.Reason, "exited with status 3") {
		t.Errorf("reason %q", j.Reason)
	}
	c.waitGone(id)
}

// A job running past its time limit is killed: TIMEOUT.
func TestTimeLimit(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 1, processors: 2, mode: sharing.Space})
	id := c.submit(api.JobSpec{Processors: 2, Command: []string{"sleep", "60"}, TimeLimit: api.Duration{D: 300 * time.Millisecond}})
	j := c.waitState(id, api.Timeout, 20*time.Second)
	if !strings.Contains(j.Reason, "time limit") {
		t.Errorf("reason %q", j.Reason)
	}
	c.waitGone(id)
}

// Local mode: no coordination, jobs in different rows run together.
func TestLocalModeRunsEveryRank(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 2, mode: sharing.Local, mpl: 2})
	a := c.submit(api.JobSpec{Command: busy, Processors: 2})
	b := c.submit(api.JobSpec{Command: busy, Processors: 2})
	pids := append(c.waitPIDs(a, 2), c.waitPIDs(b, 2)...)
	eventually(t, 10*time.Second, func() error {
		for _, p := range pids {
			if s := procState(p); s == 'T' {
				return fmt.Errorf("pid %d stopped in local mode", p)
			}
		}
		return nil
	})
	c.client.Cancel(context.Background(), a)
	c.client.Cancel(context.Background(), b)
	c.waitGone(a)
	c.waitGone(b)
}

// Bad requests get a 4xx with a message, through the controller and
// through another agent (which forwards), and nothing breaks.
func TestAPIBadRequests(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 2, processors: 2, mode: sharing.Space})
	post := func(addr, body string) (int, string) {
		resp, err := http.Post("http://"+addr+"/v1/jobs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e api.APIError
		json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error
	}
	for _, addr := range []string{c.agents[0].APIAddr(), c.agents[1].APIAddr()} {
		for _, tc := range []struct {
			body string
			code int
			want string
		}{
			{`{"command":["true"],"processors":1,"time_limit":"1m"`, 400, "malformed job spec"},
			{`{"command":["true"],"processors":1,"time_limit":"1m","gpus":2}`, 400, `unknown field "gpus"`},
			{`{"command":["true"],"processors":5,"time_limit":"1m"}`, 400, "more than the cluster's 4 processors"},
			{`{"command":[],"processors":0,"time_limit":"0s"}`, 400, "command: empty; processors: 0"},
			{`{"command":["true"],"processors":1,"time_limit":"soon"}`, 400, "or a Go duration"},
			{`{"command":["` + strings.Repeat("x", 2<<20) + `"],"processors":1,"time_limit":"1m"}`, 413, "larger than"},
		} {
			code, msg := post(addr, tc.body)
			if code != tc.code || !strings.Contains(msg, tc.want) {
				t.Errorf("%s %.60s: %d %q, want %d %q", addr, tc.body, code, msg, tc.code, tc.want)
			}
		}
		code, _ := post(addr, `{"command":["true"],"processors":1,"time_limit":90}`)
		if code != http.StatusCreated {
			t.Errorf("%s: a good job (time limit in seconds) got %d", addr, code)
		}
	}
	resp, err := http.Get("http://" + c.agents[1].APIAddr() + "/v1/jobs/abc")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("job id abc: %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + c.agents[1].APIAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), "cosched_strobes_applied_total") {
		t.Errorf("/metrics lacks cosched metrics")
	}
}

// metric scrapes one agent's /metrics for a metric's value (the first
// sample of that name).
func metric(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	body.ReadFrom(resp.Body)
	for _, line := range strings.Split(body.String(), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			t.Fatalf("%s: %q: %v", name, line, err)
		}
		return v
	}
	t.Fatalf("/metrics of %s has no %s", addr, name)
	return 0
}

// A controller that no agent has registered with yet (it has just started
// or taken over) answers a submission 503 with Retry-After, not 400: the
// client repeats it, and it is taken once an agent is in.
func TestSubmitBeforeAnyAgentIsRetried(t *testing.T) {
	c := &testCluster{t: t, dir: t.TempDir(), opts: clusterOpts{processors: 1, mode: sharing.Space, policy: gang.EASY, mpl: 1, slice: 20 * time.Millisecond}}
	c.log = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	cfg := c.agentConfig(0)
	cfg.NoCompute, cfg.Processors = true, 0
	ctlAgent, err := node.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.agents = append(c.agents, ctlAgent)
	t.Cleanup(c.stop)

	resp, err := http.Post("http://"+ctlAgent.APIAddr()+"/v1/jobs", "application/json",
		strings.NewReader(`{"command":["true"],"processors":1,"time_limit":"1m"}`))
	if err != nil {
		t.Fatal(err)
	}
	var e api.APIError
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(e.Error, "no agent has registered") {
		t.Fatalf("submit with no agent: %d (Retry-After %q) %q, want 503 with Retry-After saying no agent has registered",
			resp.StatusCode, resp.Header.Get("Retry-After"), e.Error)
	}

	// The client repeats the 503 while a compute agent joins.
	joined := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		wcfg := c.agentConfig(1)
		wcfg.Join = []string{ctlAgent.GossipAddr()}
		a, err := node.Start(wcfg)
		if err == nil {
			t.Cleanup(func() { a.Shutdown() })
		}
		joined <- err
	}()
	cl := api.NewClient(ctlAgent.APIAddr())
	cl.RetryFor = time.Minute
	id, err := cl.Submit(context.Background(), api.JobSpec{Command: []string{"true"}, Processors: 1, TimeLimit: api.Duration{D: time.Minute}})
	if jerr := <-joined; jerr != nil {
		t.Fatalf("compute agent: %v", jerr)
	}
	if err != nil {
		t.Fatalf("submit while the agent joins: %v", err)
	}
	c.client = cl
	c.waitState(id, api.Completed, 30*time.Second)
}

// Two agents never share a state directory: the second is refused at
// start, naming the directory, and starts once the first has stopped.
func TestStateDirIsLockedByItsAgent(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 1, mode: sharing.Space})
	cfg := c.agentConfig(0)
	cfg.Name, cfg.Controller = "twin", false
	cfg.Join = []string{c.agents[0].GossipAddr()}
	if a, err := node.Start(cfg); err == nil {
		a.Shutdown()
		t.Fatal("a second agent started on the state directory of a running one")
	} else if !strings.Contains(err.Error(), "in use by a running agent") || !strings.Contains(err.Error(), cfg.StateDir) {
		t.Fatalf("second agent on one state dir: %v, want refused naming %s", err, cfg.StateDir)
	}
	if _, err := node.CleanupCgroups(cfg); err == nil || !strings.Contains(err.Error(), "in use by a running agent") {
		t.Fatalf("CleanupCgroups beside the running agent: %v, want refused", err)
	}
	c.stop()
	c.agents = nil
	cfg.Join = nil
	a, err := node.Start(cfg)
	if err != nil {
		t.Fatalf("after the first agent stopped: %v", err)
	}
	a.Shutdown()
}
