// Package localcluster starts, finds and stops a cluster of cosched agents
// on this machine (loopback): agent a0 runs the controller, the others join
// it. Each agent is a `cosched agent` process in its own session, so the
// cluster outlives the command that started it (unless Options.Temporary:
// a benchmark's agents die with it); its state directory holds
// cluster.json (how to reach it), and per agent the log and rank output.
//
// `cosched cluster up/down`, `cosched bench run`, `bench strobe`,
// `bench calibrate` and the tests use it.
package localcluster

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/stableport"
	"github.com/cosched/cosched/sharing"
)

// SystemStateDir is the state directory of a cluster root starts without
// one: every user's commands find it there (the cluster record and the
// agents' API sockets are readable by all; the cluster key stays root's).
// EnvSystemStateDir moves it (tests, a site's own choice).
const (
	SystemStateDir    = "/var/lib/cosched"
	EnvSystemStateDir = "COSCHED_SYSTEM_STATE_DIR"
)

// SystemDir is the system state directory: $COSCHED_SYSTEM_STATE_DIR,
// else SystemStateDir.
func SystemDir() string { return cmp.Or(os.Getenv(EnvSystemStateDir), SystemStateDir) }

// StateDir resolves the state directory where this user's `cluster up`
// and agents keep their state: dir (a --state-dir flag), else
// COSCHED_STATE_DIR, else for root the system one (SystemDir), else
// $XDG_STATE_HOME/cosched, else ~/.local/state/cosched.
func StateDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if d := os.Getenv("COSCHED_STATE_DIR"); d != "" {
		return d, nil
	}
	if os.Geteuid() == 0 {
		return SystemDir(), nil
	}
	return userStateDir()
}

// userStateDir is $XDG_STATE_HOME/cosched, else ~/.local/state/cosched.
func userStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "cosched"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("no state directory: set --state-dir or COSCHED_STATE_DIR")
	}
	return filepath.Join(home, ".local", "state", "cosched"), nil
}

// FindStateDir resolves the state directory of the cluster this user's
// commands talk to: dir (a --state-dir flag), else COSCHED_STATE_DIR,
// else the user's own ($XDG_STATE_HOME/cosched, else
// ~/.local/state/cosched) if it records a cluster, else the system one
// (SystemDir) if it does, else where StateDir would put one. A record
// this user may not read counts as there, so that reading it names the
// real cause (permission denied on which path).
func FindStateDir(dir string) (string, error) {
	if dir != "" || os.Getenv("COSCHED_STATE_DIR") != "" {
		return StateDir(dir)
	}
	own, ownErr := userStateDir()
	if ownErr == nil && recorded(own) {
		return own, nil
	}
	if sys := SystemDir(); recorded(sys) {
		return sys, nil
	}
	return StateDir("")
}

// recorded reports whether dir holds a cluster record, or one that may be
// there but cannot be seen.
func recorded(dir string) bool {
	_, err := os.Stat(File(dir))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// Limits of Options.
const (
	MaxAgents     = 256  // agents on one machine
	MaxProcessors = 1024 // processors one agent offers
	MinSlice      = sharing.MinSlice
	MaxSlice      = sharing.MaxSlice
	MaxMPL        = 64
	// MaxControllers bounds Options.Controllers.
	MaxControllers = 7
)

// Options say what cluster Up starts. The zero value is not valid; start
// from DefaultOptions.
type Options struct {
	// Exe is the cosched binary the agents run (default: this process's
	// executable). Env is added to the agents' environment.
	Exe string
	Env []string

	Agents     int // agents, a0 … a(N-1); a0 runs the controller unless Controllers > 1
	Processors int // processors each agent offers
	// Controllers: 1, a0 is the controller (and offers processors); N > 1,
	// N more agents c0 … c(N-1) without processors form the controllers'
	// raft group (one leads, the others stand by).
	Controllers int
	Mode        sharing.Mode
	Slice       time.Duration // gang, bcs
	MPL         int           // 1 in space mode
	Policy      gang.Policy
	Backfill    gang.Backfill // the priority-backfill policies' options (zero: their defaults)
	// Bandwidth is bcs's bytes per second per node (h_max = Bandwidth ×
	// Slice); 0 is unlimited.
	Bandwidth float64
	// RealtimePriority is the agents' SCHED_FIFO priority for the strobe
	// path (0: off).
	RealtimePriority int
	// Suspend is how the agents suspend ranks between slices:
	// api.SuspendSignal ("" too) or api.SuspendFreezer (docs/cgroups.md).
	Suspend string
	// StrobeFanout is the controller's strobe tree arity
	// (--strobe-fanout; 0: direct).
	StrobeFanout int
	// MPI is the process-management interface of jobs that do not name
	// one (agent --mpi: api.MPIPMI1, api.MPIPMIx, api.MPICosched or api.MPINone; "": the agent's
	// default, none).
	MPI string
	// MPILib is the directory of cosched's MPI library the agents give
	// --mpi cosched jobs (agent --mpi-lib; "": lib/cosched beside Exe's
	// bin directory).
	MPILib string
	// UnsealedStrobes leaves strobes and heartbeats unsealed despite the
	// cluster key (--unsealed-strobes): insecure, only for bench strobe
	// --auth to measure what sealing costs.
	UnsealedStrobes bool
	// KeepRanks starts the agents with --keep-ranks: their ranks outlive
	// them, so RollingRestart restarts them with the jobs running.
	KeepRanks bool
	// Temporary makes the agents die with the process that started them
	// (a benchmark's own cluster): they get SIGTERM, their orderly stop,
	// when it dies however it dies (SIGKILL, a second signal), as a
	// Slurm step's tasks or a systemd unit's processes do. Off for
	// `cluster up`, whose agents are daemons that outlive it. Stop ends
	// the link (an agent started again by Restart gets a new one).
	Temporary bool
	StateDir  string
	// Timeout bounds how long Up waits for the agents to come up and join.
	Timeout time.Duration
}

// DefaultOptions are `cosched cluster up`'s defaults, without a state
// directory.
func DefaultOptions() Options {
	return Options{Agents: 4, Processors: 1, Controllers: 1, Mode: sharing.Gang, Slice: 50 * time.Millisecond, MPL: 3, Policy: gang.EASY,
		Bandwidth: 100e6, RealtimePriority: 50, Timeout: 30 * time.Second}
}

// Validate checks every field and returns every problem at once, each a
// *fielderr.Error naming the field.
func (o Options) Validate() error {
	var errs []error
	bad := func(field string, v any, format string, args ...any) {
		errs = append(errs, fielderr.New(field, v, format, args...))
	}
	if o.Agents < 1 || o.Agents > MaxAgents {
		bad("Agents", o.Agents, "must be from 1 to %d", MaxAgents)
	}
	if o.Controllers < 1 || o.Controllers > MaxControllers {
		bad("Controllers", o.Controllers, "must be from 1 to %d (an odd number: 1, 3 or 5)", MaxControllers)
	}
	if o.Processors < 1 || o.Processors > MaxProcessors {
		bad("Processors", o.Processors, "must be from 1 to %d", MaxProcessors)
	}
	if _, err := sharing.Parse(string(o.Mode)); err != nil {
		bad("Mode", nil, "%v", err)
	}
	if o.Slice < MinSlice || o.Slice > MaxSlice {
		bad("Slice", o.Slice, "must be from %v to %v", MinSlice, MaxSlice)
	}
	switch {
	case o.MPL < 1 || o.MPL > MaxMPL:
		bad("MPL", o.MPL, "must be from 1 to %d", MaxMPL)
	case o.Mode == sharing.Space && o.MPL != 1:
		bad("MPL", o.MPL, "must be 1 in space mode (jobs run to completion)")
	}
	if _, err := gang.ParsePolicy(string(o.Policy)); err != nil {
		bad("Policy", strconv.Quote(string(o.Policy)), "unknown policy (valid: %s)", gang.PolicyNames())
	} else if !gang.IsPriorityBackfill(o.Policy) && o.Backfill != (gang.Backfill{}) {
		bad("Backfill", o.Policy, "reservations and weights apply only to the priority-backfill policies")
	}
	if o.Backfill.Reservations < 0 {
		bad("Backfill.Reservations", o.Backfill.Reservations, "want a count of at least 1, or unlimited")
	}
	if !(o.Bandwidth >= 0) || math.IsInf(o.Bandwidth, 0) || o.Bandwidth > math.MaxInt64 {
		bad("Bandwidth", o.Bandwidth, "want bytes per second, or 0 for unlimited")
	}
	if o.RealtimePriority < 0 || o.RealtimePriority > 99 {
		bad("RealtimePriority", o.RealtimePriority, "must be 0 (off) to 99")
	}
	if o.Suspend != "" && o.Suspend != api.SuspendSignal && o.Suspend != api.SuspendFreezer {
		bad("Suspend", o.Suspend, "want signal or freezer")
	}
	if _, err := api.ParseMPI(o.MPI); err != nil {
		bad("MPI", o.MPI, "want none, pmi1, pmix or cosched")
	}
	if o.StrobeFanout < 0 || o.StrobeFanout > 255 {
		bad("StrobeFanout", o.StrobeFanout, "must be 0 (direct) to 255")
	}
	if o.StateDir == "" {
		bad("StateDir", o.StateDir, "required")
	}
	if o.Timeout <= 0 {
		bad("Timeout", o.Timeout, "must be positive")
	}
	return errors.Join(errs...)
}

// Agent is one agent of a cluster: what it wrote to its ready file (Ready),
// and its log.
type Agent struct {
	Ready
	Log string `json:"log"`
	// Args are the flags it was started with (its --join and --ready-file
	// aside), so Restart starts it again the same way, over the same
	// state directory (its journal, if it is a controller).
	Args []string `json:"args,omitempty"`
	// StartTicks is when its process started (clock ticks since boot,
	// /proc/PID/stat): with PID, who it is. A pid is reused once its
	// process is gone (within seconds on a busy host); signalling a
	// recorded pid must not reach another cluster's agent.
	StartTicks uint64 `json:"start_ticks,omitempty"`
}

// running reports whether the agent's process still runs: its pid is a
// live cosched agent started when it was (records without StartTicks,
// from an older cosched, trust the pid).
func (a Agent) running() bool {
	if !alive(a.PID) {
		return false
	}
	return a.StartTicks == 0 || startTicks(a.PID) == a.StartTicks
}

// Ready is what an agent started with --ready-file writes there once it
// is up.
type Ready struct {
	Name   string `json:"name"`
	PID    int    `json:"pid"`
	Gossip string `json:"gossip"`
	API    string `json:"api"`
	Socket string `json:"socket,omitempty"` // the API's Unix socket
}

// WriteReady writes an agent's Ready record to path (its --ready-file),
// atomically: Up reads it to learn the agent is up.
func WriteReady(path string, r Ready) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b)
}

// Cluster is a running local cluster, as recorded in its state directory's
// cluster.json.
type Cluster struct {
	API     string    `json:"api"` // the controller agent's API
	Mode    string    `json:"mode"`
	Started time.Time `json:"started"`
	Agents  []Agent   `json:"agents"`
	// Exe is the cosched binary the agents run: Stop runs it to clean up
	// after agents that died without stopping.
	Exe string `json:"exe,omitempty"`
	// Notes are what Up has to tell its caller (other users' jobs will
	// not start, and why); not recorded.
	Notes []string `json:"-"`
	dir   string
	// forker starts the agents of a Temporary cluster (nil otherwise,
	// and after Stop until Restart); temporary says the cluster is one.
	forker    *forker
	temporary bool
	// firstJobID is what Up passes its controllers (ids go on from the
	// state directory's earlier clusters).
	firstJobID int64
}

// ErrRunning is returned by Up when every agent of the state directory's
// cluster still runs.
var ErrRunning = errors.New("a cluster is already running")

// File is where a cluster's record lives in its state directory.
func File(dir string) string { return filepath.Join(dir, "cluster.json") }

// KeyFile is where a cluster's key lives in its state directory (mode
// 0600, made by the first Up).
func KeyFile(dir string) string { return filepath.Join(dir, "cluster.key") }

// ClientFor returns a client for the cluster's agent whose API address is
// addr, with a credential found without ceremony: the agent's Unix socket
// when this process can reach it (the kernel vouches for its uid), else a
// token signed with the cluster's key file when this process can read it,
// else none (the agent will answer 401 saying what to do).
func (c *Cluster) ClientFor(addr string) *api.Client {
	for _, a := range c.Agents {
		if a.API == addr && a.Socket != "" {
			if conn, err := net.Dial("unix", a.Socket); err == nil {
				conn.Close()
				return api.NewUnixClient(a.Socket)
			}
		}
	}
	var others []string
	for _, a := range c.Agents {
		others = append(others, a.API)
	}
	if k, err := clusterkey.Load(KeyFile(c.dir)); err == nil {
		return api.NewKeyClient(k, addr, others...)
	}
	return api.NewClient(addr, others...)
}

// Has reports whether addr is one of the cluster's agents' API addresses.
func (c *Cluster) Has(addr string) bool {
	for _, a := range c.Agents {
		if a.API == addr {
			return true
		}
	}
	return false
}

// Client is ClientFor the controller agent's API.
func (c *Cluster) Client() *api.Client { return c.ClientFor(c.API) }

// Dir is the cluster's state directory.
func (c *Cluster) Dir() string { return c.dir }

// Load reads the record of the cluster in dir (an error wrapping
// os.ErrNotExist when there is none). The cluster may have died since:
// see Alive.
func Load(dir string) (*Cluster, error) {
	b, err := os.ReadFile(File(dir))
	if err != nil {
		return nil, err
	}
	var c Cluster
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", File(dir), err)
	}
	c.dir = dir
	return &c, nil
}

// TempStopGrace is how long the agents of a cluster a command starts for
// itself (a benchmark's, or one whose Up failed) get after SIGTERM before
// SIGKILL. It is half of a command's 10 s stop grace after SIGINT or
// SIGTERM (cmd/cosched-full), so that a stop which the agents do not
// finish by themselves (a host at load 240 was seen) still kills them
// before the command's own safety net exits and leaves them running.
const TempStopGrace = 5 * time.Second

// Up starts a cluster, waits until the controller has every agent, and
// records it in the state directory. On failure it stops what it started.
//
// When the state directory records a cluster some of whose agents died
// (killed, crashed) while others run, Up restarts those instead (Restart):
// o then only bounds the wait; the agents keep the settings they were
// started with. A recorded cluster all of whose agents died is replaced by
// a new one (Restart brings it back instead, as cluster up does).
func Up(ctx context.Context, o Options) (*Cluster, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if c, err := Load(o.StateDir); err == nil && c.Alive() {
		if len(c.Dead()) == 0 {
			return nil, fmt.Errorf("%w (state in %s)", ErrRunning, o.StateDir)
		}
		if _, err := c.Restart(ctx, o.Exe, o.Timeout); err != nil {
			return nil, err
		}
		return c, nil
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locating the cosched binary: %w", err)
		}
		o.Exe = exe
	}
	if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return nil, err
	}
	var notes []string
	if os.Geteuid() == 0 {
		exe, note, err := sharedExe(o.Exe, o.StateDir)
		if err != nil {
			return nil, err
		}
		if o.Exe = exe; note != "" {
			notes = append(notes, note)
		}
	}
	// One key per cluster, kept across ups so clients' view stays valid.
	if _, err := clusterkey.LoadOrGenerate(KeyFile(o.StateDir)); err != nil {
		return nil, err
	}
	first, err := freshJournals(o.StateDir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Mode: string(o.Mode), Started: time.Now(), Exe: o.Exe, Notes: notes, dir: o.StateDir, firstJobID: first, temporary: o.Temporary}
	ok := false
	defer func() {
		if !ok {
			_, killed := stop(c.Agents, TempStopGrace)
			c.release()
			c.cleanup(killed)
		}
	}()
	deadline := time.Now().Add(o.Timeout)
	if o.Controllers > 1 {
		if err := c.startControllers(ctx, o, deadline); err != nil {
			return nil, err
		}
	}
	for i := range o.Agents {
		if err := c.startAgent(ctx, o, i, deadline); err != nil {
			return nil, err
		}
	}
	c.API = c.Agents[0].API
	if err := c.waitJoined(ctx, o.Agents, o.Timeout, deadline); err != nil {
		return nil, err
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	if err := atomicfile.WriteFile(File(o.StateDir), b); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// startControllers starts the controller-only agents c0 … c(N-1), each
// with a fixed journal port (a restarted one is found at the same address).
func (c *Cluster) startControllers(ctx context.Context, o Options, deadline time.Time) error {
	for i := range o.Controllers {
		// A restarted controller is found at the same journal address.
		ports, err := stableport.Pick(1)
		if err != nil {
			return err
		}
		port := ports[0]
		name := fmt.Sprintf("c%d", i)
		adir := filepath.Join(o.StateDir, "agents", name)
		if err := os.MkdirAll(adir, 0o755); err != nil {
			return err
		}
		args := []string{"agent", "--name", name, "--bind", "127.0.0.1:0", "--local", "--state-dir", adir, "--no-compute",
			"--log-format", "json", "--key-file", KeyFile(o.StateDir), "--realtime-priority", strconv.Itoa(o.RealtimePriority),
			"--controllers", strconv.Itoa(o.Controllers), "--raft-port", strconv.Itoa(port)}
		if o.UnsealedStrobes {
			args = append(args, "--unsealed-strobes")
		}
		args = append(args, c.controllerArgs(o)...)
		var join []string
		if i > 0 {
			join = []string{c.Agents[0].Gossip}
		}
		c.Agents = append(c.Agents, Agent{Ready: Ready{Name: name}, Log: filepath.Join(adir, "agent.log"), Args: args})
		if err := c.launch(ctx, o.Exe, o.Env, &c.Agents[len(c.Agents)-1], join, deadline); err != nil {
			return err
		}
	}
	return nil
}

// compute is how many of the agents offer processors.
func (c *Cluster) compute() int {
	n := 0
	for _, a := range c.Agents {
		if !slices.Contains(a.Args, "--no-compute") {
			n++
		}
	}
	return n
}

// startAgent starts agent i and waits for its ready file.
func (c *Cluster) startAgent(ctx context.Context, o Options, i int, deadline time.Time) error {
	name := fmt.Sprintf("a%d", i)
	adir := filepath.Join(o.StateDir, "agents", name)
	if err := os.MkdirAll(adir, 0o755); err != nil {
		return err
	}
	args := []string{"agent", "--name", name, "--bind", "127.0.0.1:0", "--local", "--state-dir", adir,
		"--processors", strconv.Itoa(o.Processors), "--log-format", "json",
		"--key-file", KeyFile(o.StateDir),
		"--realtime-priority", strconv.Itoa(o.RealtimePriority)}
	if o.Suspend != "" {
		args = append(args, "--suspend", o.Suspend)
	}
	if o.MPILib != "" {
		args = append(args, "--mpi-lib", o.MPILib)
	}
	if o.UnsealedStrobes {
		args = append(args, "--unsealed-strobes")
	}
	if o.KeepRanks {
		args = append(args, "--keep-ranks")
	}
	var join []string
	switch {
	case o.Controllers > 1:
		join = []string{c.Agents[0].Gossip}
	case i == 0:
		args = append(args, c.controllerArgs(o)...)
	default:
		join = []string{c.Agents[0].Gossip}
	}
	c.Agents = append(c.Agents, Agent{Ready: Ready{Name: name}, Log: filepath.Join(adir, "agent.log"), Args: args})
	return c.launch(ctx, o.Exe, o.Env, &c.Agents[len(c.Agents)-1], join, deadline)
}

// launch starts agent a with its Args, joining the gossip addresses join,
// and waits for its ready file.
func (c *Cluster) launch(ctx context.Context, exe string, env []string, a *Agent, join []string, deadline time.Time) error {
	ready := filepath.Join(filepath.Dir(a.Log), "ready.json")
	os.Remove(ready)
	args := append(slices.Clone(a.Args), "--ready-file", ready)
	for _, j := range join {
		args = append(args, "--join", j)
	}
	start := (*exec.Cmd).Start
	if c.temporary {
		if c.forker == nil {
			c.forker = newForker()
		}
		start = c.forker.start
	}
	p, err := startDetached(exe, args, env, a.Log, c.temporary, start)
	if err != nil {
		return fmt.Errorf("start agent %s: %w", a.Name, err)
	}
	a.PID, a.StartTicks = p.pid, startTicks(p.pid)
	info, err := waitReady(ctx, ready, p.exited, deadline)
	if err != nil {
		if line := lastError(a.Log, p.logFrom); line != "" {
			return fmt.Errorf("agent %s did not come up: %v: %s", a.Name, err, line)
		}
		return fmt.Errorf("agent %s did not come up: %w (see %s)", a.Name, err, a.Log)
	}
	a.Ready = info
	return nil
}

// Dead lists the agents of the record that no longer run.
func (c *Cluster) Dead() []string {
	var dead []string
	for _, a := range c.Agents {
		if !a.running() {
			dead = append(dead, a.Name)
		}
	}
	return dead
}

// Restart starts again, with the flags and state directories they had,
// the agents that died; they join the ones still running, or the first of
// them when every agent died (a controller comes back with its journal). It waits until the controller has every
// agent again, updates the record, and returns the names it restarted.
// exe is the cosched binary ("" for this process's executable).
func (c *Cluster) Restart(ctx context.Context, exe string, timeout time.Duration) ([]string, error) {
	var live []string
	for _, a := range c.Agents {
		if a.running() {
			live = append(live, a.Gossip)
		}
	}
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("locating the cosched binary: %w", err)
		}
	}
	deadline := time.Now().Add(timeout)
	var restarted []string
	for i := range c.Agents {
		a := &c.Agents[i]
		if a.running() {
			continue
		}
		if len(a.Args) == 0 {
			return restarted, fmt.Errorf("agent %s died and its record has no flags to restart it with (a cluster started by an older cosched): stop it with `cosched cluster down`", a.Name)
		}
		if err := c.launch(ctx, exe, nil, a, live, deadline); err != nil {
			return restarted, err
		}
		restarted = append(restarted, a.Name)
		live = append(live, a.Gossip)
	}
	c.API = c.Agents[0].API
	if err := c.waitJoined(ctx, c.compute(), timeout, deadline); err != nil {
		return restarted, err
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	return restarted, atomicfile.WriteFile(File(c.dir), b)
}

// RollingRestart restarts every agent in turn, with the jobs running: it
// stops one (SIGTERM, SIGKILL after 10 s: its ranks live on under their
// keepers either way), starts it
// again with its flags and state directory, waits until the controller has
// it again, and goes on to the next. Compute agents go first, the
// controllers' agents last, one at a time. Every agent must keep its ranks
// (cluster up --keep-ranks): otherwise it refuses before touching any.
// The record is rewritten after each restart; the names restarted are
// returned. exe is the cosched binary ("" for this process's executable).
func (c *Cluster) RollingRestart(ctx context.Context, exe string, timeout time.Duration) ([]string, error) {
	var order []int
	for i, a := range c.Agents {
		if !slices.Contains(a.Args, "--keep-ranks") {
			return nil, fmt.Errorf("agent %s does not keep its ranks (start the cluster with cluster up --keep-ranks): restarting it would fail its jobs", a.Name)
		}
		if !a.running() {
			return nil, fmt.Errorf("agent %s is not running: start it again first (cluster up)", a.Name)
		}
		if !slices.Contains(a.Args, "--controller") {
			order = append(order, i)
		}
	}
	for i, a := range c.Agents {
		if slices.Contains(a.Args, "--controller") {
			order = append(order, i)
		}
	}
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("locating the cosched binary: %w", err)
		}
	}
	var restarted []string
	for _, i := range order {
		a := &c.Agents[i]
		var join []string
		for _, o := range c.Agents {
			if o.Name != a.Name {
				join = append(join, o.Gossip)
			}
		}
		wasAPI := c.API == a.API
		// SIGTERM: with --keep-ranks the agent leaves the cluster and
		// exits, leaving its ranks. A left member's name is free at once;
		// a killed one's only once gossip declares it dead (seconds).
		if left, _ := stop([]Agent{*a}, 10*time.Second); len(left) > 0 {
			return restarted, fmt.Errorf("agent %s (pid %d) still runs after SIGTERM and SIGKILL", a.Name, a.PID)
		}
		deadline := time.Now().Add(timeout)
		if err := c.launch(ctx, exe, nil, a, join, deadline); err != nil {
			return restarted, err
		}
		if wasAPI {
			c.API = a.API
		}
		restarted = append(restarted, a.Name)
		b, _ := json.MarshalIndent(c, "", "  ")
		if err := atomicfile.WriteFile(File(c.dir), b); err != nil {
			return restarted, err
		}
		if err := c.waitJoined(ctx, c.compute(), timeout, deadline); err != nil {
			return restarted, err
		}
	}
	return restarted, nil
}

// controllerArgs are agent a0's flags for the controller's settings.
func (c *Cluster) controllerArgs(o Options) []string {
	args := []string{"--controller", "--first-job-id", strconv.FormatInt(max(c.firstJobID, 1), 10), "--mode", string(o.Mode), "--slice", o.Slice.String(), "--mpl", strconv.Itoa(o.MPL),
		"--policy", string(o.Policy), "--bandwidth", strconv.FormatInt(int64(o.Bandwidth), 10)}
	if o.StrobeFanout > 0 {
		args = append(args, "--strobe-fanout", strconv.Itoa(o.StrobeFanout))
	}
	if o.MPI != "" {
		args = append(args, "--mpi", o.MPI)
	}
	bf := o.Backfill
	switch {
	case bf.Reservations == gang.UnlimitedReservations:
		args = append(args, "--reservations", "inf")
	case bf.Reservations > 0:
		args = append(args, "--reservations", strconv.Itoa(bf.Reservations))
	}
	if bf.Mode != "" {
		args = append(args, "--reservations-mode", string(bf.Mode))
	}
	if bf.Weights != nil {
		args = append(args, "--weights", bf.Weights.String())
	}
	return args
}

// waitJoined waits until the controller has the processors of every agent
// that offers some.
func (c *Cluster) waitJoined(ctx context.Context, agents int, timeout time.Duration, deadline time.Time) error {
	client := c.Client()
	for {
		rep, err := client.Nodes(ctx, false)
		up := 0
		for _, n := range rep.Nodes {
			if n.State == "up" && n.CPUs > 0 {
				up++
			}
		}
		if err == nil && up == agents {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d agents joined the controller in %v (logs in %s)", up, agents, timeout, c.dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type started struct {
	pid     int
	exited  <-chan error
	logFrom int64 // the log's size before this start: its lines are after
}

// startDetached starts a background process in its own session with its
// output appended to logPath, through start; it outlives this process
// unless temporary (then start must fork from a thread that lives as long
// as the process: a forker's). exited yields how it ended if it ends
// while this process still runs.
func startDetached(exe string, args, env []string, logPath string, temporary bool, start func(*exec.Cmd) error) (started, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return started{}, err
	}
	defer logf.Close()
	var from int64
	if st, err := logf.Stat(); err == nil {
		from = st.Size()
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if temporary {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	}
	if err := start(cmd); err != nil {
		return started{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // reap it if it dies while this process still runs
	return started{pid: cmd.Process.Pid, exited: done, logFrom: from}, nil
}

func waitReady(ctx context.Context, path string, exited <-chan error, deadline time.Time) (Ready, error) {
	for {
		if b, err := os.ReadFile(path); err == nil {
			var info Ready
			err := json.Unmarshal(b, &info)
			return info, err
		}
		if time.Now().After(deadline) {
			return Ready{}, errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return Ready{}, ctx.Err()
		case err := <-exited:
			if err == nil {
				return Ready{}, errors.New("it exited with status 0")
			}
			return Ready{}, fmt.Errorf("it exited: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lastError is the agent's own account of why it failed, from the part of
// its log written since offset from: the command's error line ("cosched:
// …"), else the last error-level JSON record's message and error, else "".
func lastError(logPath string, from int64) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	const most = 64 << 10 // the tail is enough; never read a huge log whole
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	from = max(from, st.Size()-most)
	buf := make([]byte, st.Size()-from)
	if _, err := f.ReadAt(buf, from); err != nil {
		return ""
	}
	found := ""
	for _, line := range strings.Split(string(buf), "\n") {
		line = strings.TrimSpace(line)
		if msg, ok := strings.CutPrefix(line, "cosched: "); ok {
			return msg
		}
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Error string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && (rec.Level == "error" || rec.Level == "fatal") {
			found = rec.Msg
			if rec.Error != "" {
				found += ": " + rec.Error
			}
		}
	}
	return found
}

// Alive reports whether any agent of the cluster still runs.
func (c *Cluster) Alive() bool {
	for _, a := range c.Agents {
		if a.running() {
			return true
		}
	}
	return false
}

// startTicks is a process's start time in clock ticks since boot (field 22
// of /proc/PID/stat), 0 if it is gone.
func startTicks(pid int) uint64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(stat[i+1:])) // fields 3 on
	if len(fields) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(fields[19], 10, 64)
	return n
}

// alive reports whether pid is a live cosched agent (not a zombie, not a
// recycled pid running something else).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), "agent\x00")
}

// Stop asks the agents to leave (SIGTERM: they kill their ranks, or with
// --keep-ranks leave them, and cleanup below kills them) and
// kills those still there after grace. The record stays in the state
// directory (with the logs, as the evidence of a run). The error names
// agents that survived even SIGKILL.
//
// An agent that died without stopping (before Stop, or killed by it) may
// have left processes in its job cgroups (a rank's children that escaped
// its process group): Stop runs `cosched agent --cleanup` for it, which
// kills and removes them.
//
// Stop ends a Temporary cluster's link to this process: call it once the
// cluster is no longer wanted, or its thread lives as long as the process.
func (c *Cluster) Stop(grace time.Duration) error {
	crashed := c.Dead()
	left, killed := stop(c.Agents, grace)
	c.release()
	if len(left) > 0 {
		return fmt.Errorf("agents still running after SIGKILL: %s", strings.Join(left, ", "))
	}
	names := append(crashed, killed...)
	for _, a := range c.Agents {
		if slices.Contains(a.Args, "--keep-ranks") && !slices.Contains(names, a.Name) {
			names = append(names, a.Name) // SIGTERM left its ranks to a next start that will not come
		}
	}
	return c.cleanup(names)
}

// release ends the forker of a Temporary cluster, if it has one, once its
// agents are stopped.
func (c *Cluster) release() {
	if c.forker != nil {
		c.forker.close()
		c.forker = nil
	}
}

// cleanup runs `cosched agent --cleanup` for the named agents.
func (c *Cluster) cleanup(names []string) error {
	if c.Exe == "" || len(names) == 0 {
		return nil // a record of an older cosched: nothing to run
	}
	var errs []error
	for _, a := range c.Agents {
		if !slices.Contains(names, a.Name) || len(a.Args) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		args := slices.DeleteFunc(slices.Clone(a.Args), func(s string) bool { return s == "--keep-ranks" }) // kept ranks go too
		out, err := exec.CommandContext(ctx, c.Exe, append(args, "--cleanup")...).CombinedOutput()
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("cleaning up after agent %s: %w: %s", a.Name, err, bytes.TrimSpace(out)))
		}
	}
	return errors.Join(errs...)
}

// Down stops the cluster (Stop) and removes its record. It first notes
// the last job id (lastJobFile), so that the next cluster of the state
// directory numbers on.
func (c *Cluster) Down(grace time.Duration) error {
	if c.dir != "" {
		if last := c.lastJobID(); last > 0 {
			if err := atomicfile.WriteFile(filepath.Join(c.dir, lastJobFile), []byte(strconv.FormatInt(last, 10)+"\n")); err != nil {
				return err
			}
		}
	}
	if err := c.Stop(grace); err != nil {
		return err
	}
	if c.dir != "" {
		if err := os.Remove(File(c.dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// lastJobFile holds, in a state directory, the last job id of the clusters
// that ran there.
const lastJobFile = "last-job-id"

// lastJobID is the highest job id the cluster gave, as its API says, or
// as the job directories under the agents' state say when it does not
// answer (a crashed cluster); 0 if none.
func (c *Cluster) lastJobID() int64 {
	var last int64
	if len(c.Agents) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		cl := c.ClientFor(c.Agents[0].API)
		cl.RetryFor = 0
		if jobs, err := cl.Jobs(ctx, true); err == nil {
			for _, j := range jobs {
				last = max(last, j.ID)
			}
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(c.dir, "agents", "*", "jobs", "*"))
	for _, d := range dirs {
		if id, err := strconv.ParseInt(filepath.Base(d), 10, 64); err == nil {
			last = max(last, id)
		}
	}
	if b, err := os.ReadFile(filepath.Join(c.dir, lastJobFile)); err == nil {
		if id, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			last = max(last, id)
		}
	}
	return last
}

// freshJournals starts a new cluster's controllers with empty journals
// (the old ones move to journal.prev: a new cluster may have other agents,
// processors or mode) and returns the first job id it is to give.
func freshJournals(dir string) (int64, error) {
	old, _ := filepath.Glob(filepath.Join(dir, "agents", "*", "journal"))
	for _, j := range old {
		prev := j + ".prev"
		if err := os.RemoveAll(prev); err != nil {
			return 0, err
		}
		if err := os.Rename(j, prev); err != nil {
			return 0, err
		}
	}
	last := (&Cluster{dir: dir}).lastJobID()
	return last + 1, nil
}

// stop ends the agents and returns those that survived even SIGKILL and
// those it had to kill.
func stop(agents []Agent, grace time.Duration) (left, killed []string) {
	for _, a := range agents {
		if a.running() {
			syscall.Kill(a.PID, syscall.SIGTERM)
		}
	}
	c := Cluster{Agents: agents}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !c.Alive() {
			return nil, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, a := range agents {
		if a.running() {
			syscall.Kill(a.PID, syscall.SIGKILL) // its ranks die with it (parent-death signal)
			killed = append(killed, a.Name)
		}
	}
	time.Sleep(100 * time.Millisecond)
	for _, a := range agents {
		if a.running() {
			left = append(left, fmt.Sprintf("%s (pid %d)", a.Name, a.PID))
		}
	}
	return left, killed
}

// RecordsLiveAgents reports whether a cluster recorded in dir, or in a
// directory up to two levels below it (a benchmark's state holds one
// cluster, or one per run), has an agent that still runs, or a record
// that cannot be read: a killed benchmark's directory (scratch.InUse)
// is kept until its agents have finished their stop.
func RecordsLiveAgents(dir string) bool {
	live := false
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || live {
			return fs.SkipAll
		}
		if d.IsDir() && strings.Count(strings.TrimPrefix(path, dir), string(filepath.Separator)) > 2 {
			return fs.SkipDir
		}
		if !d.IsDir() && d.Name() == filepath.Base(File(dir)) {
			c, err := Load(filepath.Dir(path))
			live = err != nil || c.Alive()
		}
		return nil
	})
	return live
}
