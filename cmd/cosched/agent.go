package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/flagfile"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/node/rank"
	"github.com/cosched/cosched/sharing"
)

// agentFlags are `cosched agent`'s settings; a --config file (TOML, the
// same keys) sets them too, flags win.
type agentFlags struct {
	Name       string   `toml:"name"`
	Bind       string   `toml:"bind"`
	Advertise  string   `toml:"advertise"`
	Join       []string `toml:"join"`
	Controller bool     `toml:"controller"`
	// Controllers and RaftPort: the controllers' raft group.
	Controllers int    `toml:"controllers"`
	RaftPort    int    `toml:"raft_port"`
	Mode        string `toml:"mode"`
	Slice       string `toml:"slice"`
	MPL         int    `toml:"mpl"`
	Policy      string `toml:"policy"`
	Bandwidth   string `toml:"bandwidth"`
	CPUs        string `toml:"cpus"`
	Processors  int    `toml:"processors"`
	NoCompute   bool   `toml:"no_compute"`
	StateDir    string `toml:"state_dir"`
	APIPort     int    `toml:"api_port"`
	Key         string `toml:"encrypt_key"`
	KeyFile     string `toml:"key_file"`
	AdminGroup  string `toml:"admin_group"`
	MetricsAddr string `toml:"metrics_listen"`
	Local       bool   `toml:"local"`
	Priority    int    `toml:"realtime_priority"`
	Fanout      int    `toml:"strobe_fanout"`
	Multicast   string `toml:"strobe_multicast"`
	Nice        int    `toml:"nice"`
	RankNice    int    `toml:"rank_nice"`
	Grace       string `toml:"controller_grace"`
	LogLevel    string `toml:"log_level"`
	LogFormat   string `toml:"log_format"`
	MPI         string `toml:"mpi"`
	Cgroups     string `toml:"cgroups"`
	Suspend     string `toml:"suspend"`
	MemReserve  string `toml:"mem_reserve"`
	// The priority-backfill options: reservations, reservations_mode and
	// weights in the TOML file.
	backfillFlags
	readyFile string
	cleanup   bool // kill and remove what a dead agent left, then exit
	// firstJobID: cluster up carries job ids over to a new cluster.
	firstJobID int64
	// unsealedStrobes: bench strobe --auth off measures without sealing.
	unsealedStrobes bool
	config          string
	// changed tells whether a setting was given, by its flag's name: on
	// the command line or in the --config file.
	changed func(name string) bool
}

// defaultMemReserve is the memory an agent keeps for the system.
const defaultMemReserve = "512MiB"

func newAgentCmd() *cobra.Command { return newAgentCmdRun(runAgent) }

// newAgentCmdRun builds the command with run as what it does once the
// settings are read (tests inspect them instead of starting an agent).
func newAgentCmdRun(run func(context.Context, *agentFlags) error) *cobra.Command {
	f := agentFlags{Bind: "0.0.0.0:7946", Mode: "gang", Slice: "50ms", MPL: 3, Policy: "easy", Bandwidth: "100MB", Nice: -10, Priority: 50, Grace: "5m", LogLevel: "info", LogFormat: "console",
		Cgroups: "auto", Suspend: api.SuspendSignal, MemReserve: defaultMemReserve}
	cmd := &cobra.Command{
		Use:         "agent",
		Annotations: map[string]string{stopAnnotation: stopClean},
		Short:       "Run a node agent (one per node; one of them with --controller)",
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			if f.config != "" {
				changed, err := flagfile.Load(cmd.Flags(), "--config", f.config, &f)
				if err != nil {
					return usageError{err}
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
	fl.IntVar(&f.Controllers, "controllers", 1, "controller: how many --controller agents form the group at its first start (give every one the same number; 1: this one alone). A journal that exists keeps its own members")
	fl.IntVar(&f.RaftPort, "raft-port", 0, "controller: TCP port of the controller journal's replication (0 picks one; fix it with several controllers, so a restarted one is found again)")
	fl.StringVar(&f.Mode, "mode", f.Mode, "controller: space, gang, bcs or local")
	fl.StringVar(&f.Bandwidth, "bandwidth", f.Bandwidth, "controller, bcs: network bandwidth per node, per second; h_max = bandwidth × slice (0: unlimited)")
	fl.StringVar(&f.Slice, "slice", f.Slice, "controller: time slice in gang and bcs modes (down to 1ms)")
	fl.IntVar(&f.MPL, "mpl", f.MPL, "controller: multiprogramming level, rows of the matrix (1 in space mode)")
	fl.StringVar(&f.Policy, "policy", f.Policy, "controller: queue policy: "+gang.PolicyNames())
	f.backfillFlags.add(fl, "controller, ")
	fl.StringVar(&f.CPUs, "cpus", "", "CPUs to pin ranks to, as a list (0-3,8,10-11); default: every CPU, unpinned")
	fl.IntVar(&f.Processors, "processors", 0, "processors to offer when --cpus is not given (default: the machine's CPUs)")
	fl.BoolVar(&f.NoCompute, "no-compute", false, "offer no processors: a controller-only agent, whose death kills no rank")
	fl.StringVar(&f.StateDir, "state-dir", "", "directory for rank output and agent files (default: <state dir>/agents/<name>)")
	fl.IntVar(&f.APIPort, "api-port", 0, "port of the HTTP API (0 picks one; the cluster learns it by gossip)")
	fl.StringVar(&f.Key, "encrypt-key", "", "gossip encryption key, hex (32, 48 or 64 digits); every agent needs the same")
	fl.StringVar(&f.KeyFile, "key-file", "", "the cluster key (32 random bytes, raw or hex, mode 0600; cluster up makes one): authenticates API requests, seals strobes and heartbeats (unsealed ones are dropped) and, without --encrypt-key, encrypts gossip; every agent needs the same. Without it the API trusts every caller (the agent warns)")
	fl.StringVar(&f.AdminGroup, "admin-group", "", "members of this group are operators: they may cancel and inspect every user's jobs (root always may)")
	fl.StringVar(&f.MetricsAddr, "metrics-listen", "", "serve /metrics on this host:port of its own, unauthenticated, for Prometheus on a trusted network; /metrics on the API port then needs a credential. Default: /metrics on the API port, unauthenticated (docs/security.md)")
	fl.BoolVar(&f.Local, "local", false, "fast failure detection for agents on one machine (loopback clusters)")
	fl.IntVar(&f.Priority, "realtime-priority", f.Priority, "SCHED_FIFO priority (1-99) of the strobe path: the agent's receive-and-switch thread and the controller's slice clock; 0 turns it off (needs root or CAP_SYS_NICE; without, the agent warns and runs normally)")
	fl.IntVar(&f.Fanout, "strobe-fanout", 0, "controller: strobe agents along a tree of this arity (each agent forwards to up to K others; the last agent hears after ~log_K N hops instead of N sends); 0 sends to every agent directly. Needs every agent to be of a build that forwards (docs/scaling.md)")
	fl.StringVar(&f.Multicast, "strobe-multicast", "", "every agent: IPv4 multicast group ADDR:PORT (e.g. 239.1.2.3:7950) that strobes are sent to, once a slice; each agent joins it on the interface of its --bind address. Give every agent the same group; the network must carry multicast between them (docs/scaling.md)")
	fl.IntVar(&f.Nice, "nice", f.Nice, "the agent's own nice value, so switches preempt busy ranks (negative needs root or CAP_SYS_NICE; the agent warns and carries on without)")
	fl.IntVar(&f.RankNice, "rank-nice", 0, "nice value the ranks run at")
	fl.StringVar(&f.Grace, "controller-grace", f.Grace, "how long ranks outlive a lost controller: a controller that comes back within it (restarted, or reached again) adopts them; then they are killed (0: at once)")
	fl.StringVar(&f.MPI, "mpi", "none", "controller: the cluster's default process-management interface for jobs that give no --mpi: none or pmi1 (docs/mpi.md)")
	fl.StringVar(&f.LogLevel, "log-level", f.LogLevel, "debug, info, warn or error")
	fl.StringVar(&f.LogFormat, "log-format", f.LogFormat, "console or json")
	fl.StringVar(&f.Cgroups, "cgroups", f.Cgroups, "job containment: auto (v2 or v1 as the host has them; process groups only where neither works), v1, v2 or none")
	fl.StringVar(&f.Suspend, "suspend", f.Suspend, "how ranks are suspended between slices: signal (SIGSTOP/SIGCONT) or freezer (the job's cgroup freezer; needs cgroups)")
	fl.StringVar(&f.MemReserve, "mem-reserve", f.MemReserve, "memory kept for the system: the agent offers MemTotal less this to jobs (the controller admits jobs by --mem against it); \"none\" offers no memory limit")
	fl.StringVar(&f.readyFile, "ready-file", "", "write the agent's addresses here once it has joined (used by cluster up)")
	_ = fl.MarkHidden("ready-file")
	fl.BoolVar(&f.cleanup, "cleanup", false, "do not start: kill the processes left in the job cgroups of the agent of this --name and --state-dir, which died without stopping, remove its cgroups, and exit (refused while it runs; systemd's ExecStopPost, cluster down)")
	fl.Int64Var(&f.firstJobID, "first-job-id", 0, "controller: the first job's id when the journal is empty (cluster up carries ids over)")
	_ = fl.MarkHidden("first-job-id")
	fl.BoolVar(&f.unsealedStrobes, "unsealed-strobes", false, "with --key-file, still send and accept strobes and heartbeats unsealed: insecure, only to measure what sealing costs (bench strobe --auth)")
	_ = fl.MarkHidden("unsealed-strobes")
}

// agentConfig checks every flag and builds the agent's configuration.
func agentConfig(f *agentFlags) (node.Config, error) {
	var errs []error
	cfg := node.Config{Name: f.Name, Bind: f.Bind, Advertise: f.Advertise, Join: f.Join, Controller: f.Controller, Controllers: f.Controllers, RaftPort: f.RaftPort, FirstJobID: f.firstJobID, UnsealedStrobes: f.unsealedStrobes, MPL: f.MPL,
		Processors: f.Processors, NoCompute: f.NoCompute, APIPort: f.APIPort, Local: f.Local, Nice: f.Nice, RankNice: f.RankNice, Priority: f.Priority, StrobeFanout: f.Fanout, StrobeMulticast: f.Multicast}
	if f.Fanout < 0 || f.Fanout > 255 {
		errs = append(errs, fmt.Errorf("--strobe-fanout %d: want 0 (direct) to 255", f.Fanout))
	}
	if f.Multicast != "" {
		if ap, err := netip.ParseAddrPort(f.Multicast); err != nil || !ap.Addr().Is4() || !ap.Addr().IsMulticast() || ap.Port() == 0 {
			errs = append(errs, fmt.Errorf("--strobe-multicast %q: want an IPv4 multicast address and a port, e.g. 239.1.2.3:7950", f.Multicast))
		}
	}
	if cfg.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			errs = append(errs, errors.New("--name: required (the host name is unknown)"))
		}
		cfg.Name = host
	}
	errs = append(errs, f.controllerSettings(&cfg)...)
	errs = append(errs, f.hostSettings(&cfg)...)
	if len(errs) > 0 {
		return cfg, flagErrors(errs)
	}
	return cfg, nil
}

// controllerSettings parses the controller's settings: mode, slice,
// policy and its options, MPI, and the numeric ranges.
func (f *agentFlags) controllerSettings(cfg *node.Config) []error {
	var errs []error
	mode, err := sharing.Parse(f.Mode)
	if err != nil {
		errs = append(errs, fmt.Errorf("--mode: %v", err))
	}
	cfg.Mode = mode
	if bw, err := textvalue.Bandwidth(f.Bandwidth); err != nil {
		errs = append(errs, fmt.Errorf("--bandwidth %q: %v", f.Bandwidth, err))
	} else {
		cfg.Bandwidth = bw
	}
	if cfg.Slice, err = time.ParseDuration(f.Slice); err != nil {
		errs = append(errs, fmt.Errorf("--slice %q: not a duration (e.g. 10ms)", f.Slice))
	} else if f.Controller && mode.TimeShared() {
		// The same range as cluster up's: the strobe path is measured down
		// to 1 ms; a slice of an hour is already no time sharing.
		if err := checkDuration("--slice", cfg.Slice, localcluster.MinSlice, localcluster.MaxSlice); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.ControllerGrace, err = time.ParseDuration(f.Grace); err != nil || cfg.ControllerGrace < 0 {
		errs = append(errs, fmt.Errorf("--controller-grace %q: want a duration of at least 0 (e.g. 5m; 0 kills ranks at once)", f.Grace))
	}
	p, policyErr := gang.ParsePolicy(f.Policy)
	if policyErr != nil {
		errs = append(errs, fmt.Errorf("--policy %q: unknown policy (valid: %s)", f.Policy, gang.PolicyNames()))
	}
	cfg.Policy = p
	if cfg.MPI, err = api.ParseMPI(f.MPI); err != nil {
		errs = append(errs, fmt.Errorf("--mpi: %v", err))
	}
	changed := f.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	bf, bfErrs := f.backfillFor(p, policyErr == nil, changed)
	cfg.Backfill = bf
	errs = append(errs, bfErrs...)
	errs = append(errs, f.ranges()...)
	if mode == sharing.Space && f.Controller {
		if changed("mpl") && f.MPL != 1 {
			errs = append(errs, fmt.Errorf("--mpl %d: space mode has one row (MPL 1)", f.MPL))
		}
		cfg.MPL = 1
	}
	return errs
}

// ranges checks the numeric flags against their ranges.
func (f *agentFlags) ranges() []error {
	var errs []error
	for _, r := range []struct {
		flag      string
		v, lo, hi int
	}{
		{"--mpl", f.MPL, 1, gang.MaxMPL},
		{"--processors", f.Processors, 0, gang.MaxProcessors},
		{"--api-port", f.APIPort, 0, 65535},
		{"--nice", f.Nice, -20, 19},
		{"--rank-nice", f.RankNice, -20, 19},
		{"--realtime-priority", f.Priority, 0, 99},
	} {
		if err := checkInt(r.flag, int64(r.v), int64(r.lo), int64(r.hi)); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// hostSettings parses the settings of this host: its CPUs, the gossip key
// and the state directory.
func (f *agentFlags) hostSettings(cfg *node.Config) []error {
	var errs []error
	var err error
	if f.CPUs != "" {
		if cfg.CPUs, err = node.ParseCPUList(f.CPUs); err != nil {
			errs = append(errs, fmt.Errorf("--cpus: %v", err))
		}
	}
	errs = append(errs, f.keySettings(cfg)...)
	cfg.MetricsListen = f.MetricsAddr
	if f.AdminGroup != "" {
		g, err := user.LookupGroup(f.AdminGroup)
		if err != nil {
			errs = append(errs, fmt.Errorf("--admin-group %q: %v", f.AdminGroup, err))
		} else if gid, err := strconv.ParseUint(g.Gid, 10, 32); err != nil {
			errs = append(errs, fmt.Errorf("--admin-group %q: gid %q: %v", f.AdminGroup, g.Gid, err))
		} else {
			g32 := uint32(gid)
			cfg.AdminGID = &g32
		}
	}
	// An empty value (an empty variable in the systemd environment file)
	// means the default.
	switch f.Cgroups {
	case "", "auto", "v1", "v2", "none":
		cfg.Cgroups = f.Cgroups
	default:
		errs = append(errs, fmt.Errorf("--cgroups %q: want auto, v1, v2 or none", f.Cgroups))
	}
	switch f.Suspend {
	case "", api.SuspendSignal, api.SuspendFreezer:
		cfg.Suspend = cmp.Or(f.Suspend, api.SuspendSignal)
	default:
		errs = append(errs, fmt.Errorf("--suspend %q: want signal or freezer", f.Suspend))
	}
	if f.MemReserve == "none" {
		cfg.MemReserve = -1
	} else if cfg.MemReserve, err = textvalue.Size(cmp.Or(f.MemReserve, defaultMemReserve)); err != nil || cfg.MemReserve < 0 {
		errs = append(errs, fmt.Errorf("--mem-reserve %q: want a size (e.g. 512MiB) or none", f.MemReserve))
	}
	cfg.StateDir = f.StateDir
	if cfg.StateDir == "" {
		base, err := localcluster.StateDir("")
		if err != nil {
			errs = append(errs, err)
		}
		cfg.StateDir = filepath.Join(base, "agents", cfg.Name)
	}
	return errs
}

// keySettings reads the gossip key and the cluster key.
func (f *agentFlags) keySettings(cfg *node.Config) []error {
	var errs []error
	var err error
	if f.Key != "" {
		if cfg.SecretKey, err = node.ParseSecretKey(f.Key); err != nil {
			errs = append(errs, fmt.Errorf("--encrypt-key: %v", err))
		}
	}
	if f.KeyFile != "" {
		if cfg.Key, err = clusterkey.Load(f.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--key-file: %v", err))
		} else if f.Key == "" {
			cfg.SecretKey = cfg.Key.Derive("gossip")
		}
	}
	return errs
}

func runAgent(ctx context.Context, f *agentFlags) error {
	cfg, err := agentConfig(f)
	if err != nil {
		return err
	}
	log, err := node.NewLogger(f.LogLevel, f.LogFormat)
	if err != nil {
		return flagNames{"LogLevel": "--log-level", "LogFormat": "--log-format"}.errors(err)
	}
	defer log.Sync()
	cfg.Log = log
	if f.cleanup {
		n, err := node.CleanupCgroups(cfg)
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
	return node.Run(ctx, cfg, ready)
}

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
