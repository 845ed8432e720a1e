package node

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/sharing"
)

// MaxCPU bounds a CPU number in a CPU list: Linux's largest configurable
// count (NR_CPUS) is 8192; the bound keeps a mistyped range from
// allocating without bound.
const MaxCPU = 1<<16 - 1

// ParseCPUList reads a list of CPU numbers and ranges, "0-3,8,10-11"
// (Config.CPUs), dropping repeats.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q: want CPU numbers or ranges like 0-3,8", part)
		}
		if b > MaxCPU {
			return nil, fmt.Errorf("%q: CPU %d beyond the largest, %d", part, b, MaxCPU)
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no CPU given")
	}
	return out, nil
}

// ParseSecretKey reads a gossip encryption key (Config.SecretKey) in hex:
// 32, 48 or 64 digits.
func ParseSecretKey(s string) ([]byte, error) {
	if len(s)%2 != 0 {
		return nil, errors.New("odd number of hex digits")
	}
	key := make([]byte, len(s)/2)
	for i := range key {
		v, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("not hex at %q", s[2*i:2*i+2])
		}
		key[i] = byte(v)
	}
	if l := len(key); l != 16 && l != 24 && l != 32 {
		return nil, fmt.Errorf("%d bytes, want 16, 24 or 32 (32, 48 or 64 hex digits)", l)
	}
	return key, nil
}

// NewLogger is an agent's logger: level debug, info, warn or error, format
// console or json; no sampling and no stack traces (a daemon's errors are
// reports, not crashes). A bad setting is an error keyed by field
// (LogLevel, LogFormat).
func NewLogger(level, format string) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.Set(level); err != nil {
		return nil, fielderr.New("LogLevel", strconv.Quote(level), "want debug, info, warn or error")
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	cfg.DisableStacktrace = true // a daemon's errors are reports, not crashes (memberlist logs rejected packets as errors)
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	switch format {
	case "json":
	case "console":
		cfg.Encoding = "console"
	default:
		return nil, fielderr.New("LogFormat", strconv.Quote(format), "want console or json")
	}
	return cfg.Build()
}

// Settings are an agent's settings as text, as `cosched agent`'s flags and
// the keys of its --config file (the toml tags: the flags' names with
// underscores) give them. Config reads them into a Config.
type Settings struct {
	Name       string   `toml:"name"` // default: the host name
	Bind       string   `toml:"bind"`
	Advertise  string   `toml:"advertise"`
	Join       []string `toml:"join"`
	Controller bool     `toml:"controller"`
	// Controllers and RaftPort: the controllers' raft group.
	Controllers     int    `toml:"controllers"`
	RaftPort        int    `toml:"raft_port"`
	Mode            string `toml:"mode"`
	Slice           string `toml:"slice"`
	MPL             int    `toml:"mpl"`
	Policy          string `toml:"policy"`
	Bandwidth       string `toml:"bandwidth"`
	CPUs            string `toml:"cpus"`
	Processors      int    `toml:"processors"`
	NoCompute       bool   `toml:"no_compute"`
	StateDir        string `toml:"state_dir"` // default: <the state base>/agents/<name>
	APIPort         int    `toml:"api_port"`
	EncryptKey      string `toml:"encrypt_key"`
	KeyFile         string `toml:"key_file"`
	AdminGroup      string `toml:"admin_group"`
	MetricsListen   string `toml:"metrics_listen"`
	Local           bool   `toml:"local"`
	Priority        int    `toml:"realtime_priority"`
	StrobeFanout    int    `toml:"strobe_fanout"`
	StrobeMulticast string `toml:"strobe_multicast"`
	Nice            int    `toml:"nice"`
	RankNice        int    `toml:"rank_nice"`
	ControllerGrace string `toml:"controller_grace"`
	KeepRanks       bool   `toml:"keep_ranks"`
	// DeadControllerAfter: Config.DeadControllerAfter ("0": never).
	DeadControllerAfter string `toml:"dead_controller_after"`
	LogLevel            string `toml:"log_level"`
	LogFormat           string `toml:"log_format"`
	MPI                 string `toml:"mpi"`
	MPILib              string `toml:"mpi_lib"`      // "": lib/cosched beside the executable's directory
	MPIChannels         string `toml:"mpi_channels"` // all (""), node
	Cgroups             string `toml:"cgroups"`      // "": auto
	JobsCPUWeight       int    `toml:"jobs_cpu_weight"`
	Suspend             string `toml:"suspend"` // "": signal
	MemReserve          string `toml:"mem_reserve"`
	// The priority-backfill options: reservations, reservations_mode and
	// weights.
	gang.BackfillText
	// FirstJobID and UnsealedStrobes are for cosched's own tools (cluster
	// up, bench strobe), not for a settings file.
	FirstJobID      int64 `toml:"-"`
	UnsealedStrobes bool  `toml:"-"`
}

// The values of Settings.MPIChannels (--mpi-channels): which channels
// the relay may grant MPI ranks (docs/mpi.md, "Cross-node channels").
const (
	MPIChannelsAll  = "all"  // same-node and cross-node channels
	MPIChannelsNode = "node" // same-node channels only
)

// DefaultMemReserve is the memory an agent keeps for the system.
const DefaultMemReserve = "512MiB"

// DefaultSettings are `cosched agent`'s defaults.
func DefaultSettings() Settings {
	return Settings{Bind: "0.0.0.0:7946", Controllers: 1, Mode: string(sharing.Gang), Slice: "50ms", MPL: 3, Policy: string(gang.EASY), Bandwidth: "100MB",
		Nice: -10, Priority: 50, ControllerGrace: "5m", DeadControllerAfter: "0", LogLevel: "info", LogFormat: "console", MPI: api.MPINone, Cgroups: "auto", JobsCPUWeight: -1, Suspend: api.SuspendSignal,
		MemReserve: DefaultMemReserve, BackfillText: gang.BackfillText{Reservations: "1", ReservationsMode: string(gang.Dynamic)}}
}

// Config reads s into an agent's configuration, its logger included, and
// checks it (Config.Validate). An empty StateDir is
// stateBase/agents/<name>. given says which of s's fields were set rather
// than left at their defaults (nil: none). Every problem is a
// *fielderr.Error keyed by s's field (or Config's, where they differ).
func (s Settings) Config(stateBase string, given func(field string) bool) (Config, error) {
	c := Config{Name: s.Name, Bind: s.Bind, Advertise: s.Advertise, Join: s.Join, Controller: s.Controller, Controllers: s.Controllers, RaftPort: s.RaftPort,
		MPL: s.MPL, Processors: s.Processors, NoCompute: s.NoCompute, StateDir: s.StateDir, APIPort: s.APIPort, MetricsListen: s.MetricsListen, Local: s.Local,
		Priority: s.Priority, StrobeFanout: s.StrobeFanout, StrobeMulticast: s.StrobeMulticast, Nice: s.Nice, RankNice: s.RankNice, Cgroups: s.Cgroups, MPILib: s.MPILib, JobsCPUWeight: s.JobsCPUWeight,
		Suspend: cmp.Or(s.Suspend, api.SuspendSignal), KeepRanks: s.KeepRanks, FirstJobID: s.FirstJobID, UnsealedStrobes: s.UnsealedStrobes}
	if given == nil {
		given = func(string) bool { return false }
	}
	errs := s.controller(&c, given)
	switch s.MPIChannels {
	case "", MPIChannelsAll:
	case MPIChannelsNode:
		c.NodeChannelsOnly = true
	default:
		errs = append(errs, fielderr.New("MPIChannels", strconv.Quote(s.MPIChannels), "want %s or %s", MPIChannelsAll, MPIChannelsNode))
	}
	errs = append(errs, s.host(&c)...)
	if c.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			errs = append(errs, fielderr.New("Name", nil, "required (the host name is unknown)"))
		}
		c.Name = host
	}
	if c.StateDir == "" {
		c.StateDir = filepath.Join(stateBase, "agents", c.Name)
	}
	return c, fielderr.Merge(errors.Join(errs...), c.Validate())
}

// controller reads the controller's settings into c: mode, slice, policy
// and its options, MPI and the MPL.
func (s Settings) controller(c *Config, given func(string) bool) []error {
	var errs []error
	var err error
	if c.Mode, err = sharing.Parse(s.Mode); err != nil {
		errs = append(errs, fielderr.New("Mode", nil, "%v", err))
	}
	if c.Bandwidth, err = textvalue.Bandwidth(s.Bandwidth); err != nil {
		errs = append(errs, fielderr.New("Bandwidth", strconv.Quote(s.Bandwidth), "%v", err))
	}
	if c.Slice, err = textvalue.Duration(s.Slice); err != nil {
		errs = append(errs, fielderr.New("Slice", strconv.Quote(s.Slice), "%v", err))
	}
	if c.ControllerGrace, err = time.ParseDuration(s.ControllerGrace); err != nil || c.ControllerGrace < 0 {
		errs = append(errs, fielderr.New("ControllerGrace", strconv.Quote(s.ControllerGrace), "want a duration of at least 0 (e.g. 5m; 0 kills ranks at once)"))
	}
	if c.DeadControllerAfter, err = time.ParseDuration(s.DeadControllerAfter); err != nil || c.DeadControllerAfter < 0 {
		errs = append(errs, fielderr.New("DeadControllerAfter", strconv.Quote(s.DeadControllerAfter), "want a duration of at least 0 (e.g. 30m; 0: never)"))
	}
	if c.Policy, err = gang.ParsePolicy(s.Policy); err != nil {
		errs = append(errs, fielderr.New("Policy", strconv.Quote(s.Policy), "unknown policy (valid: %s)", gang.PolicyNames()))
	}
	if c.MPI, err = api.ParseMPI(s.MPI); err != nil {
		errs = append(errs, fielderr.New("MPI", nil, "%v", err))
	}
	if c.Backfill, err = s.BackfillText.ParseFor(c.Policy, given); err != nil {
		errs = append(errs, err)
	}
	if c.Mode == sharing.Space && c.Controller && !given("MPL") {
		c.MPL = 1 // the default MPL is for the time-shared modes
	}
	// Validate checks a controller's MPL; a non-controller has no use for
	// one, but a mistyped setting is not let through.
	if !c.Controller && (c.MPL < 1 || c.MPL > gang.MaxMPL) {
		errs = append(errs, fielderr.New("MPL", c.MPL, "must be from 1 to %d", gang.MaxMPL))
	}
	return errs
}

// host reads the settings of this host into c: its CPUs, the keys, the
// operators' group, the memory kept back and the logger.
func (s Settings) host(c *Config) []error {
	var errs []error
	var err error
	if s.CPUs != "" {
		if c.CPUs, err = ParseCPUList(s.CPUs); err != nil {
			errs = append(errs, fielderr.New("CPUs", nil, "%v", err))
		}
	}
	if s.EncryptKey != "" {
		if c.SecretKey, err = ParseSecretKey(s.EncryptKey); err != nil {
			errs = append(errs, fielderr.New("EncryptKey", nil, "%v", err))
		}
	}
	if s.KeyFile != "" {
		if c.Key, err = clusterkey.Load(s.KeyFile); err != nil {
			errs = append(errs, fielderr.New("KeyFile", nil, "%v", err))
		} else if s.EncryptKey == "" {
			c.SecretKey = c.Key.Derive("gossip")
		}
	}
	if s.AdminGroup != "" {
		g, err := user.LookupGroup(s.AdminGroup)
		if err == nil {
			var gid uint64
			if gid, err = strconv.ParseUint(g.Gid, 10, 32); err != nil {
				err = fmt.Errorf("gid %q: %v", g.Gid, err)
			}
			g32 := uint32(gid)
			c.AdminGID = &g32
		}
		if err != nil {
			errs = append(errs, fielderr.New("AdminGroup", strconv.Quote(s.AdminGroup), "%v", err))
		}
	}
	if s.MemReserve == "none" {
		c.MemReserve = -1
	} else if c.MemReserve, err = textvalue.Size(cmp.Or(s.MemReserve, DefaultMemReserve)); err != nil || c.MemReserve < 0 {
		errs = append(errs, fielderr.New("MemReserve", strconv.Quote(s.MemReserve), "want a size (e.g. 512MiB) or none"))
	}
	if c.Log, err = NewLogger(s.LogLevel, s.LogFormat); err != nil {
		errs = append(errs, err)
	}
	return errs
}
