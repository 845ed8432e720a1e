package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/node"
)

// stateDirFor resolves the state directory: the flag, else
// COSCHED_STATE_DIR, else $XDG_STATE_HOME/cosched, else
// ~/.local/state/cosched.
func stateDirFor(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if d := os.Getenv("COSCHED_STATE_DIR"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "cosched"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("no state directory: set --state-dir or COSCHED_STATE_DIR")
	}
	return filepath.Join(home, ".local", "state", "cosched"), nil
}

// clusterRecord is what `cluster up` leaves in the state directory.
type clusterRecord struct {
	API     string       `json:"api"` // the controller agent's API
	Mode    string       `json:"mode"`
	Started time.Time    `json:"started"`
	Agents  []clusterAgt `json:"agents"`
}

type clusterAgt struct {
	readyInfo
	Log string `json:"log"`
}

func clusterFile(dir string) string { return filepath.Join(dir, "cluster.json") }

func readCluster(dir string) (*clusterRecord, error) {
	b, err := os.ReadFile(clusterFile(dir))
	if err != nil {
		return nil, err
	}
	var c clusterRecord
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", clusterFile(dir), err)
	}
	return &c, nil
}

// clientFlags are the flags of the commands that talk to a cluster.
type clientFlags struct {
	addr     string
	stateDir string
}

func (c *clientFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.addr, "addr", "", "any agent's API address host:port, or several separated by commas, tried in turn when one does not answer (default: $COSCHED_ADDR, else the local cluster of cluster up)")
	cmd.Flags().StringVar(&c.stateDir, "state-dir", "", "state directory of cluster up (default: $COSCHED_STATE_DIR, else ~/.local/state/cosched)")
}

// client resolves the API address: --addr, COSCHED_ADDR, the local cluster.
func (c *clientFlags) client() (*node.Client, error) {
	addr := c.addr
	if addr == "" {
		addr = os.Getenv("COSCHED_ADDR")
	}
	if addr == "" {
		dir, err := stateDirFor(c.stateDir)
		if err != nil {
			return nil, err
		}
		rec, err := readCluster(dir)
		if err != nil {
			return nil, errors.New("no cluster to talk to: pass --addr or set COSCHED_ADDR, or start a local cluster with `cosched cluster up`")
		}
		others := make([]string, 0, len(rec.Agents))
		for _, a := range rec.Agents {
			others = append(others, a.API)
		}
		return node.NewClient(rec.API, others...), nil
	}
	addrs := strings.Split(addr, ",")
	for i, a := range addrs {
		if addrs[i] = strings.TrimSpace(a); addrs[i] == "" {
			return nil, fmt.Errorf("--addr %q: empty address in the list", addr)
		}
	}
	return node.NewClient(addrs[0], addrs[1:]...), nil
}

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start or stop a local cluster of agents on loopback",
	}
	cmd.AddCommand(newClusterUpCmd(), newClusterDownCmd())
	return cmd
}

type clusterUpFlags struct {
	n          int
	mode       string
	slice      string
	mpl        int
	policy     string
	processors int
	stateDir   string
	timeout    time.Duration
	priority   int
	bandwidth  string
	backfill   backfillFlags
	changed    func(name string) bool
}

func newClusterUpCmd() *cobra.Command {
	f := clusterUpFlags{n: 4, mode: "gang", slice: "50ms", mpl: 3, policy: "easy", processors: 1, timeout: 30 * time.Second, priority: 50, bandwidth: "100MB"}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start N agents on this machine (the first is the controller) and record how to reach them",
		Long: `Start a cluster of agents on loopback, in the background: agent a0 runs the
controller, the others join it. Each agent offers --processors processors
(1 by default, so N agents are N nodes of one processor). The cluster's
address is recorded in the state directory, where cosched submit, queue,
cancel and nodes find it; cosched cluster down stops it. Agent logs and rank
output go under the state directory.`,
		Example: `  cosched cluster up -n 4 --mode gang --slice 10ms --mpl 2
  cosched cluster up -n 2 --processors 2 --mode space --policy sjf-bf --reservations 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			return clusterUp(cmd.Context(), cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.n, "agents", "n", f.n, "number of agents")
	fl.StringVar(&f.mode, "mode", f.mode, "space, gang, bcs or local")
	fl.StringVar(&f.bandwidth, "bandwidth", f.bandwidth, "bcs: bandwidth per node, per second (h_max = bandwidth × slice; 0: unlimited)")
	fl.StringVar(&f.slice, "slice", f.slice, "time slice (gang, bcs)")
	fl.IntVar(&f.mpl, "mpl", f.mpl, "multiprogramming level (1 in space mode)")
	fl.StringVar(&f.policy, "policy", f.policy, "queue policy: "+policyNames())
	f.backfill.add(fl, "")
	fl.IntVar(&f.processors, "processors", f.processors, "processors each agent offers")
	fl.StringVar(&f.stateDir, "state-dir", "", "state directory (default: $COSCHED_STATE_DIR, else ~/.local/state/cosched)")
	fl.DurationVar(&f.timeout, "timeout", f.timeout, "how long to wait for the agents to come up")
	fl.IntVar(&f.priority, "realtime-priority", f.priority, "agents' SCHED_FIFO priority for the strobe path (0: off; see cosched agent --help)")
	return cmd
}

func clusterUp(ctx context.Context, out io.Writer, f *clusterUpFlags) error {
	var errs []error
	if f.n < 1 {
		errs = append(errs, fmt.Errorf("-n %d: must be at least 1", f.n))
	}
	mode, err := node.ParseMode(f.mode)
	if err != nil {
		errs = append(errs, fmt.Errorf("--mode: %v", err))
	}
	if _, err := time.ParseDuration(f.slice); err != nil {
		errs = append(errs, fmt.Errorf("--slice %q: not a duration", f.slice))
	}
	policy, err := gang.ParsePolicy(f.policy)
	if err != nil {
		errs = append(errs, fmt.Errorf("--policy %q: unknown policy (valid: %s)", f.policy, policyNames()))
	}
	if f.changed == nil {
		f.changed = func(string) bool { return false }
	}
	_, bfErrs := f.backfill.backfillFor(policy, err == nil, f.changed)
	errs = append(errs, bfErrs...)
	if f.processors < 1 {
		errs = append(errs, fmt.Errorf("--processors %d: must be at least 1", f.processors))
	}
	if f.bandwidth == "" {
		f.bandwidth = "100MB"
	}
	if f.priority < 0 || f.priority > 99 {
		errs = append(errs, fmt.Errorf("--realtime-priority %d: must be 0 (off) to 99", f.priority))
	}
	if mode == node.Space {
		f.mpl = 1
	}
	if len(errs) > 0 {
		return flagErrors(errs)
	}
	dir, err := stateDirFor(f.stateDir)
	if err != nil {
		return err
	}
	if rec, err := readCluster(dir); err == nil && anyAlive(rec) {
		return fmt.Errorf("a cluster is already running (state in %s); stop it with `cosched cluster down`", dir)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rec := clusterRecord{Mode: string(mode), Started: time.Now()}
	ok := false
	defer func() {
		if !ok {
			stopAgents(rec.Agents, 5*time.Second)
		}
	}()
	deadline := time.Now().Add(f.timeout)
	for i := 0; i < f.n; i++ {
		name := fmt.Sprintf("a%d", i)
		adir := filepath.Join(dir, "agents", name)
		if err := os.MkdirAll(adir, 0o755); err != nil {
			return err
		}
		ready := filepath.Join(adir, "ready.json")
		os.Remove(ready)
		args := []string{"agent", "--name", name, "--bind", "127.0.0.1:0", "--local", "--state-dir", adir,
			"--processors", strconv.Itoa(f.processors), "--ready-file", ready, "--log-format", "json",
			"--realtime-priority", strconv.Itoa(f.priority)}
		if i == 0 {
			args = append(args, "--controller", "--mode", string(mode), "--slice", f.slice, "--mpl", strconv.Itoa(f.mpl), "--policy", f.policy,
				"--bandwidth", f.bandwidth)
			args = append(args, f.backfill.args(f.changed)...)
		} else {
			args = append(args, "--join", rec.Agents[0].Gossip)
		}
		logPath := filepath.Join(adir, "agent.log")
		pid, exited, err := startDetached(exe, args, logPath)
		if err != nil {
			return fmt.Errorf("start agent %s: %w", name, err)
		}
		rec.Agents = append(rec.Agents, clusterAgt{readyInfo: readyInfo{Name: name, PID: pid}, Log: logPath})
		info, err := waitReady(ctx, ready, exited, deadline)
		if err != nil {
			return fmt.Errorf("agent %s did not come up: %w (see %s)", name, err, logPath)
		}
		rec.Agents[i].readyInfo = info
	}
	rec.API = rec.Agents[0].API
	// The cluster is up once the controller has every agent's processors.
	c := node.NewClient(rec.API)
	for {
		rep, err := c.Nodes(ctx, false)
		up := 0
		for _, n := range rep.Nodes {
			if n.State == "up" {
				up++
			}
		}
		if err == nil && up == f.n {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d agents joined the controller in %v (logs in %s)", up, f.n, f.timeout, dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	if err := atomicfile.WriteFile(clusterFile(dir), b); err != nil {
		return err
	}
	ok = true
	fmt.Fprintf(out, "cluster of %d agents up (%s mode, controller a0 at %s)\n", f.n, mode, rec.API)
	fmt.Fprintf(out, "  cosched submit -n 2 -t 1m -- sleep 10    # the commands find it through %s\n", clusterFile(dir))
	fmt.Fprintf(out, "  export COSCHED_ADDR=%s               # or from elsewhere\n", rec.API)
	fmt.Fprintf(out, "  cosched cluster down\n")
	return nil
}

// startDetached starts a background process in its own session with its
// output in logPath; it outlives this command. exited yields how it ended
// if it ends while this command still runs.
func startDetached(exe string, args []string, logPath string) (pid int, exited <-chan error, err error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, nil, err
	}
	defer logf.Close()
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // reap it if it dies while this command still runs
	return cmd.Process.Pid, done, nil
}

func waitReady(ctx context.Context, path string, exited <-chan error, deadline time.Time) (readyInfo, error) {
	for {
		if b, err := os.ReadFile(path); err == nil {
			var info readyInfo
			if err := json.Unmarshal(b, &info); err != nil {
				return info, err
			}
			return info, nil
		}
		if time.Now().After(deadline) {
			return readyInfo{}, errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return readyInfo{}, ctx.Err()
		case err := <-exited:
			if err == nil {
				return readyInfo{}, errors.New("it exited with status 0")
			}
			return readyInfo{}, fmt.Errorf("it exited: %w", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
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

func anyAlive(rec *clusterRecord) bool {
	for _, a := range rec.Agents {
		if alive(a.PID) {
			return true
		}
	}
	return false
}

// stopAgents asks agents to leave (SIGTERM: they kill their ranks) and
// kills the ones still there after grace. It returns those that survived.
func stopAgents(agents []clusterAgt, grace time.Duration) []string {
	for _, a := range agents {
		if alive(a.PID) {
			syscall.Kill(a.PID, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !anyAlive(&clusterRecord{Agents: agents}) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	var left []string
	for _, a := range agents {
		if alive(a.PID) {
			syscall.Kill(a.PID, syscall.SIGKILL) // its ranks die with it (parent-death signal)
		}
	}
	time.Sleep(100 * time.Millisecond)
	for _, a := range agents {
		if alive(a.PID) {
			left = append(left, fmt.Sprintf("%s (pid %d)", a.Name, a.PID))
		}
	}
	return left
}

func newClusterDownCmd() *cobra.Command {
	var stateDir string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster: every agent and every rank",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := stateDirFor(stateDir)
			if err != nil {
				return err
			}
			rec, err := readCluster(dir)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					fmt.Fprintln(cmd.OutOrStdout(), "no local cluster is running")
					return nil
				}
				return err
			}
			if left := stopAgents(rec.Agents, grace); len(left) > 0 {
				return fmt.Errorf("agents still running after SIGKILL: %s", strings.Join(left, ", "))
			}
			if err := os.Remove(clusterFile(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster of %d agents stopped\n", len(rec.Agents))
			return nil
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "state directory of cluster up (default: $COSCHED_STATE_DIR, else ~/.local/state/cosched)")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long agents get to leave before they are killed")
	return cmd
}
