package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/flagfile"
	"github.com/cosched/cosched/internal/gcfloor"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/node/rank"
)

// agentFlags are `cosched agent`'s settings (node.Settings); a --config
// file (TOML, the same keys) sets them too, flags win.
type agentFlags struct {
	node.Settings
	readyFile string
	cleanup   bool   // kill and remove what a dead agent left, then exit
	whenGone  string // with cleanup: PID:TICKS, the agent to wait for (the guard)
	guard     bool   // start the agent's cleanup guard, print its pid, exit
	config    string
	// changed tells whether a setting was given, by its flag's name: on
	// the command line or in the --config file.
	changed func(name string) bool
}

// agentFlagNames maps node.Settings' fields, and node.Config's of the same
// names, to the agent's flags.
var agentFlagNames = cli.FlagNames(flagfile.FlagNames(node.Settings{}))

func newAgentCmd() *cobra.Command { return newAgentCmdRun(runAgent) }

// newAgentCmdRun builds the command with run as what it does once the
// settings are read (tests inspect them instead of starting an agent).
func newAgentCmdRun(run func(context.Context, *agentFlags) error) *cobra.Command {
	f := agentFlags{Settings: node.DefaultSettings()}
	cmd := &cobra.Command{
		Use:         "agent",
		Annotations: map[string]string{cli.StopAnnotation: cli.StopClean},
		Short:       "Run a node agent (one per node; one of them with --controller)",
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			if f.config != "" {
				changed, err := flagfile.Load(cmd.Flags(), "--config", f.config, &f)
				if err != nil {
					return cli.Usage(err)
				}
				f.changed = changed
			}
			return run(cmd.Context(), &f)
		},
	}
	f.addFlags(cmd.Flags())
	return cmd
}

// addFlags defines the agent's flags on fl, with f's values as defaults.
func (f *agentFlags) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.config, "config", "", "TOML file with agent settings (flags override it)")
	fl.StringVar(&f.Name, "name", "", "this agent's name, unique in the cluster (default: the host name)")
	fl.StringVar(&f.Bind, "bind", f.Bind, "gossip address host:port (port 0 picks one); the API, control and strobe sockets use the same host")
	fl.StringVar(&f.Advertise, "advertise", "", "address other agents reach this one at (default: --bind's host; with 0.0.0.0, this machine's private IP)")
	fl.StringSliceVar(&f.Join, "join", nil, "gossip addresses of running agents to join (comma-separated)")
	fl.BoolVar(&f.Controller, "controller", false, "controller-eligible: keep the controller's journal and run the controller (scheduler, job table, strobe clock) while this agent leads the controllers")
	fl.IntVar(&f.Controllers, "controllers", f.Controllers, "controller: how many --controller agents form the group at its first start (give every one the same number; 1: this one alone). A journal that exists keeps its own members")
	fl.IntVar(&f.RaftPort, "raft-port", 0, "controller: TCP port of the controller journal's replication (0 picks one; fix it with several controllers, so a restarted one is found again)")
	fl.StringVar(&f.Mode, "mode", f.Mode, "controller: space, gang, bcs or local")
	fl.StringVar(&f.Bandwidth, "bandwidth", f.Bandwidth, "controller, bcs: network bandwidth per node, per second; h_max = bandwidth × slice (0: unlimited)")
	fl.StringVar(&f.Slice, "slice", f.Slice, "controller: time slice in gang and bcs modes (down to 1ms)")
	fl.IntVar(&f.MPL, "mpl", f.MPL, "controller: multiprogramming level, rows of the matrix (1 in space mode)")
	fl.StringVar(&f.Policy, "policy", f.Policy, "controller: queue policy: "+gang.PolicyNames())
	(*cli.BackfillFlags)(&f.BackfillText).Add(fl, "controller, ")
	fl.StringVar(&f.CPUs, "cpus", "", "CPUs to pin ranks to, as a list (0-3,8,10-11); default: every CPU, unpinned")
	fl.IntVar(&f.Processors, "processors", 0, "processors to offer when --cpus is not given (default: the machine's CPUs)")
	fl.BoolVar(&f.NoCompute, "no-compute", false, "offer no processors: a controller-only agent, whose death kills no rank")
	fl.StringVar(&f.StateDir, "state-dir", "", "directory for rank output and agent files (default: <state dir>/agents/<name>)")
	fl.IntVar(&f.APIPort, "api-port", 0, "port of the HTTP API (0 picks one; the cluster learns it by gossip)")
	fl.StringVar(&f.EncryptKey, "encrypt-key", "", "gossip encryption key, hex (32, 48 or 64 digits); every agent needs the same")
	fl.StringVar(&f.KeyFile, "key-file", "", "the cluster key (32 random bytes, raw or hex, mode 0600; cluster up makes one): authenticates API requests, seals strobes and heartbeats (unsealed ones are dropped) and, without --encrypt-key, encrypts gossip; every agent needs the same. Without it the API trusts every caller (the agent warns)")
	fl.StringVar(&f.AdminGroup, "admin-group", "", "members of this group are operators: they may cancel and inspect every user's jobs (root always may)")
	fl.StringVar(&f.MetricsListen, "metrics-listen", "", "serve /metrics on this host:port of its own, unauthenticated, for Prometheus on a trusted network; /metrics on the API port then needs a credential. Default: /metrics on the API port, unauthenticated (docs/security.md)")
	fl.BoolVar(&f.Local, "local", false, "fast failure detection for agents on one machine (loopback clusters)")
	fl.IntVar(&f.Priority, "realtime-priority", f.Priority, "SCHED_FIFO priority (1-99) of the strobe path: the agent's receive-and-switch thread and the controller's slice clock; 0 turns it off (needs root or CAP_SYS_NICE; without, the agent warns and runs normally)")
	fl.IntVar(&f.StrobeFanout, "strobe-fanout", 0, "controller: strobe agents along a tree of this arity (each agent forwards to up to K others; the last agent hears after ~log_K N hops instead of N sends); 0 sends to every agent directly. Needs every agent to be of a build that forwards (docs/scaling.md)")
	fl.StringVar(&f.StrobeMulticast, "strobe-multicast", "", "every agent: IPv4 multicast group ADDR:PORT (e.g. 239.1.2.3:7950) that strobes are sent to, once a slice; each agent joins it on the interface of its --bind address. Give every agent the same group; the network must carry multicast between them (docs/scaling.md)")
	fl.IntVar(&f.Nice, "nice", f.Nice, "the agent's own nice value, so switches preempt busy ranks (negative needs root or CAP_SYS_NICE; the agent warns and carries on without)")
	fl.IntVar(&f.RankNice, "rank-nice", 0, "nice value the ranks run at")
	fl.StringVar(&f.ControllerGrace, "controller-grace", f.ControllerGrace, "how long ranks outlive a lost controller: a controller that comes back within it (restarted, or reached again) adopts them; then they are killed (0: at once)")
	fl.BoolVar(&f.KeepRanks, "keep-ranks", f.KeepRanks, "ranks outlive the agent (a crash, SIGKILL, an upgrade): each runs under a small keeper, and the agent started again with the same --name and --state-dir takes them back; the controller waits --controller-grace for it (docs/runtime.md). Off: a dead agent's ranks die with it")
	fl.StringVar(&f.DeadControllerAfter, "dead-controller-after", f.DeadControllerAfter, "controller: the leader removes from the controllers' raft group a controller whose agent gossip has not seen for this long (one at a time, never below a majority; 0: never, an operator removes it with operator raft remove-peer)")
	fl.StringVar(&f.MPI, "mpi", f.MPI, "controller: the cluster's default process-management interface for jobs that give no --mpi: none, pmi1, pmix or cosched (docs/mpi.md)")
	fl.StringVar(&f.MPIChannels, "mpi-channels", node.MPIChannelsAll, "channels the relay may grant --mpi cosched ranks in immediate modes: all (same-node socket pairs and direct TCP between nodes, whose bytes travel in clear, as MPICH's do) or node (same-node only: traffic between nodes stays on the relay links, encrypted with --key-file); give every agent the same (docs/mpi.md)")
	fl.StringVar(&f.MPILib, "mpi-lib", "", "directory of cosched's MPI library (libmpich.so.12) for --mpi cosched jobs (default: lib/cosched beside the agent's bin directory, where make build puts it; docs/mpi.md)")
	fl.StringVar(&f.LogLevel, "log-level", f.LogLevel, "debug, info, warn or error")
	fl.StringVar(&f.LogFormat, "log-format", f.LogFormat, "console or json")
	fl.StringVar(&f.Cgroups, "cgroups", f.Cgroups, "job containment: auto (v2 or v1 as the host has them; process groups only where neither works), v1, v2 or none")
	fl.IntVar(&f.JobsCPUWeight, "jobs-cpu-weight", f.JobsCPUWeight, "CPU weight (1-10000, cgroup v2 scale; the agent has 100) of the parent of the jobs' cgroups, so busy ranks never starve an agent without real-time priority (a real-time agent leaves it; 10 is the tested value); -1: none")
	fl.StringVar(&f.Suspend, "suspend", f.Suspend, "how ranks are suspended between slices: signal (SIGSTOP/SIGCONT) or freezer (the job's cgroup freezer; needs cgroups)")
	fl.StringVar(&f.MemReserve, "mem-reserve", f.MemReserve, "memory kept for the system: the agent offers MemTotal less this to jobs (the controller admits jobs by --mem against it); \"none\" offers no memory limit")
	fl.StringVar(&f.readyFile, "ready-file", "", "write the agent's addresses here once it has joined (used by cluster up)")
	_ = fl.MarkHidden("ready-file")
	fl.BoolVar(&f.cleanup, "cleanup", false, "do not start: kill the processes left in the job cgroups of the agent of this --name and --state-dir, which died without stopping, remove its cgroups, and exit (refused while it runs; systemd's ExecStopPost, cluster down)")
	fl.StringVar(&f.whenGone, "when-gone", "", "with --cleanup: first wait until the agent, process PID:TICKS (its pid and start time), is gone and, with --keep-ranks, --controller-grace more for its next life, which then takes the kept ranks (its cleanup guard)")
	_ = fl.MarkHidden("when-gone")
	fl.BoolVar(&f.guard, "cleanup-guard", false, "start the cleanup guard of the agent of this --name and --state-dir, which is this process's parent (`--cleanup --when-gone PID:TICKS` in a session of its own, logging to the state directory), print the guard's pid and exit: what an agent with job cgroups or kept ranks does at start")
	_ = fl.MarkHidden("cleanup-guard")
	fl.Int64Var(&f.FirstJobID, "first-job-id", 0, "controller: the first job's id when the journal is empty (cluster up carries ids over)")
	_ = fl.MarkHidden("first-job-id")
	fl.BoolVar(&f.UnsealedStrobes, "unsealed-strobes", false, "with --key-file, still send and accept strobes and heartbeats unsealed: insecure, only to measure what sealing costs (bench strobe --auth)")
	_ = fl.MarkHidden("unsealed-strobes")
}

// agentConfig checks every flag and builds the agent's configuration.
func agentConfig(f *agentFlags) (node.Config, error) {
	base, err := localcluster.StateDir("") // --state-dir defaults to base/agents/<name>
	if err != nil && f.StateDir == "" {
		return node.Config{}, err
	}
	cfg, err := f.Config(base, agentFlagNames.Given(f.changed))
	return cfg, agentFlagNames.Errors(err)
}

func runAgent(ctx context.Context, f *agentFlags) error {
	cfg, err := agentConfig(f)
	if err != nil {
		return err
	}
	log := cfg.Log
	defer log.Sync()
	if f.guard {
		return startGuard(cfg)
	}
	if f.cleanup {
		clean := node.CleanupCgroups
		if f.whenGone != "" {
			pid, ticks, err := node.ParseProcess(f.whenGone)
			if err != nil {
				return cli.Usage(fmt.Errorf("--when-gone: %w", err))
			}
			clean = func(cfg node.Config) (int, error) { return node.CleanupWhenGone(ctx, cfg, pid, ticks) }
		}
		n, err := clean(cfg)
		if err != nil && f.whenGone != "" && ctx.Err() != nil {
			// Stopped while the agent ran: it stops its guard once it
			// has cleaned up itself.
			log.Info("stopped while the agent runs", zap.String("agent", cfg.Name), zap.String("why", context.Cause(ctx).Error()))
			return nil
		}
		if err == nil {
			log.Info("cleaned up after the agent", zap.String("agent", cfg.Name), zap.Int("job cgroups", n))
		}
		return err
	}
	var ready func(*node.Agent) error
	if f.readyFile != "" {
		ready = func(a *node.Agent) error {
			return localcluster.WriteReady(f.readyFile, localcluster.Ready{Name: a.Name(), PID: os.Getpid(), Gossip: a.GossipAddr(), API: a.APIAddr(), Socket: a.APISocket()})
		}
	}
	if os.Getenv("GOGC") == "" {
		// The agent's heap is a few MB: at GOGC=100 it collected every
		// second or two, and on a full host each collection's stops
		// held its strobe thread for up to seconds (internal/gcfloor).
		floor := gcfloor.Start(agentHeapFloor)
		defer floor.Stop()
	}
	cfg.KeepProcessors = true
	if held := cfg.HeldProcessors(); held > 0 {
		// The strobe thread (and the multicast reader, and a
		// controller's clock) keep their P while they wait (raw system
		// calls: docs/runtime.md): as many more Ps leave the rest of
		// the agent (gossip, API, relay) what Go's default or the
		// environment's GOMAXPROCS gives it. Added to GOMAXPROCS=1
		// too, which would otherwise leave the relay no P between
		// strobes.
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + held)
	}
	return node.Run(ctx, cfg, ready)
}

// startGuard starts the cleanup guard of cfg's agent (node/guard.go),
// this binary's `agent --cleanup --when-gone`, and prints its pid.
func startGuard(cfg node.Config) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cleanup guard: %w", err)
	}
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("cleanup guard: state dir: %w", err)
	}
	cfg.StateDir = abs
	guard := append([]string{exe, "agent", "--cleanup", "--log-format", "json"}, node.GuardArgs(cfg)...)
	pid, err := node.StartGuard(cfg, guard)
	if err != nil {
		return err
	}
	fmt.Println(pid)
	return nil
}

// agentHeapFloor is the agent process's smallest heap goal (GOGC in the
// environment turns it off): about one collection a minute at the
// allocation rate of an agent strobed every 10 ms.
const agentHeapFloor = 64 << 20

// newRankExecCmd is the hidden shim agents start ranks through: it stops
// itself, and the agent's SIGCONT lets it exec the rank's program.
func newRankExecCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "__rank-exec -- PROGRAM ARGS...",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			os.Exit(rank.ShimMain(args))
			return nil
		},
	}
}
