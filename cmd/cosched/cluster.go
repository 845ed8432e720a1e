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
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/sharing"
)

// clientFlags are the flags of the commands that talk to a cluster.
type clientFlags struct {
	addr     string
	stateDir string
}

func (c *clientFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.addr, "addr", "", "any agent's API address host:port, or several separated by commas, tried in turn when one does not answer (default: $COSCHED_ADDR, else the local cluster of cluster up)")
	cmd.Flags().StringVar(&c.stateDir, "state-dir", "", "state directory of cluster up (default: $COSCHED_STATE_DIR, else ~/.local/state/cosched)")
}

// client resolves the API address (--addr, COSCHED_ADDR, the local
// cluster) and the credential (see localcluster.ClientForAddrs and
// Cluster.ClientFor).
func (c *clientFlags) client() (*api.Client, error) {
	addr := c.addr
	if addr == "" {
		addr = os.Getenv("COSCHED_ADDR")
	}
	dir, err := localcluster.StateDir(c.stateDir)
	if addr != "" {
		return clientForAddr(addr, dir)
	}
	if err != nil {
		return nil, err
	}
	rec, err := localcluster.Load(dir)
	if err != nil {
		return nil, errors.New("no cluster to talk to: pass --addr or set COSCHED_ADDR, or start a local cluster with `cosched cluster up`")
	}
	return rec.Client(), nil
}

// clientForAddr is a client of the agents at addr, a comma-separated
// list (--addr), with the credential localcluster.ClientForAddrs finds.
func clientForAddr(addr, stateDir string) (*api.Client, error) {
	addrs := strings.Split(addr, ",")
	for i, a := range addrs {
		if addrs[i] = strings.TrimSpace(a); addrs[i] == "" {
			return nil, fmt.Errorf("--addr %q: empty address in the list", addr)
		}
	}
	return localcluster.ClientForAddrs(addrs, stateDir)
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
	opts      localcluster.Options
	mode      string
	slice     string
	policy    string
	bandwidth string
	backfill  backfillFlags
	changed   func(name string) bool
}

// clusterUpFlagNames maps localcluster.Options' fields to cluster up's flags.
var clusterUpFlagNames = flagNames{"Agents": "-N", "Processors": "--processors", "Mode": "--mode", "Slice": "--slice",
	"MPL": "--mpl", "Policy": "--policy", "Backfill": "--reservations", "Backfill.Reservations": "--reservations",
	"Bandwidth": "--bandwidth", "RealtimePriority": "--realtime-priority", "StateDir": "--state-dir", "Timeout": "--timeout",
	"Suspend": "--suspend", "Controllers": "--controllers", "MPI": "--mpi"}

func newClusterUpCmd() *cobra.Command {
	f := clusterUpFlags{opts: localcluster.DefaultOptions(), mode: "gang", slice: "50ms", policy: "easy", bandwidth: "100MB"}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start -N agents (nodes) on this machine (the first is the controller) and record how to reach them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			warnDeprecated(cmd, map[string]string{"agents": "-N/--nodes"})
			return clusterUp(cmd.Context(), cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.opts.Agents, "nodes", "N", f.opts.Agents, "number of agents (nodes)")
	fl.IntVarP(&f.opts.Agents, "agents", "n", f.opts.Agents, "number of agents")
	_ = fl.MarkHidden("agents")
	fl.IntVar(&f.opts.Controllers, "controllers", f.opts.Controllers, "controllers: 1, agent a0 is the controller; N (3, 5), N more agents c0… without processors form the controllers' group: one leads, the others take over when it dies (docs/JOURNAL.md)")
	fl.StringVar(&f.mode, "mode", f.mode, "space, gang, bcs or local")
	fl.StringVar(&f.bandwidth, "bandwidth", f.bandwidth, "bcs: bandwidth per node, per second (h_max = bandwidth × slice; 0: unlimited)")
	fl.StringVar(&f.slice, "slice", f.slice, "time slice (gang, bcs)")
	fl.IntVar(&f.opts.MPL, "mpl", f.opts.MPL, "multiprogramming level (1 in space mode)")
	fl.StringVar(&f.policy, "policy", f.policy, "queue policy: "+gang.PolicyNames())
	f.backfill.add(fl, "")
	fl.IntVar(&f.opts.Processors, "processors", f.opts.Processors, "processors each agent offers")
	fl.StringVar(&f.opts.StateDir, "state-dir", "", "state directory (default: $COSCHED_STATE_DIR, else ~/.local/state/cosched)")
	fl.DurationVar(&f.opts.Timeout, "timeout", f.opts.Timeout, "how long to wait for the agents to come up")
	fl.IntVar(&f.opts.RealtimePriority, "realtime-priority", f.opts.RealtimePriority, "agents' SCHED_FIFO priority for the strobe path (0: off; see cosched agent --help)")
	fl.StringVar(&f.opts.Suspend, "suspend", api.SuspendSignal, "how agents suspend ranks between slices: signal or freezer (cgroups; see docs/cgroups.md)")
	fl.StringVar(&f.opts.MPI, "mpi", "", "process-management interface of jobs that name none (submit --mpi): pmi1 (MPICH programs, docs/mpi.md) or none (the default)")
	return cmd
}

// options parses the flags that are text into f.opts and checks them all
// (localcluster.Options.Validate), every problem named by its flag.
func (f *clusterUpFlags) options() (localcluster.Options, error) {
	var errs []error
	parsed := map[string]bool{} // flags whose text did not parse: Validate's word on them is noise
	o := f.opts
	mode, err := sharing.Parse(f.mode)
	if err != nil {
		errs, parsed["--mode"] = append(errs, fmt.Errorf("--mode: %v", err)), true
	}
	o.Mode = mode
	if o.Slice, err = time.ParseDuration(f.slice); err != nil {
		errs, parsed["--slice"] = append(errs, fmt.Errorf("--slice %q: not a duration", f.slice)), true
	}
	policy, err := gang.ParsePolicy(f.policy)
	if err != nil {
		errs, parsed["--policy"] = append(errs, fmt.Errorf("--policy %q: unknown policy (valid: %s)", f.policy, gang.PolicyNames())), true
	}
	o.Policy = policy
	changed := f.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	bf, bfErr := gang.BackfillText(f.backfill).ParseFor(policy, backfillFlagNames.given(changed))
	if bfErrs := backfillFlagNames.list(bfErr); len(bfErrs) > 0 {
		errs, parsed["--reservations"] = append(errs, bfErrs...), true
	}
	o.Backfill = bf
	if bw, err := textvalue.Bandwidth(cmp.Or(f.bandwidth, "100MB")); err != nil {
		errs, parsed["--bandwidth"] = append(errs, fmt.Errorf("--bandwidth %q: %v", f.bandwidth, err)), true
	} else {
		o.Bandwidth = bw
	}
	if mode == sharing.Space && !changed("mpl") {
		o.MPL = 1 // the default MPL is for the time-shared modes
	}
	if o.StateDir, err = localcluster.StateDir(o.StateDir); err != nil {
		errs, parsed["--state-dir"] = append(errs, err), true
	}
	for _, e := range fielderr.All(o.Validate()) {
		if flag := clusterUpFlagNames[e.Field]; !parsed[flag] {
			errs = append(errs, clusterUpFlagNames.error(e))
		}
	}
	if len(errs) > 0 {
		return o, flagErrors(errs)
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
	return nil
}

func newClusterDownCmd() *cobra.Command {
	var stateDir string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster: every agent and every rank",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := localcluster.StateDir(stateDir)
			if err != nil {
				return err
			}
			c, err := localcluster.Load(dir)
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					fmt.Fprintln(cmd.OutOrStdout(), "no local cluster is running")
					return nil
				}
				return err
			}
			if err := c.Down(grace); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster of %d agents stopped\n", len(c.Agents))
			return nil
		},
	}
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "state directory of cluster up (default: $COSCHED_STATE_DIR, else ~/.local/state/cosched)")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "how long agents get to leave before they are killed")
	return cmd
}
