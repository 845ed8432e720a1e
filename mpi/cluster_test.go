package mpi_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/comm/relay"
	"github.com/cosched/cosched/internal/frame"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/mpi/mpibuild"
	"github.com/cosched/cosched/telemetry"
)

// kitOnce builds the library and holds the compiled programs, once per
// test binary (not in TestMain: a fuzzing worker needs none of it).
var kitOnce = sync.OnceValues(func() (*mpibuild.Kit, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return mpibuild.New(ctx, kitDir)
})

// kitDir is the test binary's temporary directory for the kit, removed
// by TestMain.
var kitDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cosched-mpi")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	kitDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// needKit skips without the toolchain; a build failure is a failure.
func needKit(t testing.TB) *mpibuild.Kit {
	t.Helper()
	kit, err := kitOnce()
	if err != nil {
		if errorsIsUnavailable(err) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	return kit
}

// program compiles one of testdata's C programs.
func program(t testing.TB, src string) string {
	t.Helper()
	k := needKit(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := k.Program(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cluster is relays in this process, one per node, linked as agents link
// them; in bcs mode a goroutine strobes them every slice (cut, exchange
// heartbeats), as agents do at the controller's strobes.
type cluster struct {
	// started, when set, learns each rank's process as it starts.
	started func(rank, pid int)
	// env, when set, is added to every rank's environment; rankEnv[r]
	// after it to rank r's.
	env     []string
	rankEnv map[int][]string
	// goRanks[r], when set, is rank r: a rank of Go's comm library run
	// in this process instead of the program (exit 1 if it fails).
	goRanks map[int]func(ctx context.Context, cfg comm.Config) error
	// blocked records the relays' OnBlocked calls: "job/rank:true".
	blockedMu sync.Mutex
	blocked   []string
	aborts    []comm.Abort // the relays' OnAbort calls, in order (under blockedMu)

	relays []*relay.Relay
	names  []string
	// strobed is the relays the bcs strobes reach: relays, then with a
	// restarted one in its place (restarted). The strobes' goroutine reads
	// it, under strobedMu.
	strobedMu sync.Mutex
	strobed   []*relay.Relay
	// newRelay makes node name's relay (again, for a restart).
	newRelay func(name string) (*relay.Relay, error)
	stop     func()
	nextID   int64
}

func newCluster(t testing.TB, nodes int, bcs bool) *cluster {
	t.Helper()
	slice := time.Duration(0)
	if bcs {
		slice = 4 * time.Millisecond
	}
	return newClusterSlice(t, nodes, slice)
}

// newClusterSlice is newCluster with bcs's slice length; 0 means
// immediate delivery.
func newClusterSlice(t testing.TB, nodes int, slice time.Duration) *cluster {
	t.Helper()
	return newClusterWith(t, nodes, slice, func(*relay.Config) {})
}

// newClusterWith is newClusterSlice with relays whose Config set changes.
func newClusterWith(t testing.TB, nodes int, slice time.Duration, set func(*relay.Config)) *cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "mpirl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := &cluster{nextID: 1}
	peers := map[string]string{}
	log := zap.NewNop()
	if path := os.Getenv("COSCHED_TEST_RELAY_LOG"); path != "" {
		// debugging a flake: the relays' log in a file, this cluster's only
		_ = os.Truncate(path, 0)
		zc := zap.NewDevelopmentConfig()
		zc.OutputPaths = []string{path}
		l, err := zc.Build()
		if err != nil {
			t.Fatalf("COSCHED_TEST_RELAY_LOG: %v", err)
		}
		t.Cleanup(func() { _ = l.Sync() })
		log = l
	}
	// A loopback address of this cluster's own: a relay of another
	// cluster (an earlier test's, or another package's test binary running
	// beside this one) still redialling a peer that has gone cannot reach
	// this cluster's relays through a recycled port. Relays without a key
	// take any peer that says a node name, and every test's nodes are
	// n0, n1, … with jobs numbered from 1: such a relay's frames would be
	// applied to this cluster's jobs.
	host := fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
	c.newRelay = func(name string) (*relay.Relay, error) {
		cfg := relay.Config{Node: name, SocketPath: filepath.Join(dir, name+".sock"), Listen: net.JoinHostPort(host, "0"), Log: log.Named(name),
			OnBlocked: func(job int64, rank int, blocked bool) {
				c.blockedMu.Lock()
				c.blocked = append(c.blocked, fmt.Sprintf("%d/%d:%v", job, rank, blocked))
				c.blockedMu.Unlock()
			},
			OnAbort: func(job int64, rank int, a comm.Abort) {
				c.blockedMu.Lock()
				c.aborts = append(c.aborts, a)
				c.blockedMu.Unlock()
			}}
		set(&cfg)
		return relay.New(cfg)
	}
	for i := range nodes {
		name := fmt.Sprintf("n%d", i)
		r, err := c.newRelay(name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		c.relays = append(c.relays, r)
		c.names = append(c.names, name)
		peers[name] = r.Addr()
	}
	for _, r := range c.relays {
		r.SetPeers(peers)
	}
	if !relaySpeaksV2(t, c.relays[0]) {
		t.Skip("the relay predates protocol 2 (Probe, Coll, Abort, MPI contexts): cosched's MPI library needs it")
	}
	if slice == 0 {
		c.stop = func() {}
		return c
	}
	c.switchToBCS(t, slice)
	return c
}

// switchToBCS sets every relay to bcs with slices of slice and strobes
// them every slice (cut, exchange heartbeats), as agents do at the
// controller's strobes, until the test's end.
func (c *cluster) switchToBCS(t testing.TB, slice time.Duration) {
	for _, r := range c.relays {
		// 50 MB/s: h_max of 200 KB per slice, so large messages span slices
		r.SetDelivery(relay.Buffered, slice, 50e6)
	}
	c.strobed = slices.Clone(c.relays)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(slice)
		defer tick.Stop()
		for seq := uint64(1); ; seq++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			c.strobedMu.Lock()
			targets := make([][]string, len(c.strobed))
			for i, r := range c.strobed {
				targets[i] = r.HeartbeatNodes()
			}
			for _, r := range c.strobed {
				r.Cut(1, seq)
			}
			for i, r := range c.strobed {
				data := r.HeartbeatData(1, seq)
				for _, to := range targets[i] {
					if k := slices.Index(c.names, to); k >= 0 {
						c.strobed[k].PeerHeartbeat(c.names[i], 1, seq, data)
					}
				}
			}
			c.strobedMu.Unlock()
		}
	}()
	c.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(c.stop)
}

// restarted puts r, node i's restarted relay, in the bcs strobes' reach
// (a no-op in immediate delivery).
func (c *cluster) restarted(i int, r *relay.Relay) {
	c.strobedMu.Lock()
	defer c.strobedMu.Unlock()
	if c.strobed != nil {
		c.strobed[i] = r
	}
}

// sawBlocked says whether a relay reported ev ("job/rank:true").
func (c *cluster) sawBlocked(ev string) bool {
	c.blockedMu.Lock()
	defer c.blockedMu.Unlock()
	return slices.Contains(c.blocked, ev)
}

// relaySpeaksV2 says hello as a rank of a job of one and reads the
// Welcome's protocol version.
func relaySpeaksV2(t testing.TB, r *relay.Relay) bool {
	t.Helper()
	const id = 1 << 40
	if err := r.AddJob(id, []string{nodeName(r)}); err != nil {
		t.Fatal(err)
	}
	defer r.RemoveJob(id)
	conn, err := net.Dial("unix", r.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := frame.Write(conn, comm.FrameHello, &comm.Hello{Job: id, Rank: 0, Size: 1, PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, body, err := frame.NewReader(conn, comm.MaxFrame).Read()
	if err != nil || typ != comm.FrameWelcome {
		t.Fatalf("hello: frame %d, %v", typ, err)
	}
	var w comm.Welcome
	if err := frame.Decode(body, &w); err != nil {
		t.Fatal(err)
	}
	return w.Version >= 2
}

func nodeName(r *relay.Relay) string {
	return strings.TrimSuffix(filepath.Base(r.SocketPath()), ".sock")
}

// rankResult is one rank's process as it ended.
type rankResult struct {
	rank     int
	exit     int
	out, err string
	maxRSS   int64         // KiB, the kernel's peak resident set size
	wall     time.Duration // from start to exit
}

// run starts prog as a job of len(place) ranks, rank i on node place[i],
// and waits for them all (killing them at the timeout).
func (c *cluster) run(t testing.TB, prog string, place []int, timeout time.Duration, args ...string) []rankResult {
	t.Helper()
	id := c.nextID
	c.nextID++
	nodes := make([]string, len(place))
	for i, p := range place {
		nodes[i] = c.names[p]
	}
	for i, r := range c.relays {
		hosts := false
		for _, p := range place {
			hosts = hosts || p == i
		}
		if hosts {
			if err := r.AddJob(id, nodes); err != nil {
				t.Fatal(err)
			}
			defer r.RemoveJob(id)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res := make([]rankResult, len(place))
	hung := make([]string, len(place)) // written by each rank's own Cancel, read after wg.Wait
	var wg sync.WaitGroup
	for rank, p := range place {
		if f := c.goRanks[rank]; f != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[rank] = rankResult{rank: rank}
				if err := f(ctx, comm.Config{Relay: c.relays[p].SocketPath(), Job: id, Rank: rank, Size: len(place)}); err != nil {
					res[rank].exit, res[rank].err = 1, err.Error()
				}
			}()
			continue
		}
		cmd := exec.CommandContext(ctx, prog, args...)
		cmd.Env = needKit(t).Env(append(os.Environ(),
			fmt.Sprintf("COSCHED_JOB=%d", id), fmt.Sprintf("COSCHED_RANK=%d", rank),
			fmt.Sprintf("COSCHED_SIZE=%d", len(place)), "COSCHED_RELAY="+c.relays[p].SocketPath()))
		cmd.Env = append(cmd.Env, c.env...)
		cmd.Env = append(cmd.Env, c.rankEnv[rank]...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		cmd.Cancel = func() error {
			if ctx.Err() == context.DeadlineExceeded { // hung: where, before it goes
				hung[rank] = proctest.Where(cmd.Process.Pid)
			}
			return cmd.Process.Kill()
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if c.started != nil {
			c.started(rank, cmd.Process.Pid)
		}
		wg.Add(1)
		start := time.Now()
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			wall := time.Since(start)
			code := 0
			if err != nil {
				code = -1
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
			}
			res[rank] = rankResult{rank: rank, exit: code, out: stdout.String(), err: stderr.String(), wall: wall}
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				res[rank].maxRSS = ru.Maxrss
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		for rank, h := range hung {
			if h != "" {
				t.Logf("rank %d when it was killed:\n%s", rank, indent(h))
			}
		}
		t.Errorf("%s: job of %d ranks still running after %v: killed", filepath.Base(prog), len(place), timeout)
	}
	return res
}

// expectPass fails unless every rank exited 0 without a FAIL line and
// rank 0 said PASS.
func expectPass(t *testing.T, what string, res []rankResult) {
	t.Helper()
	t.Logf("%s: rank 0 said %q", what, strings.TrimSpace(res[0].out))
	bad := false
	for _, r := range res {
		if r.exit != 0 || strings.Contains(r.out, "FAIL") {
			bad = true
		}
	}
	if !bad && !strings.Contains(res[0].out, "PASS") {
		bad = true
	}
	if bad {
		var b strings.Builder
		for _, r := range res {
			fmt.Fprintf(&b, "rank %d exit %d\n%s%s", r.rank, r.exit, indent(r.out), indent(r.err))
		}
		t.Errorf("%s failed:\n%s", what, b.String())
	}
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") + "\n"
}

// spread places n ranks on nodes round-robin; packed puts them all on node 0.
func spread(n, nodes int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i % nodes
	}
	return p
}

// jobTraffic is job id's traffic summed over relays; found says some
// relay had statistics for it.
func jobTraffic(relays []*relay.Relay, id int64) (sum telemetry.RelayJobStats, found bool) {
	for _, rl := range relays {
		for _, js := range rl.Stats().Jobs {
			if js.Job == id {
				found = true
				sum.Sent += js.Sent
				sum.SentBytes += js.SentBytes
				sum.Delivered += js.Delivered
				sum.DeliveredBytes += js.DeliveredBytes
				sum.ChannelBytes += js.ChannelBytes
			}
		}
	}
	return sum, found
}
