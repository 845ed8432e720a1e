package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/sharing"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start or stop a local cluster of agents on loopback",
	}
	cmd.AddCommand(newClusterUpCmd(), newClusterDownCmd(), newClusterRestartCmd())
	return cmd
}

type clusterUpFlags struct {
	opts      localcluster.Options
	slice     *textvalue.Flag[time.Duration]
	bandwidth *textvalue.Flag[float64]
	backfill  cli.BackfillFlags
	changed   func(name string) bool
}

// clusterUpFlagNames maps localcluster.Options' fields to cluster up's flags.
var clusterUpFlagNames = cli.FlagNames{"Agents": "-N", "Processors": "--processors", "Mode": "--mode", "Slice": "--slice",
	"MPL": "--mpl", "Policy": "--policy", "Backfill": "--reservations", "Backfill.Reservations": "--reservations", "Reservations": "--reservations",
	"ReservationsMode": "--reservations-mode", "Weights": "--weights", "Bandwidth": "--bandwidth", "RealtimePriority": "--realtime-priority",
	"StateDir": "--state-dir", "Timeout": "--timeout", "Suspend": "--suspend", "Controllers": "--controllers", "MPI": "--mpi", "KeepRanks": "--keep-ranks"}

func newClusterUpCmd() *cobra.Command {
	f := clusterUpFlags{opts: localcluster.DefaultOptions()}
	f.slice = textvalue.NewFlag(&f.opts.Slice, "Slice", "50ms", textvalue.Duration)
	f.bandwidth = textvalue.NewFlag(&f.opts.Bandwidth, "Bandwidth", "100MB", func(s string) (float64, error) { return textvalue.Bandwidth(cmp.Or(s, "100MB")) })
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start -N agents (nodes) on this machine (the first is the controller) and record how to reach them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			cli.WarnDeprecated(cmd, map[string]string{"agents": "-N/--nodes"})
			return clusterUp(cmd.Context(), cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.opts.Agents, "nodes", "N", f.opts.Agents, "number of agents (nodes)")
	fl.IntVarP(&f.opts.Agents, "agents", "n", f.opts.Agents, "number of agents")
	_ = fl.MarkHidden("agents")
	fl.IntVar(&f.opts.Controllers, "controllers", f.opts.Controllers, "controllers: 1, agent a0 is the controller; N (3, 5), N more agents c0… without processors form the controllers' group: one leads, the others take over when it dies (docs/JOURNAL.md)")
	fl.StringVar((*string)(&f.opts.Mode), "mode", string(f.opts.Mode), "space, gang, bcs or local")
	fl.Var(f.bandwidth, "bandwidth", "bcs: bandwidth per node, per second (h_max = bandwidth × slice; 0: unlimited)")
	fl.Var(f.slice, "slice", "time slice (gang, bcs)")
	fl.IntVar(&f.opts.MPL, "mpl", f.opts.MPL, "multiprogramming level (1 in space mode)")
	fl.StringVar((*string)(&f.opts.Policy), "policy", string(f.opts.Policy), "queue policy: "+gang.PolicyNames())
	f.backfill.Add(fl, "")
	fl.IntVar(&f.opts.Processors, "processors", f.opts.Processors, "processors each agent offers")
	fl.StringVar(&f.opts.StateDir, "state-dir", "", "state directory (default: $COSCHED_STATE_DIR, else for root "+localcluster.SystemStateDir+", which every user's commands find, else ~/.local/state/cosched)")
	fl.DurationVar(&f.opts.Timeout, "timeout", f.opts.Timeout, "how long to wait for the agents to come up")
	fl.IntVar(&f.opts.RealtimePriority, "realtime-priority", f.opts.RealtimePriority, "agents' SCHED_FIFO priority for the strobe path (0: off; see cosched agent --help)")
	fl.StringVar(&f.opts.Suspend, "suspend", api.SuspendSignal, "how agents suspend ranks between slices: signal or freezer (cgroups; see docs/cgroups.md)")
	fl.BoolVar(&f.opts.KeepRanks, "keep-ranks", false, "agents start with --keep-ranks: ranks outlive their agent, and `cluster restart` restarts every agent with the jobs running (docs/runtime.md)")
	fl.StringVar(&f.opts.MPI, "mpi", "", "process-management interface of jobs that name none (submit --mpi): pmi1 (MPICH programs on MPICH), pmix (Open MPI programs), cosched (MPICH programs on cosched's MPI library; docs/mpi.md) or none (the default)")
	return cmd
}

// options parses the flags that are text into f.opts and checks them all
// (localcluster.Options.Validate), every problem named by its flag.
func (f *clusterUpFlags) options() (localcluster.Options, error) {
	o, given := f.opts, clusterUpFlagNames.Given(f.changed)
	mode, _ := sharing.Parse(string(o.Mode)) // Validate names a bad one
	policy, _ := gang.ParsePolicy(string(o.Policy))
	o.Mode, o.Policy = cmp.Or(mode, o.Mode), cmp.Or(policy, o.Policy)
	bf, bfErr := gang.BackfillText(f.backfill).ParseFor(policy, given)
	o.Backfill = bf
	if o.Mode == sharing.Space && !given("MPL") {
		o.MPL = 1 // the default MPL is for the time-shared modes
	}
	dir, dirErr := localcluster.StateDir(o.StateDir)
	o.StateDir = dir
	parsed := errors.Join(f.slice.Err, f.bandwidth.Err, bfErr)
	// Validate's problem with StateDir is dirErr's: said once.
	errs := clusterUpFlagNames.List(fielderr.Merge(parsed, o.Validate()), "StateDir")
	if dirErr != nil {
		errs = append(errs, dirErr)
	}
	if len(errs) > 0 {
		return o, cli.FlagErrors(errs)
	}
	return o, nil
}

func clusterUp(ctx context.Context, out io.Writer, f *clusterUpFlags) error {
	o, err := f.options()
	if err != nil {
		return err
	}
	if c, err := localcluster.Load(o.StateDir); err == nil && len(c.Dead()) > 0 {
		names, err := c.Restart(ctx, o.Exe, o.Timeout)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "restarted %s in the cluster of %d agents (with their state; controller at %s)\n", strings.Join(names, ", "), len(c.Agents), c.API)
		return nil
	}
	c, err := localcluster.Up(ctx, o)
	if errors.Is(err, localcluster.ErrRunning) {
		return fmt.Errorf("a cluster is already running (state in %s); stop it with `cosched cluster down`", o.StateDir)
	}
	if err != nil {
		return err
	}
	file := localcluster.File(o.StateDir)
	if o.Controllers > 1 {
		fmt.Fprintf(out, "cluster of %d agents and %d controllers up (%s mode, API at %s and every agent)\n", o.Agents, o.Controllers, o.Mode, c.API)
	} else {
		fmt.Fprintf(out, "cluster of %d agents up (%s mode, controller a0 at %s)\n", o.Agents, o.Mode, c.API)
	}
	fmt.Fprintf(out, "  cosched submit -n 2 -t 1m -- sleep 10    # the commands find it through %s\n", file)
	fmt.Fprintf(out, "  export COSCHED_ADDR=%s COSCHED_KEY_FILE=%s   # or from elsewhere\n", c.API, localcluster.KeyFile(c.Dir()))
	fmt.Fprintf(out, "  cosched cluster down\n")
	if o.StateDir == localcluster.SystemDir() {
		fmt.Fprintf(out, "every user's commands find it in %s; their jobs run as them\n", o.StateDir)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(out, "warning: %s\n", n)
	}
	return nil
}

// loadCluster reads the local cluster's record from --state-dir or where
// commands look by default, and says where it looked; an error wrapping
// os.ErrNotExist means no cluster is recorded there.
func loadCluster(stateDir string) (*localcluster.Cluster, string, error) {
	dir, err := localcluster.FindStateDir(stateDir)
	if err != nil {
		return nil, dir, err
	}
	c, err := localcluster.Load(dir)
	return c, dir, err
}

func newClusterRestartCmd() *cobra.Command {
	var stateDir string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "restart",
		Short: "Restart every agent of the local cluster in turn, the controller's last, with the jobs running (needs cluster up --keep-ranks)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, dir, err := loadCluster(stateDir)
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("no local cluster in %s: start one with `cosched cluster up --keep-ranks`", dir)
			} else if err != nil {
				return err
			}
			start := time.Now()
			names, err := c.RollingRestart(cmd.Context(), c.Exe, timeout)
			if len(names) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "restarted %s in %v (controller at %s)\n", strings.Join(names, ", "), time.Since(start).Round(10*time.Millisecond), c.API)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", cli.StateDirHelp)
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long each agent gets to come back and be seen by the controller")
	return cmd
}

func newClusterDownCmd() *cobra.Command {
	var stateDir string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster: every agent and every rank",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := loadCluster(stateDir)
			if errors.Is(err, os.ErrNotExist) {
				fmt.Fprintln(cmd.OutOrStdout(), "no local cluster is running")
				return nil
			} else if err != nil {
				return err
			}
			if err := c.Down(grace); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster of %d agents stopped\n", len(c.Agents))
			return nil
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", cli.StateDirHelp)
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long agents get to leave before they are killed")
	return cmd
}
