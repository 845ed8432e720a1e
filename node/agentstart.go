package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/comm/relay"
	"github.com/cosched/cosched/member"
	"github.com/cosched/cosched/node/agentctl"
	"github.com/cosched/cosched/node/rank"
	"github.com/cosched/cosched/node/rank/shim"
	"github.com/cosched/cosched/pmi"
	"github.com/cosched/cosched/pmix"
	"github.com/cosched/cosched/strobe"
)

// Start binds the agent's sockets, joins the cluster and starts serving.
// Shutdown stops it.
func Start(cfg Config) (*Agent, error) { return StartContext(context.Background(), cfg) }

// StartContext is Start that gives up, releasing what it has opened, when
// ctx ends while it waits (joining peers, electing the controllers' leader):
// an agent told to stop while it starts stops at once. ctx bounds only the
// start; Shutdown stops the agent.
//
// The steps run in the order below, each a method that says why it comes
// where it does; a step that fails releases everything opened before
// (closeAll).
func StartContext(ctx context.Context, cfg Config) (*Agent, error) {
	cfg, err := completeConfig(cfg)
	if err != nil {
		return nil, err
	}
	a := newAgent(cfg)
	ok := false
	defer func() {
		if !ok {
			a.closeAll()
		}
	}()
	if err := a.lockStateDir(ctx); err != nil {
		return nil, err
	}
	a.raisePriority()
	launches, err := a.openRanks()
	if err != nil {
		return nil, err
	}
	a.startGuard()
	host, _, _ := net.SplitHostPort(a.cfg.Bind)
	if err := a.listen(host); err != nil {
		return nil, err
	}
	if err := a.openRelay(host, launches); err != nil {
		return nil, err
	}
	run, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	if err := a.openControllerGroup(ctx, host); err != nil {
		return nil, err
	}
	a.newFollower()
	a.registerMetrics()
	a.newAPI()
	a.serve(run)
	if err := a.joinCluster(ctx, run); err != nil {
		return nil, err
	}
	ok = true
	a.log.Info("agent started", zap.String("gossip", a.ml.Addr()), zap.String("api", a.meta.APIAddr),
		zap.Bool("controller", a.cfg.Controller), zap.Int("processors", a.cfg.Processors), zap.String("suspend", a.suspendStatus()))
	return a, nil
}

// completeConfig fills in cfg's defaults and checks it, before anything
// is opened: an agent with a bad configuration touches nothing.
func completeConfig(cfg Config) (Config, error) {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if len(cfg.CPUs) == 0 && cfg.Processors == 0 && !cfg.NoCompute {
		cfg.Processors = runtime.NumCPU()
	}
	if len(cfg.CPUs) > 0 {
		cfg.Processors = len(cfg.CPUs)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	// Ranks run in their own working directories and find the relay's
	// socket from the path they are given: a relative one would miss.
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return cfg, fmt.Errorf("node: state dir: %w", err)
	}
	cfg.StateDir = abs
	if err := stateDir(cfg.StateDir); err != nil {
		return cfg, fmt.Errorf("node: state dir: %w", err)
	}
	if len(cfg.Shim) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return cfg, fmt.Errorf("node: locating the rank shim: %w", err)
		}
		// A small binary beside the agent's when make build put one
		// there: every rank start and every kept rank's memory pays for
		// the shim's binary (cmd/cosched-rank).
		cfg.Shim = shim.Command(exe)
		if len(cfg.Guard) == 0 {
			cfg.Guard = []string{exe, "agent", "--cleanup-guard"}
		}
		if len(cfg.BenchRank) == 0 {
			cfg.BenchRank = []string{exe, "bench-rank"}
		}
	}
	if len(cfg.BenchRank) == 0 {
		cfg.BenchRank = []string{cfg.Shim[0], "bench-rank"}
	}
	if cfg.Advertise == "" {
		host, _, _ := net.SplitHostPort(cfg.Bind)
		adv, err := advertiseFor(host)
		if err != nil {
			return cfg, fmt.Errorf("node: %w", err)
		}
		cfg.Advertise = adv
	}
	return cfg, nil
}

// newAgent is the agent of a complete configuration, with nothing opened
// yet, and its control protocol's machine for this life (a new
// incarnation).
func newAgent(cfg Config) *Agent {
	a := &Agent{cfg: cfg, log: cfg.Log.With(zap.String("agent", cfg.Name)), done: make(chan struct{}), detached: make(chan struct{}), metrics: prometheus.NewRegistry(),
		stats: map[rankKey]comm.Stats{}, mpiJobs: map[int64]bool{}, ctlChanged: make(chan struct{}, 1),
		actl: agentctl.New(agentctl.Config{Incarnation: newIncarnation(), Keeps: cfg.KeepRanks})}
	if cfg.Key == nil {
		a.log.Warn("NO CLUSTER KEY (--key-file): the API trusts every caller that can reach it as this agent's user, control and relay connections are not authenticated, and anyone can forge strobes and heartbeats; anyone on the network can run commands here. Give every agent the same key file (cluster up makes one) — see docs/security.md")
	}
	return a
}

// lockStateDir takes the state directory's lock first: a second agent on
// the same directory must be refused before it reads, kills or adopts
// anything of the first one's.
func (a *Agent) lockStateDir(ctx context.Context) error {
	var err error
	if a.dirLock, err = lockStateDir(ctx, a.cfg.StateDir); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}

// raisePriority sets the agent's nice value and, if asked, its real-time
// priority, before it starts any thread of its own or any rank: ranks are
// born with the nice value they are given (RankNice), never the agent's.
func (a *Agent) raisePriority() {
	cfg := &a.cfg
	if cfg.Nice != 0 {
		if err := setOwnNice(cfg.Nice); err != nil {
			a.log.Warn("cannot raise the agent's priority; switches may lag under load", zap.Int("nice", cfg.Nice), zap.Error(err))
		}
	}
	realtime := false
	if cfg.Priority > 0 {
		// The whole agent above the ranks, its strobe path above the rest.
		if err := setOwnRealtime(max(1, cfg.Priority/5)); err != nil {
			a.log.Warn("cannot give the agent real-time priority; switches may lag behind busy ranks", zap.Error(err))
		} else {
			realtime = true
		}
	}
	if realtime && cfg.JobsCPUWeight >= 0 {
		// A real-time agent preempts its ranks whatever their weight,
		// and putting them in a cpu cgroup of their own beside it was
		// measured to make things much worse (v1, 8 agents on 2 cores:
		// switch skew p99 from under 1 ms to seconds, strobes lost):
		// the weight is for agents without real-time priority.
		a.log.Info("jobs not weighed against the agent: it runs at real-time priority (docs/cgroups.md)")
		cfg.JobsCPUWeight = -1
	}
}

// openRanks reads what a previous life left, then opens the jobs'
// cgroups, the rank manager and the PMI servers. What was left is read,
// and refused if unreadable or another agent's, before any process or
// cgroup is touched; the cgroups of jobs with live kept ranks are adopted,
// not cleaned. It returns the kept jobs' launches, for openRelay.
func (a *Agent) openRanks() (map[int64]launch, error) {
	cfg := a.cfg
	kept, launches, err := keptLaunches(cfg)
	if err != nil {
		return nil, fmt.Errorf("node: state dir %s: %w", cfg.StateDir, err)
	}
	if a.cg, err = openCgroups(cfg, a.log, liveJobs(kept)...); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	rankNice := cfg.RankNice // ranks never run at the agent's raised priority
	a.log.Info("rank shim", zap.Strings("command", cfg.Shim))
	rcfg := rank.Config{Shim: cfg.Shim, Log: a.log, Nice: &rankNice}
	if cfg.KeepRanks {
		rcfg.KeepDir, rcfg.KeepOwner = keepDir(cfg), cfg.Name
	}
	if a.ranks, err = rank.NewManager(rcfg); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	a.pmi = pmi.NewServer(pmi.Hooks{Barrier: a.pmiBarrierIn, Fail: a.pmiFail, Ended: a.pmiEnded}, a.log)
	a.pmix = pmix.NewServer(pmix.Hooks{Barrier: a.pmiBarrierIn, Fail: a.pmiFail}, a.log)
	if a.mpiLib, err = filepath.Abs(mpiLibDir(cfg.MPILib)); err != nil {
		return nil, fmt.Errorf("node: --mpi-lib: %w", err)
	}
	// The switcher suspends through the cgroups or the rank manager.
	a.sw = newSwitcher(a.suspender(), false, a.log)
	return launches, nil
}

// listen opens every socket the agent serves on (control, API, metrics,
// strobes, heartbeats), before it joins gossip: the addresses go in its
// gossip metadata, and a port that cannot be bound fails the start before
// the cluster has seen the agent.
func (a *Agent) listen(host string) error {
	cfg := a.cfg
	var err error
	if a.ctlAuth, err = newControlAuth(cfg.Key); err != nil {
		return err
	}
	if a.ctlLn, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
		return fmt.Errorf("node: control listener: %w", err)
	}
	if a.apiLn, err = net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(cfg.APIPort))); err != nil {
		return fmt.Errorf("node: API listener: %w", err)
	}
	if a.metricsSrv, err = listenMetrics(cfg.MetricsListen, a.metrics); err != nil {
		return err
	}
	if a.unixLn, err = listenAPISocket(apiSocket(cfg)); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if a.udp, err = listenStrobe(host, cfg.Priority, a.log); err != nil {
		return fmt.Errorf("node: strobe socket: %w", err)
	}
	keepProcessor(a.udp, cfg.KeepProcessors)
	// Heartbeats have a socket of their own, off the strobe path.
	if a.hbUDP, err = strobe.ListenUDP(net.JoinHostPort(host, "0"), a.log); err != nil {
		return fmt.Errorf("node: heartbeat socket: %w", err)
	}
	if cfg.StrobeMulticast != "" {
		ifname, err := interfaceOf(host)
		if err != nil {
			return fmt.Errorf("node: strobe multicast: %w", err)
		}
		if a.mcUDP, err = listenStrobeMulticast(cfg.StrobeMulticast, ifname, cfg.Priority, a.log); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		keepProcessor(a.mcUDP, cfg.KeepProcessors)
	}
	return nil
}

// openRelay starts the relay, then reattaches the jobs of the ranks a
// previous life kept: a kept comm rank reconnects to the relay, which
// must know its job again (ReattachJob), and the switcher must know its
// ranks before the first strobe. Nothing is served yet, so no controller
// sees the agent before its kept ranks are its own again.
func (a *Agent) openRelay(host string, launches map[int64]launch) error {
	cfg := a.cfg
	var err error
	if a.relay, err = relay.New(relay.Config{Node: cfg.Name, SocketPath: relaySocket(cfg), Listen: net.JoinHostPort(host, "0"), Log: a.log,
		OnBlocked: a.sw.blocked, OnStats: a.rankStats, OnAbort: a.rankAborted, OnHeartbeatNodes: a.setHeartbeatPeers, Key: cfg.Key,
		NodeChannelsOnly: cfg.NodeChannelsOnly}); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if err := a.reattach(launches); err != nil {
		return fmt.Errorf("node: state dir %s: %w", cfg.StateDir, err)
	}
	if d := unsearchable(a.relay.SocketPath()); d != "" && os.Geteuid() == 0 {
		a.log.Warn("other users' ranks cannot reach the relay socket: comm jobs of users other than root will fail (chmod o+x the directory, docs/security.md)", zap.String("directory", d))
	}
	return nil
}

// openControllerGroup, on a controller-eligible agent, checks the
// controller's configuration now, not when it first leads, and opens the
// controllers' journal (its raft address goes in the gossip metadata).
func (a *Agent) openControllerGroup(ctx context.Context, host string) error {
	if !a.cfg.Controller {
		return nil
	}
	if _, err := NewController(a.controllerConfig(), nil, 0); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if a.cfg.Journal == nil {
		return a.openGroup(ctx, host)
	}
	return nil
}

// newFollower sets up the strobe follower over the strobe sockets and the
// relay: every agent follows strobes (whether rows rotate is the
// controller's choice, carried by its hello; a follower with no strobes
// costs nothing). The relay cuts each slice at the switch and exchanges
// its control data in the heartbeats (BCS). The controller's agent hears
// every heartbeat: the switch times they carry give the cluster's skew
// for /metrics.
func (a *Agent) newFollower() {
	cfg := a.cfg
	if !cfg.UnsealedStrobes {
		a.strobeAuth = strobe.NewAuth(cfg.Key, cfg.Name)
	} else if cfg.Key != nil {
		a.log.Warn("strobes and heartbeats UNSEALED despite the cluster key (measuring only): anyone on the network can switch this node's rows")
	}
	fcfg := strobe.FollowerConfig{Name: cfg.Name, Transport: a.udp, Heartbeats: a.hbUDP, Multicast: a.mcUDP, Switch: a.sw.Switch, Log: a.log,
		HeartbeatData: a.relay.HeartbeatData, Auth: a.strobeAuth}
	if cfg.Controller {
		a.skew = strobe.NewSkewTracker(0)
	}
	fcfg.Applied = func(r strobe.SliceRecord) {
		a.relay.Cut(r.Epoch, r.Seq)
		if a.skew != nil {
			a.skew.Observe(r.Epoch, r.Seq, r.SwitchedMono)
		}
	}
	fcfg.Heartbeat = func(hb strobe.Heartbeat, _ int64) {
		a.relay.PeerHeartbeat(hb.From, hb.Epoch, hb.Seq, hb.Data)
		if a.skew != nil {
			a.skew.Observe(hb.Epoch, hb.Seq, hb.SwitchedMono)
		}
	}
	a.follower = strobe.NewFollower(fcfg)
}

// newAPI builds the agent's gossip metadata (every address is bound by
// now) and its HTTP API, which reads it.
func (a *Agent) newAPI() {
	cfg := a.cfg
	meta := member.Meta{
		Name:          cfg.Name,
		StrobeAddr:    advertised(a.udp.LocalAddr(), cfg.Advertise),
		HeartbeatAddr: advertised(a.hbUDP.LocalAddr(), cfg.Advertise),
		RelayAddr:     advertised(a.relay.Addr(), cfg.Advertise),
		ControlAddr:   advertised(a.ctlLn.Addr().String(), cfg.Advertise),
		APIAddr:       advertised(a.apiLn.Addr().String(), cfg.Advertise),
		CPUs:          cfg.Processors,
		Controller:    cfg.Controller,
		Memory:        a.offeredMemory(),
	}
	if a.group != nil {
		meta.RaftAddr = a.group.RaftAddr()
	}
	a.meta = meta
	a.ui = a.newWebUI()
	a.api = &http.Server{Handler: a.authenticate(a.routes()), ReadHeaderTimeout: 10 * time.Second, ConnContext: connContext}
}

// serve starts the agent's goroutines (each owned by a.wg, ended by run
// or by closing what it reads): control connections, the controller
// watch, rank exits, cgroup sampling, the API, strobes. They start before
// the agent joins gossip, so that a controller that learns of it can
// connect at once.
func (a *Agent) serve(run context.Context) {
	a.goRun(func() { a.serveControl(run) })
	a.goRun(func() { a.ui.hub.Run(run) })
	a.goRun(func() { a.watchController(run) })
	a.goRun(a.forwardExits)
	a.goRun(func() { a.sampleCgroups(run) })
	a.goRun(func() {
		if err := a.api.Serve(a.apiLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("API server", zap.Error(err))
		}
	})
	a.goRun(func() { a.metricsSrv.serve(a.log) })
	a.goRun(func() {
		if err := a.api.Serve(a.unixLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("API server (Unix socket)", zap.Error(err))
		}
	})
	a.goRun(func() {
		if err := a.follower.Run(run); err != nil && run.Err() == nil {
			a.log.Error("strobe follower", zap.Error(err))
		}
	})
}

// joinCluster joins gossip last, when everything it advertises is
// served, then watches the members and, on a controller-eligible agent,
// runs for the lead.
func (a *Agent) joinCluster(ctx, run context.Context) error {
	cfg := a.cfg
	// The presets' failure detection is tuned for hosts whose processors
	// the ranks keep busy, and the slice heartbeats this agent hears are
	// evidence of life: gossip's verdict of death on an agent heard within
	// the last HeardWindow is held (member.Config.Heard).
	mcfg := member.DefaultLANConfig()
	if cfg.Local {
		mcfg = member.DefaultLocalConfig()
	}
	mcfg.Name, mcfg.Bind, mcfg.Join, mcfg.SecretKey = cfg.Name, cfg.Bind, cfg.Join, cfg.SecretKey
	mcfg.Advertise, mcfg.Meta, mcfg.Log, mcfg.Heard = advertiseIP(cfg.Advertise), a.meta, a.log, a.follower.Heard
	ml, err := a.joinGossip(ctx, mcfg)
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	a.mu.Lock()
	a.ml = ml // the API may already be serving: leaderMeta reads it under mu
	a.mu.Unlock()
	a.goRun(func() { a.watchMembers(run) })
	if cfg.Controller {
		a.leadDone = make(chan struct{})
		a.goRun(func() {
			defer close(a.leadDone)
			a.lead(run)
		})
		if a.group != nil && cfg.DeadControllerAfter > 0 {
			a.goRun(func() { a.removeDeadControllers(run) })
		}
	}
	return nil
}
