package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/comm/relay"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/sharing"
	"github.com/cosched/cosched/telemetry"
)

// commScenarioArg makes the test binary run a comm program instead of the
// tests (TestMain): `node.test __comm_scenario NAME`.
const commScenarioArg = "__comm_scenario"

func scenarioCommand(name string) []string {
	return []string{os.Args[0], commScenarioArg, name}
}

// commScenario is a rank's program. It exits 0 after Finalize when every
// check passed, 1 with the reason on stderr otherwise.
func commScenario(name string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := comm.Init(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "init:", err)
		return 1
	}
	switch name {
	case "semantics":
		err = semantics(ctx, c)
	case "pingpong":
		err = commPingPong(ctx, c)
	case "stream":
		err = commStream(ctx, c)
	case "exit-early":
		if c.Rank() == 1 {
			return 0 // no Finalize: the job must fail, not hang
		}
		_, err = c.Recv(ctx, 1, 0) // never comes; the job's end kills this rank
	default:
		err = fmt.Errorf("unknown scenario %q", name)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.Rank(), err)
		return 1
	}
	if err := c.Finalize(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "finalize:", err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

// semantics exercises comm and checks every result: order per (source,
// tag), any-source and any-tag, non-blocking calls, barrier, collectives,
// and that nothing is delivered twice.
func semantics(ctx context.Context, c *comm.Comm) error {
	n, me := c.Size(), c.Rank()
	const m = 40
	msg := func(src, tag, i int) []byte { return fmt.Appendf(nil, "%d:%d:%d", src, tag, i) }
	// Streams with two tags to every rank, self included.
	for dst := range n {
		for i := range m {
			for _, tag := range []int{1, 2} {
				if err := c.Send(ctx, dst, tag, msg(me, tag, i)); err != nil {
					return err
				}
			}
		}
	}
	for src := range n {
		for i := range m { // tag 2 by name: in order, skipping tag 1's
			got, err := c.Recv(ctx, src, 2)
			if err != nil {
				return err
			}
			if !bytes.Equal(got.Data, msg(src, 2, i)) || got.Source != src || got.Tag != 2 {
				return fmt.Errorf("from %d tag 2 #%d: got %q (src %d tag %d)", src, i, got.Data, got.Source, got.Tag)
			}
		}
		for i := range m { // then AnyTag: only tag 1's are left, in order
			got, err := c.Recv(ctx, src, comm.AnyTag)
			if err != nil {
				return err
			}
			if !bytes.Equal(got.Data, msg(src, 1, i)) {
				return fmt.Errorf("from %d any tag #%d: got %q", src, i, got.Data)
			}
		}
	}
	// Any source: rank 0 hears from everyone once.
	if err := c.Send(ctx, 0, 3, []byte{byte(me)}); err != nil {
		return err
	}
	if me == 0 {
		var from []int
		for range n {
			got, err := c.Recv(ctx, comm.AnySource, 3)
			if err != nil {
				return err
			}
			from = append(from, got.Source)
		}
		slices.Sort(from)
		if len(slices.Compact(from)) != n {
			return fmt.Errorf("any-source receives came from %v", from)
		}
	}
	// Non-blocking ring.
	right, left := (me+1)%n, (me-1+n)%n
	rr, err := c.Irecv(left, 4)
	if err != nil {
		return err
	}
	sr, err := c.Isend(right, 4, []byte(fmt.Sprint(me)))
	if err != nil {
		return err
	}
	ms, err := c.Waitall(ctx, []*comm.Request{sr, rr})
	if err != nil {
		return err
	}
	if string(ms[1].Data) != fmt.Sprint(left) {
		return fmt.Errorf("ring: got %q from %d", ms[1].Data, left)
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	in := make([][]byte, n)
	for j := range n {
		in[j] = fmt.Appendf(nil, "%d->%d", me, j)
	}
	out, err := c.Alltoall(ctx, in)
	if err != nil {
		return err
	}
	for j := range n {
		if want := fmt.Sprintf("%d->%d", j, me); string(out[j]) != want {
			return fmt.Errorf("alltoall from %d: %q, want %q", j, out[j], want)
		}
	}
	sum, err := c.Allreduce(ctx, 0.1*float64(me+1))
	if err != nil {
		return err
	}
	want := 0.0
	for r := range n {
		want += 0.1 * float64(r+1)
	}
	if math.Float64bits(sum) != math.Float64bits(want) {
		return fmt.Errorf("allreduce %v, want %v", sum, want)
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	// Exactly once: everything sent has been received; nothing else comes.
	quiet, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if got, err := c.Recv(quiet, comm.AnySource, comm.AnyTag); !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("a message beyond those sent: %q from %d (%v)", got.Data, got.Source, err)
	}
	return nil
}

// The comm library's semantics hold in every mode, through real agents'
// relays, with ranks on three nodes stopped and continued by the slice
// switching (gang, bcs) or from outside at random (local).
func TestCommSemanticsInEveryMode(t *testing.T) {
	for _, mode := range []sharing.Mode{sharing.Space, sharing.Gang, sharing.BCS, sharing.Local} {
		t.Run(string(mode), func(t *testing.T) {
			o := clusterOpts{agents: 3, mode: mode, mpl: 2, slice: 20 * time.Millisecond}
			if mode == sharing.Space {
				o.mpl = 1
			}
			c := startCluster(t, o)
			var spin int64
			if mode.TimeShared() {
				c.waitHeartbeats()
				// A second row, so the rows rotate and the ranks are
				// stopped and continued mid-operation.
				spin = c.submit(api.JobSpec{Name: "spin", Command: busy, Processors: 3})
				c.waitState(spin, api.Running, 20*time.Second)
			}
			id := c.submit(api.JobSpec{Name: "semantics", Command: scenarioCommand("semantics"), Processors: 3})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if mode == sharing.Local {
				wg.Add(1)
				go func() { // SIGSTOP/SIGCONT the ranks mid-operation
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						case <-time.After(3 * time.Millisecond):
						}
						for _, pid := range jobPIDs(t, id) {
							sig := syscall.SIGSTOP
							if i%2 == 1 {
								sig = syscall.SIGCONT
							}
							syscall.Kill(-pid, sig)
						}
					}
				}()
			}
			j := waitDone(t, c, id, 90*time.Second)
			close(stop)
			wg.Wait()
			if j.State != api.Completed {
				t.Fatalf("job %s: %s; rank errors in %s", j.State, j.Reason, c.dir)
			}
			for _, r := range j.Ranks {
				if r.Code != 0 || r.Error != "" {
					t.Fatalf("rank %+v", r)
				}
			}
			// The job's own counters: what its ranks sent is what they
			// were delivered, bytes too, and /metrics says the same.
			if js := c.jobTraffic(id); js.Sent == 0 || js.Sent != js.Delivered || js.SentBytes != js.DeliveredBytes {
				t.Fatalf("job %d's traffic at the relays: %+v", id, js)
			} else if got := c.jobMetric("cosched_relay_job_sent_bytes_total", id); got != float64(js.SentBytes) {
				t.Fatalf("/metrics: %v bytes sent by job %d, the API says %d", got, id, js.SentBytes)
			}
			st := c.relayStats()
			switch mode {
			case sharing.BCS:
				// Everything went through slice transfers, and what the
				// heartbeats announced is what arrived.
				if st.Announced == 0 || st.AnnouncedIn != st.ReceivedIn || st.AnnouncedInBytes != st.ReceivedInBytes || st.Transferred != st.Announced {
					t.Fatalf("bcs relay totals %+v", st)
				}
			default:
				if st.Announced != 0 || st.Forwarded == 0 {
					t.Fatalf("%s relay totals %+v", mode, st)
				}
			}
			if spin != 0 {
				if err := c.client.Cancel(context.Background(), spin); err != nil {
					t.Fatal(err)
				}
				c.waitGone(spin)
			}
		})
	}
}

// waitDone waits for a job to end and returns it.
func waitDone(t *testing.T, c *testCluster, id int64, timeout time.Duration) api.Job {
	t.Helper()
	var j api.Job
	deadline := time.Now().Add(timeout)
	located := false
	for {
		var err error
		if j, err = c.client.Job(context.Background(), id); err == nil && j.State.Done() {
			return j
		}
		if !located && err == nil && nearItsLimit(j) {
			located = true
			c.locateRanks(id)
		}
		if time.Now().After(deadline) {
			c.dump()
			t.Fatalf("after %v: job %d is %s (%v)", timeout, id, j.State, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nearItsLimit: j runs and its time limit will kill it within 5 s (a
// limit that extends does not).
func nearItsLimit(j api.Job) bool {
	limit := j.Spec.TimeLimit.D
	return j.State == api.Running && j.Start != nil && limit > 0 && j.Spec.Overrun != "extend" &&
		time.Since(*j.Start) > limit-5*time.Second
}

// locateRanks logs where each of job id's ranks in this cluster is
// (proctest.Where: stack and MPI library state), before its time limit
// kills them: a job that hung once in a CI run is explained by the log.
func (c *testCluster) locateRanks(id int64) {
	pids, err := proctest.JobPIDs(id, proctest.OutputUnder(c.dir))
	if err != nil {
		c.t.Logf("job %d near its time limit: its ranks: %v", id, err)
	}
	for _, pid := range pids {
		c.t.Logf("job %d near its time limit, %s", id, proctest.Where(pid))
	}
}

// dump logs what every agent knows, so that a job that never ends can be
// diagnosed from the test's output alone.
func (c *testCluster) dump() {
	for _, a := range c.agents {
		st, err := api.NewClient(a.APIAddr()).LocalStats(context.Background(), ^uint64(0))
		if err != nil {
			c.t.Logf("%s: stats: %v", a.Name(), err)
			continue
		}
		b, _ := json.Marshal(st)
		c.t.Logf("%s: %s", a.Name(), b)
	}
	files, _ := filepath.Glob(filepath.Join(c.dir, "*", "agents", "*", "jobs", "*", "rank-*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
			c.t.Logf("%s:\n%s", f, b)
		}
	}
}

// A rank that leaves comm without Finalize fails its job at once, though
// it exited 0, and no rank is left behind waiting for it.
func TestRankExitingWithoutFinalizeFailsJob(t *testing.T) {
	c := startCluster(t, clusterOpts{agents: 2, mode: sharing.Gang, mpl: 1})
	id := c.submit(api.JobSpec{Command: scenarioCommand("exit-early"), Processors: 2})
	j := waitDone(t, c, id, 30*time.Second)
	if j.State != api.Failed || !strings.Contains(j.Reason, "without comm.Finalize") {
		t.Fatalf("job %s: %q", j.State, j.Reason)
	}
	c.waitGone(id)
}

// agentStats is every agent's statistics, in the agents' order.
func (c *testCluster) agentStats() []api.NodeStats {
	c.t.Helper()
	sts := make([]api.NodeStats, len(c.agents))
	for i, a := range c.agents {
		st, err := api.NewClient(a.APIAddr()).LocalStats(context.Background(), ^uint64(0))
		if err != nil {
			c.t.Fatal(err)
		}
		sts[i] = st
	}
	return sts
}

// jobTraffic adds up a job's counters at every agent's relay.
func (c *testCluster) jobTraffic(id int64) telemetry.RelayJobStats {
	c.t.Helper()
	sum := telemetry.RelayJobStats{Job: id}
	for _, st := range c.agentStats() {
		for _, js := range st.Relay.Jobs {
			if js.Job == id {
				sum.Sent += js.Sent
				sum.SentBytes += js.SentBytes
				sum.Delivered += js.Delivered
				sum.DeliveredBytes += js.DeliveredBytes
				sum.ChannelBytes += js.ChannelBytes
				sum.Collectives += js.Collectives
				sum.CollectiveBytes += js.CollectiveBytes
			}
		}
	}
	return sum
}

// jobMetric adds up a per-job relay metric of job id over every agent's
// /metrics.
func (c *testCluster) jobMetric(name string, id int64) float64 {
	c.t.Helper()
	var sum float64
	label := fmt.Sprintf(`job="%d"`, id)
	for _, a := range c.agents {
		resp, err := http.Get("http://" + a.APIAddr() + "/metrics")
		if err != nil {
			c.t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			c.t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, name+"{") && strings.Contains(line, label) {
				var v float64
				if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
					c.t.Fatalf("%q: %v", line, err)
				}
				sum += v
			}
		}
	}
	return sum
}

// relayStats adds up every agent's relay counters.
func (c *testCluster) relayStats() relay.Stats {
	c.t.Helper()
	var sum relay.Stats
	for _, st := range c.agentStats() {
		r := st.Relay
		sum.Sent += r.Sent
		sum.Forwarded += r.Forwarded
		sum.Received += r.Received
		sum.Delivered += r.Delivered
		sum.Announced += r.Announced
		sum.AnnouncedIn += r.AnnouncedIn
		sum.AnnouncedInBytes += r.AnnouncedInBytes
		sum.ReceivedIn += r.ReceivedIn
		sum.ReceivedInBytes += r.ReceivedInBytes
		sum.Transferred += r.Transferred
		sum.Dropped += r.Dropped
		sum.MaxSliceBytes = max(sum.MaxSliceBytes, r.MaxSliceBytes)
	}
	return sum
}

// waitHeartbeats waits until gossip has converged: the controller's agent
// hears every other agent's heartbeats (every agent sends it its
// liveness; to the others only when they share a job), and every relay
// knows every other's address, so messages and, once jobs are placed,
// heartbeats reach their nodes (time-shared modes only: heartbeats
// answer strobes).
func (c *testCluster) waitHeartbeats() {
	c.t.Helper()
	eventually(c.t, 20*time.Second, func() error {
		for i, a := range c.agents {
			st, err := api.NewClient(a.APIAddr()).LocalStats(context.Background(), ^uint64(0))
			if err != nil {
				return err
			}
			if n := len(st.Strobe.Peers); i == 0 && n != len(c.agents)-1 {
				return fmt.Errorf("the controller's agent %s hears %d peers", a.Name(), n)
			}
			if n := st.Relay.Peers; n != len(c.agents)-1 {
				return fmt.Errorf("%s's relay knows %d peers", a.Name(), n)
			}
		}
		return nil
	})
}

// BCS end to end with benchmark jobs (bench-rank through the relays): a
// blocking pattern and a computing one share the nodes in two rows. The
// nodes lend the blocked ranks' processors to the others (slot reuse), no
// slice transfer exceeds h_max, and what the heartbeats announced is what
// arrived. (cmd/cosched's TestSubmitBenchAndNodesStats submits such a job
// with the CLI.)
func TestBCSBenchmarks(t *testing.T) {
	const slice = 20 * time.Millisecond
	hmax := 2 * 4096 // two benchmark messages per node per slice
	c := startCluster(t, clusterOpts{agents: 2, mode: sharing.BCS, mpl: 2, slice: slice, bandwidth: float64(hmax) / slice.Seconds()})
	c.waitHeartbeats()
	blocking := c.submit(api.JobSpec{Name: "exchange", Bench: "5ms,2ms,transpose,B", BenchIterations: 15, BenchWork: "wall",
		Processors: 2, TimeLimit: api.Duration{D: time.Second}, Overrun: "extend"})
	computing := c.submit(api.JobSpec{Name: "compute", Bench: "20ms,0ms,barrier,NB", BenchIterations: 20, BenchWork: "wall",
		Processors: 2, TimeLimit: api.Duration{D: time.Second}, Overrun: "extend"})
	for id, iters := range map[int64]int{blocking: 15, computing: 20} {
		j := waitDone(t, c, id, 90*time.Second)
		if j.State != api.Completed {
			t.Fatalf("job %d %s: %s", id, j.State, j.Reason)
		}
		for _, r := range j.Ranks {
			if r.Bench == nil || r.Bench.Iterations != iters || r.Bench.Compute.D <= 0 || r.Bench.Wall.D < r.Bench.Compute.D {
				t.Fatalf("job %d rank %d bench stats %+v", id, r.Rank, r.Bench)
			}
		}
	}
	// What the heartbeats and sliceReady frames announced is what
	// arrived, the last slice of each job included: a node whose ranks
	// end first stays in the job's exchange until their last messages
	// are announced and transferred (relay.FinishJob). A heartbeat may
	// still be on its way when the jobs are done: it has a few seconds.
	st := c.relayStats()
	for deadline := time.Now().Add(5 * time.Second); st.AnnouncedIn != st.ReceivedIn && time.Now().Before(deadline); st = c.relayStats() {
		time.Sleep(50 * time.Millisecond)
	}
	if st.Announced == 0 || st.AnnouncedIn != st.ReceivedIn || st.AnnouncedInBytes != st.ReceivedInBytes {
		t.Fatalf("relay totals: announced %d messages (%d bytes) to the nodes that received %d (%d bytes); %+v",
			st.AnnouncedIn, st.AnnouncedInBytes, st.ReceivedIn, st.ReceivedInBytes, st)
	}
	if st.MaxSliceBytes > uint64(hmax) {
		t.Fatalf("a slice transferred %d bytes, h_max %d", st.MaxSliceBytes, hmax)
	}
	var reuses uint64
	for _, s := range c.agentStats() {
		reuses += s.SlotReuses
	}
	if reuses == 0 {
		t.Fatal("no slot was reused, though the exchanging job blocks every iteration")
	}
	t.Logf("slot reuses %d; relay %+v", reuses, st)
}
