package node

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/comm/relay"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/member"
	"github.com/cosched/cosched/sharing"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/node/agentctl"
	"github.com/cosched/cosched/node/jobcg"
	"github.com/cosched/cosched/node/rank"
	"github.com/cosched/cosched/pmi"
	"github.com/cosched/cosched/pmix"
	"github.com/cosched/cosched/strobe"
)

// Config configures an agent.
type Config struct {
	Name      string
	Bind      string   // gossip address host:port (port 0 picks one)
	Advertise string   // host other agents reach this one at (default: Bind's host)
	Join      []string // other agents' gossip addresses
	SecretKey []byte   // gossip encryption key (16, 24 or 32 bytes), optional
	// Key is the cluster key: API requests over TCP must carry a token
	// signed with it. Nil: every caller is trusted as the agent's own
	// user (insecure; the agent warns). With it, strobes and heartbeats
	// are sealed and unsealed ones dropped (strobe.Auth).
	Key *clusterkey.Key
	// UnsealedStrobes, with a Key, leaves strobes and heartbeats unsealed
	// and accepts unsealed ones: only to measure what sealing costs
	// (bench strobe --auth off). Insecure.
	UnsealedStrobes bool
	// AdminGID, when set, names the operators' group: its members may
	// cancel and inspect every user's jobs (root always may).
	AdminGID *uint32
	// MetricsListen, when set (host:port), serves /metrics on a listener
	// of its own, unauthenticated, for Prometheus on a trusted network;
	// /metrics on the API port then needs a credential like every other
	// endpoint. Empty: /metrics is on the API port, unauthenticated.
	MetricsListen string
	// APISocket is the API's Unix socket (default: <StateDir>/api.sock).
	APISocket  string
	Controller bool // controller-eligible: one of the controllers' raft group; runs the controller while it leads
	// Controllers is how many controller-eligible agents form a new group
	// (bootstrap-expect; 0 or 1: this one alone). A journal that already
	// belongs to a group ignores it.
	Controllers int
	// FirstJobID, when above 1, is the id of the first job of a controller
	// whose journal is empty (cluster up: ids never repeat within a state
	// directory, across clusters).
	FirstJobID int64
	// RaftPort is the TCP port of the controller journal (0 picks one; a
	// group of several needs a fixed one so a restarted controller is found
	// at the same address).
	RaftPort int
	Mode     sharing.Mode // controller: how processors are shared
	Slice    time.Duration
	MPL      int
	Policy   gang.Policy
	// Backfill holds the options of the priority-backfill policies
	// (controller; the zero value is their default).
	Backfill   gang.Backfill
	Bandwidth  float64 // controller, BCS: bytes per second per node (h_max = Bandwidth × Slice); 0 = unlimited
	MaxColumns int     // controller: the most processors the cluster can have
	// CPUs pins ranks: slot i runs on CPU CPUs[i]. Empty: Processors
	// slots without pinning.
	CPUs       []int
	Processors int // slots offered when CPUs is empty (default: the machine's CPUs)
	// NoCompute offers no processors: a controller-only agent, whose death
	// kills no rank (ranks die with their agent).
	NoCompute bool
	StateDir  string
	// Nice is the agent's own nice value, applied at start if permitted
	// (negative needs CAP_SYS_NICE): the control plane must preempt busy
	// ranks. RankNice is the ranks' (they are born with it).
	Nice     int
	RankNice int
	// Priority, when 1–99, runs the strobe path at SCHED_FIFO: the agent's
	// receive-and-switch thread and (controller) the slice clock. Needs
	// root or CAP_SYS_NICE; without, the agent warns and runs normally.
	Priority int
	// KeepProcessors makes the real-time strobe receivers and the
	// controller's slice clock wait by raw system calls that keep their
	// Go processors (strobe.RealtimeUDP.KeepProcessor): a strobe wakes
	// one thread that needs no other. The process must spare a P for each
	// (HeldProcessors): cosched agent sets it and adds them; several
	// agents in one process (tests) must not.
	KeepProcessors bool
	// StrobeFanout (controller) strobes the agents along a tree of this
	// arity (strobe.Sender.SetFanout); 0 sends to each directly.
	StrobeFanout int
	// StrobeMulticast, "ADDR:PORT" of an IPv4 multicast group: every
	// agent joins it on the interface of its address, and the controller
	// sends each strobe once, to the group (strobe.Sender.SetMulticast).
	// Every agent of the cluster must be given the same group.
	StrobeMulticast string
	APIPort         int  // 0 picks one
	Local           bool // loopback cluster: fast membership timings
	Shim            []string
	// Guard is the command that starts the agent's cleanup guard, to
	// which GuardArgs are appended (guard.go): cosched-full's `agent
	// --cleanup-guard`, the default when Shim is (the agent's own
	// binary). Nil (an agent in a test binary) starts none; so does an
	// agent without cgroups or KeepRanks.
	Guard []string
	// ControllerGrace is how long the agent keeps its ranks (running or
	// stopped, as they were) after it lost its controller: a controller
	// that reaches it within the grace (the same one restarted, or one
	// whose connection broke) adopts them. Then it kills them. 0 kills
	// them as soon as the controller leaves the cluster (the CLI's
	// default is 5m).
	ControllerGrace time.Duration
	// KeepRanks starts every rank under a keeper that outlives the agent
	// (SIGKILL, a crash, an upgrade): the same agent started again with
	// the same name and state directory takes its ranks back, and the
	// controller waits ControllerGrace for it (docs/runtime.md, "Agent
	// restarts"). Without it a dead agent's ranks die with it.
	KeepRanks bool
	// DeadControllerAfter, on a controller-eligible agent, lets the leader
	// remove from the controllers' raft group a voter whose agent gossip
	// has not seen (failed or left) for longer than this, one at a time
	// and never below a majority of the group (node/autopilot.go). 0:
	// never; an operator removes them (cosched operator raft remove-peer).
	DeadControllerAfter time.Duration
	// Journal, when set, is the controller's journal and this agent the
	// only controller (tests: a journal in memory). Unset, a controller
	// keeps its journal on disk in StateDir/journal (node/journal),
	// replicated to the other controllers.
	Journal Journal
	// BenchRank is how the agent runs a benchmark job's ranks: the
	// command, which reads the job from bench.EnvJob (default: this
	// executable's "bench-rank").
	BenchRank []string
	// MPI is the cluster's default process-management interface for jobs
	// that do not choose one (controller; "", none, pmi1, pmix or cosched).
	MPI string
	// MPILib is the directory of cosched's MPI library (MPILibName) for
	// api.MPICosched jobs; empty: lib/cosched beside the directory of the
	// agent's executable (../lib/cosched from bin/cosched).
	MPILib string
	// NodeChannelsOnly keeps MPI traffic between nodes on the relay links
	// (relay.Config.NodeChannelsOnly; --mpi-channels node).
	NodeChannelsOnly bool
	// Cgroups is how jobs are contained: "auto" or "" (cgroups v2 or v1
	// as the host has them, else process groups only), "v1", "v2" or
	// "none" (see node/jobcg).
	Cgroups string
	// JobsCPUWeight is the CPU weight (cgroup v2 scale, 1–10000) of the
	// parent of the jobs' cgroups, against the agent's 100: 0 means
	// jobcg.DefaultCPUWeight (10), -1 leaves the kernel's default (see
	// jobcg.Config.CPUWeight and docs/cgroups.md). The agent's flag
	// defaults to -1: weighed ranks starve behind anything else busy on
	// the host (a rank's shim then misses its 10 s start).
	JobsCPUWeight int
	// Suspend is how ranks are suspended between their slices:
	// SuspendSignal (SIGSTOP/SIGCONT, the default) or SuspendFreezer
	// (the job's cgroup freezer; needs cgroups).
	Suspend string
	// MemReserve is the memory kept back for the system: the agent
	// advertises MemTotal less it for the controller's admission by
	// memory. Negative: advertise nothing (no memory admission).
	MemReserve int64
	Log        *zap.Logger
}

// Validate reports every problem with the configuration at once, each a
// *fielderr.Error naming the field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
	}
	inRange := func(field string, v, lo, hi int) {
		if v < lo || v > hi {
			bad(field, v, "must be from %d to %d", lo, hi)
		}
	}
	if c.Name == "" {
		bad("Name", nil, "required")
	}
	if c.Bind == "" {
		bad("Bind", nil, "required (host:port for gossip)")
	} else if _, _, err := net.SplitHostPort(c.Bind); err != nil {
		bad("Bind", strconv.Quote(c.Bind), "%v", err)
	}
	if c.StateDir == "" {
		bad("StateDir", nil, "required")
	}
	if l := len(c.SecretKey); l != 0 && l != 16 && l != 24 && l != 32 {
		bad("SecretKey", nil, "%d bytes, want 16, 24 or 32", l)
	}
	if c.Controller {
		c.validateController(bad)
	}
	for _, cpu := range c.CPUs {
		if cpu < 0 {
			bad("CPUs", nil, "%d is not a CPU number", cpu)
		}
	}
	if c.Suspend != "" && c.Suspend != api.SuspendSignal && c.Suspend != api.SuspendFreezer {
		bad("Suspend", strconv.Quote(c.Suspend), "want signal or freezer")
	}
	switch c.Cgroups {
	case "", "auto", "v1", "v2", "none":
	default:
		bad("Cgroups", strconv.Quote(c.Cgroups), "want auto, v1, v2 or none")
	}
	inRange("Processors", c.Processors, 0, gang.MaxProcessors)
	inRange("APIPort", c.APIPort, 0, 65535)
	inRange("Nice", c.Nice, -20, 19)
	inRange("RankNice", c.RankNice, -20, 19)
	inRange("JobsCPUWeight", c.JobsCPUWeight, -1, 10000)
	inRange("Priority", c.Priority, 0, 99)
	if c.StrobeFanout < 0 || c.StrobeFanout > 255 {
		bad("StrobeFanout", c.StrobeFanout, "want 0 (direct) to 255")
	}
	if c.StrobeMulticast != "" {
		if ap, err := netip.ParseAddrPort(c.StrobeMulticast); err != nil || !ap.Addr().Is4() || !ap.Addr().IsMulticast() || ap.Port() == 0 {
			bad("StrobeMulticast", strconv.Quote(c.StrobeMulticast), "want an IPv4 multicast address and a port, e.g. 239.1.2.3:7950")
		}
	}
	if c.ControllerGrace < 0 {
		bad("ControllerGrace", c.ControllerGrace, "must not be negative")
	}
	if c.DeadControllerAfter < 0 {
		bad("DeadControllerAfter", c.DeadControllerAfter, "must not be negative (0: never)")
	}
	if c.NoCompute && (len(c.CPUs) > 0 || c.Processors > 0) {
		bad("NoCompute", nil, "an agent that offers no processors takes no {CPUs} or {Processors}")
	}
	if len(errs) > 0 {
		return fmt.Errorf("node: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

// validateController checks the settings of a controller-eligible agent.
func (c *Config) validateController(bad func(field string, v any, format string, args ...any)) {
	if _, err := sharing.Parse(string(c.Mode)); err != nil {
		bad("Mode", nil, "%v", err)
	}
	if c.Mode.TimeShared() && (c.Slice < sharing.MinSlice || c.Slice > sharing.MaxSlice) {
		bad("Slice", c.Slice, "must be from %v to %s", sharing.MinSlice, strings.TrimSuffix(sharing.MaxSlice.String(), "0m0s"))
	}
	switch {
	case c.MPL < 1 || c.MPL > gang.MaxMPL:
		bad("MPL", c.MPL, "must be from 1 to %d", gang.MaxMPL)
	case c.Mode == sharing.Space && c.MPL != 1:
		bad("MPL", c.MPL, "space mode has one row (MPL 1)")
	}
	if _, err := gang.ParsePolicy(string(c.Policy)); err != nil {
		bad("Policy", strconv.Quote(string(c.Policy)), "unknown policy (valid: %s)", gang.PolicyNames())
	}
	if _, err := api.ParseMPI(c.MPI); err != nil {
		bad("MPI", nil, "%v", err)
	}
	if c.Controllers < 0 || c.Controllers > 15 {
		bad("Controllers", c.Controllers, "want 1 to 15 (an odd number: 1, 3 or 5)")
	}
	if c.RaftPort < 0 || c.RaftPort > 65535 {
		bad("RaftPort", c.RaftPort, "must be from 0 to 65535")
	}
}

// Agent is a node's daemon.
type Agent struct {
	cfg     Config
	log     *zap.Logger
	ranks   *rank.Manager
	cg      *jobcg.Tree // the jobs' cgroups (ModeNone: none)
	dirLock *os.File    // holds the state directory's lock while the agent runs
	guard   guardProc   // the cleanup guard (guard.go), stopped last

	// launchMu serialises launch and kill: a kill from another goroutine
	// (a newer control connection, the controller grace) waits for a
	// launch under way, so that it ends every rank the launch starts.
	// The agent's stop takes it too, for the same reason, and sets
	// stopped under it: no launch starts a rank or makes a cgroup after.
	launchMu sync.Mutex
	stopped  bool // guarded by launchMu

	sw       *switcher
	ml       *member.Membership
	udp      strobe.Transport
	hbUDP    strobe.Transport    // heartbeat exchange, normal priority
	mcUDP    strobe.Transport    // the strobes' multicast group (StrobeMulticast), or nil
	skew     *strobe.SkewTracker // the controller's agent only
	follower *strobe.Follower
	relay    *relay.Relay
	group    *controlGroup // controller-eligible agents: the journal (nil with Config.Journal)
	leadDone chan struct{} // closed when lead has returned (its controller stopped)
	ctlLn    net.Listener
	apiLn    net.Listener
	api      *http.Server
	metrics  *prometheus.Registry

	// ctlAuth authenticates control connections (nil without a key);
	// metricsSrv serves Config.MetricsListen (nil without).
	ctlAuth    *controlAuth
	metricsSrv *metricsServer

	// authFailures counts API requests refused 401, authDenials 403.
	authFailures, authDenials prometheus.Counter
	// controllersRemoved counts the controllers this agent, leading,
	// removed from the raft group, by who asked (operator, autopilot).
	controllersRemoved *prometheus.CounterVec
	unixLn             net.Listener
	proxies            proxies
	pmi                *pmi.Server  // MPI jobs' PMI connections
	pmix               *pmix.Server // --mpi pmix jobs' helpers
	mpiLib             string       // where cosched's MPI library is looked for (Config.MPILib)

	// strobeAuth seals and opens strobes and heartbeats (nil: no key):
	// the node's one sequence, its Follower's and, while it leads, its
	// Sender's.
	strobeAuth *strobe.Auth

	// pmiPending holds each job's PMI barrier sent to (or waiting for) a
	// controller and not yet ended; a new controller gets them again.
	// Guarded by mu.
	pmiPending map[int64]pmiBarrier

	ui *webUI // the web page's sessions and events (package ui)

	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
	// detached is closed by Detach: the agent exits leaving its kept
	// ranks running (forwardExits stops reading their exits).
	detached chan struct{}
	stopOnce sync.Once
	stopErr  error

	// ctlChanged wakes watchController when link changes (capacity 1: a
	// pending wake-up covers any number of changes).
	ctlChanged chan struct{}

	mu sync.Mutex // guards actl, link, ctrl, meta, ml, hbAddrs, ctrlHBs, stats
	// actl is the agent's side of the control protocol (node/agentctl):
	// the current link, launches taken, ranks unreported, exits pending
	// and delivered. The shell feeds it under mu and carries out its
	// effects (stepLocked) before releasing mu.
	actl    *agentctl.Machine
	link    *controlLink // the current link's connection and writer, nil without one
	ctrl    *Controller  // the controller it runs while it leads
	ctlName string       // the controller agent whose connection it serves
	// ctlGrace is the latest controller's reconnect grace, from its hello
	// (0: none said one yet): see controllerGrace.
	ctlGrace time.Duration
	meta     member.Meta // what it gossips about itself
	// hbAddrs is every other member's heartbeat address, by name; ctrlHBs
	// the controller-eligible agents' (setHeartbeatPeers).
	hbAddrs map[string]string
	ctrlHBs []string
	// liveEvery is the liveness period in slices (guarded by mu): a controller hears
	// each agent's heartbeat on one slice in liveEvery (livenessEvery).
	liveEvery int
	stats     map[rankKey]comm.Stats // benchmark ranks' reports, until their exit
	// mpiJobs is the jobs with ranks here on cosched's MPI library
	// (api.MPICosched), until their last rank here exits.
	mpiJobs map[int64]bool
}

type rankKey struct {
	job  int64
	rank int
}

// HeldProcessors is how many of the agent's goroutines hold a Go
// processor (P) for their whole life with KeepProcessors, waiting in raw
// system calls the scheduler does not see: the real-time strobe
// receiver, the real-time multicast receiver, and a controller's slice
// clock (strobe.RealtimeUDP.Serve, strobe.Ticker.Run). The agent command
// adds as many to GOMAXPROCS, so the rest of the agent keeps what it had.
func (c *Config) HeldProcessors() int {
	if !c.KeepProcessors {
		return 0
	}
	n := 0
	if c.Priority > 0 {
		n++
		if c.StrobeMulticast != "" {
			n++
		}
	}
	if c.Controller && c.Mode.TimeShared() {
		n++
	}
	return n
}

// listenStrobe opens the strobe socket: a real-time one (its own thread
// receives strobes and switches ranks) unless priority is 0.
func listenStrobe(host string, priority int, log *zap.Logger) (strobe.Transport, error) {
	if priority == 0 {
		return strobe.ListenUDP(net.JoinHostPort(host, "0"), log)
	}
	ip := host
	if _, err := netip.ParseAddr(host); err != nil {
		addrs, err := net.LookupHost(host)
		if err != nil || len(addrs) == 0 {
			return nil, fmt.Errorf("resolve %s: %v", host, err)
		}
		ip = addrs[0]
	}
	return strobe.ListenUDPRealtime(net.JoinHostPort(ip, "0"), priority, log)
}

// keepProcessor makes a real-time strobe socket's receive loop keep its
// P, if keep (Config.KeepProcessors); an ordinary socket has no such loop.
func keepProcessor(tr strobe.Transport, keep bool) {
	if rt, ok := tr.(*strobe.RealtimeUDP); ok && keep {
		rt.KeepProcessor()
	}
}

// listenStrobeMulticast joins the strobes' multicast group: on a
// real-time socket, as the strobe socket (its own thread receives group
// strobes and switches ranks), unless priority is 0.
func listenStrobeMulticast(group, ifname string, priority int, log *zap.Logger) (strobe.Transport, error) {
	if priority == 0 {
		return strobe.ListenMulticastUDP(group, ifname, log)
	}
	return strobe.ListenMulticastUDPRealtime(group, ifname, priority, log)
}

func advertised(addr, host string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return net.JoinHostPort(host, port)
}

func (a *Agent) goRun(f func()) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
}

// setHeartbeatPeers points this agent's heartbeats at the
// controller-eligible agents (liveness, skew: whichever leads, or takes
// over, hears it; a constant number, and at more than
// maxLivenessPerSlice agents on one slice in livenessEvery) and at the roots of its jobs
// (relay.HeartbeatNodes: BCS's control data, transfers announced and
// barrier arrivals, which each root answers with a frame to every node of
// its job), and at no one else: heartbeats per slice are bounded by the
// jobs a node runs, not by the cluster's or the jobs' size. Called at
// membership changes and whenever the relay's jobs or their roots change;
// it takes effect at the next strobe.
func (a *Agent) setHeartbeatPeers() {
	roots := a.relay.HeartbeatNodes()
	a.mu.Lock()
	peers := make([]string, 0, len(roots))
	for _, n := range roots {
		if addr, ok := a.hbAddrs[n]; ok {
			peers = append(peers, addr)
		}
	}
	live, every := a.ctrlHBs, a.liveEvery
	a.mu.Unlock()
	a.follower.SetPeers(peers) // drops this agent's own address and duplicates
	a.follower.SetLivenessPeers(live, every)
}

// maxLivenessPerSlice is how many agents' liveness heartbeats a
// controller-eligible agent hears a slice, at most on average: beyond it
// each agent heartbeats the controllers on one slice in livenessEvery.
const maxLivenessPerSlice = 128

// livenessEvery is the liveness period, in slices, for a cluster of
// members agents: 1 up to maxLivenessPerSlice agents, 8 at 1,024.
func livenessEvery(members int) int {
	return max(1, (members+maxLivenessPerSlice-1)/maxLivenessPerSlice)
}

// watchMembers feeds membership changes to the controller (if this agent
// runs it) and to the heartbeat exchange, and reacts to the controller's
// departure.
func (a *Agent) watchMembers(ctx context.Context) {
	refresh := func() {
		hbAddrs := map[string]string{}
		relays := map[string]string{}
		var ctrlHBs []string
		for _, m := range a.ml.Members() {
			if m.Name != a.cfg.Name {
				hbAddrs[m.Name] = cmp.Or(m.HeartbeatAddr, m.StrobeAddr)
				relays[m.Name] = m.RelayAddr
			}
			if m.Controller {
				ctrlHBs = append(ctrlHBs, cmp.Or(m.HeartbeatAddr, m.StrobeAddr))
			}
		}
		a.mu.Lock()
		a.hbAddrs, a.ctrlHBs = hbAddrs, ctrlHBs
		a.liveEvery = livenessEvery(len(hbAddrs) + 1)
		a.mu.Unlock()
		a.setHeartbeatPeers()
		a.relay.SetPeers(relays)
	}
	refresh()
	a.controllersChanged(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-a.ml.Events():
			if !ok {
				return
			}
			refresh()
			a.controllersChanged(ctx)
			if ev.Kind != member.EventUpdate && ev.Meta.Name != a.cfg.Name {
				a.log.Info("member "+ev.Kind.String(), zap.String("member", ev.Meta.Name))
			}
			switch ev.Kind {
			case member.EventJoin, member.EventUpdate:
				if c := a.controller(); c != nil && ev.Meta.CPUs > 0 {
					c.MemberJoined(ev.Meta)
				}
			case member.EventLeave:
				// Its own agent leaving means the controller is shutting
				// down: the other agents' ranks outlive it (their grace).
				if c := a.controller(); c != nil && ev.Meta.Name != a.cfg.Name {
					c.MemberLeft(ev.Meta.Name)
				}
				a.mu.Lock()
				serving := a.ctlName == ev.Meta.Name
				a.mu.Unlock()
				if (ev.Meta.Leads > 0 || serving) && ev.Meta.Name != a.cfg.Name {
					a.controllerGone(ev.Meta.Name)
				}
			}
		}
	}
}

// controllersChanged tells the controllers' group which eligible agents
// gossip shows (it forms or grows the group).
func (a *Agent) controllersChanged(ctx context.Context) {
	if a.group == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.group.MembersChanged(ctx, eligible(a.ml.Members())); err != nil && ctx.Err() == nil {
		a.log.Warn("controller group", zap.Error(err))
	}
}

// APIAddr is the address of the agent's HTTP API.
func (a *Agent) APIAddr() string { return a.apiLn.Addr().String() }

// GossipAddr is the address other agents join this one at.
func (a *Agent) GossipAddr() string { return a.ml.Addr() }

// Name is the agent's name.
func (a *Agent) Name() string { return a.cfg.Name }

// Done is closed when the agent has shut down.
func (a *Agent) Done() <-chan struct{} { return a.done }

// Shutdown leaves the cluster gracefully, kills every local rank, and
// waits for the agent's goroutines. It is idempotent.
func (a *Agent) Shutdown() error {
	a.stopOnce.Do(func() {
		if a.ml != nil {
			if err := a.ml.Leave(leaveTimeout); err != nil {
				a.log.Warn("leave", zap.Error(err))
			}
		}
		a.stopErr = a.closeAll()
		close(a.done)
	})
	return a.stopErr
}

// Detach stops the agent like Shutdown but, with Config.KeepRanks, leaves
// its ranks running under their keepers, their cgroups and records in
// place, for its next life to take back (a restart, an upgrade); the
// controller waits ControllerGrace for it. Without KeepRanks it is
// Shutdown.
func (a *Agent) Detach() error {
	if a.cfg.KeepRanks {
		a.stopOnce.Do(func() {
			close(a.detached)
			if a.ml != nil {
				if err := a.ml.Leave(leaveTimeout); err != nil {
					a.log.Warn("leave", zap.Error(err))
				}
			}
			a.stopErr = a.closeAll()
			close(a.done)
		})
	}
	return a.Shutdown()
}

// detaching reports whether Detach has begun.
func (a *Agent) detaching() bool {
	select {
	case <-a.detached:
		return true
	default:
		return false
	}
}

// newIncarnation is a random, non-zero name for an agent's life.
func newIncarnation() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("node: no randomness for the agent's incarnation: %v", err)) // crypto/rand does not fail on Linux
		}
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// leaveTimeout bounds how long Shutdown waits for the gossip "leaving"
// message to go out. Leaving is a courtesy (the others would notice the
// agent's death anyway), and when the whole cluster stops at once nobody is
// left to take the message: waiting longer only delays the stop a signal
// asked for.
const leaveTimeout = 300 * time.Millisecond

// closeAll releases everything Start created, in dependency order.
func (a *Agent) closeAll() error {
	var errs []error
	if a.cancel != nil {
		a.cancel()
	}
	if a.api != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := a.api.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
	} else if a.apiLn != nil {
		a.apiLn.Close()
		if a.unixLn != nil {
			a.unixLn.Close()
		}
	}
	a.metricsSrv.close()
	if a.ctlLn != nil {
		a.ctlLn.Close()
	}
	if a.leadDone != nil {
		// The controller stops first: the local ranks' deaths below must not
		// fail jobs whose ranks on other agents outlive it (their grace).
		<-a.leadDone
	}
	if a.group != nil {
		if err := a.group.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	// A launch still under way (its control connection's goroutine is
	// only waited for below) ends first: after Close, its cgroup would be
	// made again and left, its ranks started uncontained.
	a.launchMu.Lock()
	a.stopped = true
	// The cgroups first: a frozen rank would not die of the rank
	// manager's signals, and its Close waits for every rank's death.
	if a.detaching() {
		if a.ranks != nil {
			a.ranks.Detach() // the ranks and their cgroups stay
		}
	} else {
		if a.cg != nil {
			if err := a.cg.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if a.ranks != nil {
			if err := a.ranks.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	a.launchMu.Unlock()
	if a.pmi != nil {
		a.pmi.Close()
	}
	if a.pmix != nil {
		a.pmix.Close()
	}
	if a.udp != nil {
		a.udp.Close()
	}
	if a.hbUDP != nil {
		a.hbUDP.Close()
	}
	if a.mcUDP != nil {
		a.mcUDP.Close()
	}
	if a.relay != nil {
		a.relay.Close()
	}
	a.mu.Lock()
	if a.link != nil {
		a.link.close()
	}
	a.mu.Unlock()
	a.wg.Wait()
	if a.ml != nil {
		if err := a.ml.Shutdown(); err != nil {
			errs = append(errs, err)
		}
	}
	// Everything is cleaned, or left for the next life to take: the guard
	// has nothing left to do, or watches for that life.
	a.stopGuard(a.detaching())
	if a.dirLock != nil {
		a.dirLock.Close() // releases the lock: another life may start
	}
	return errors.Join(errs...)
}

// advertiseFor is the host other agents reach this one at when the agent
// binds to bindHost: bindHost itself, unless it is every interface
// (0.0.0.0, ::, empty), where that is one of this machine's addresses of
// the same family: a private one (10/8, 172.16/12, 192.168/16, fc00::/7)
// if there is one, else any global unicast one.
func advertiseFor(bindHost string) (string, error) {
	bind, err := netip.ParseAddr(bindHost)
	if bindHost != "" && (err != nil || !bind.IsUnspecified()) {
		return bindHost, nil
	}
	wantV4 := bindHost == "" || bind.Is4()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("listing interfaces to find an address to advertise: %w (pass --advertise)", err)
	}
	var public string
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr().Unmap()
		if ip.Is4() != wantV4 || !ip.IsGlobalUnicast() {
			continue // loopback, link-local, multicast, or the other family
		}
		if ip.IsPrivate() {
			return ip.String(), nil
		}
		if public == "" {
			public = ip.String()
		}
	}
	if public == "" {
		return "", fmt.Errorf("bound to every interface (%q) and this machine has no address of that family to advertise: pass --advertise", bindHost)
	}
	return public, nil
}

// advertiseIP is host if it is an IP literal (memberlist wants one), else
// "" to let memberlist resolve the bind address itself.
func advertiseIP(host string) string {
	if _, err := netip.ParseAddr(host); err != nil {
		return ""
	}
	return host
}

// relaySocket is where ranks reach the relay: in the state directory,
// unless that path is too long for a Unix socket (107 bytes).
// apiSocket is where the API's Unix socket goes: Config.APISocket, else
// the state directory (or the temporary directory when that path is too
// long for a socket address).
func apiSocket(cfg Config) string {
	if cfg.APISocket != "" {
		return cfg.APISocket
	}
	p := filepath.Join(cfg.StateDir, APISocketName)
	if len(p) < 100 {
		return p
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("cosched-%s-%d-api.sock", cfg.Name, os.Getpid()))
}

// APISocket is the path of the API's Unix socket.
func (a *Agent) APISocket() string { return a.unixLn.Addr().String() }

func relaySocket(cfg Config) string {
	p := filepath.Join(cfg.StateDir, "relay.sock")
	if len(p) < 100 {
		return p
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("cosched-%s-%d.sock", cfg.Name, os.Getpid()))
}

// rankStats keeps a benchmark rank's report for its exit.
func (a *Agent) rankStats(job int64, rank int, s comm.Stats) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stats[rankKey{job, rank}] = s
}

// interfaceOf names the network interface that has address host (an IP
// or a name that resolves to one): the one to join a multicast group on.
func interfaceOf(host string) (string, error) {
	ips, err := net.LookupIP(host)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", host, err)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, ifi := range ifs {
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && slices.ContainsFunc(ips, ipn.IP.Equal) {
				return ifi.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no interface has address %s (bind the agent to an interface's address to use multicast)", host)
}
