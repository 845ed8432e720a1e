package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/bench/measure"
	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/sharing"
)

type benchRunFlags struct {
	workload     string
	jobs         int
	load         float64
	modes        string
	nodes        int
	slice        time.Duration
	mpl          int
	policy       string
	meanRuntime  time.Duration
	work         string
	seed         uint64
	bandwidth    string
	out          string
	priority     int
	stallTimeout time.Duration
	addr         string
	profile      string
	wide         bool
}

func newBenchRunCmd() *cobra.Command {
	f := benchRunFlags{workload: "w3", jobs: 40, load: 0.8, modes: "bcs,gang,space", nodes: 4, slice: 50 * time.Millisecond,
		mpl: 3, policy: "easy", meanRuntime: 5 * time.Second, seed: 1, bandwidth: "100MB", priority: 50}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a benchmark workload on a local cluster under each mode and compare",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --modes is the former name of --mode.
			changed := func(name string) bool {
				return cmd.Flags().Changed(name) || name == "mode" && cmd.Flags().Changed("modes")
			}
			if cmd.Flags().Changed("modes") {
				printWarnings(cmd.ErrOrStderr(), []string{"--modes is the former name of --mode; write --mode (--modes will stop working)"})
			}
			return benchRun(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f, changed)
		},
	}
	f.addFlags(cmd.Flags())
	return cmd
}

// addFlags defines the command's flags on fl, with f's values as defaults.
func (f *benchRunFlags) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&f.workload, "workload", f.workload, "named workload (template mix): w0 … w4")
	fl.IntVar(&f.jobs, "jobs", f.jobs, "jobs in the workload")
	fl.Float64Var(&f.load, "load", f.load, "offered load")
	fl.StringVar(&f.modes, "mode", f.modes, "comma-separated modes to run: space, gang, bcs")
	fl.StringVar(&f.modes, "modes", f.modes, "former name of --mode")
	_ = fl.MarkHidden("modes") // still read, with a warning
	fl.IntVar(&f.nodes, "nodes", f.nodes, "agents (nodes of one processor)")
	fl.DurationVar(&f.slice, "slice", f.slice, "time slice (gang, bcs)")
	fl.IntVar(&f.mpl, "mpl", f.mpl, "multiprogramming level (gang, bcs)")
	fl.StringVar(&f.policy, "policy", f.policy, "queue policy: "+gang.PolicyNames())
	fl.DurationVar(&f.meanRuntime, "mean-runtime", f.meanRuntime, "mean dedicated runtime at load 1 (the run's time scale)")
	fl.StringVar(&f.work, "work", "", "ranks' work: cpu or wall (default: wall when --nodes exceeds the cores, else cpu)")
	fl.Uint64Var(&f.seed, "seed", f.seed, "workload seed")
	fl.StringVar(&f.bandwidth, "bandwidth", f.bandwidth, "bcs: bandwidth per node per second (h_max = bandwidth × slice)")
	fl.StringVar(&f.out, "out", "", "output directory (default: cosched-bench-DATE-TIME)")
	fl.IntVar(&f.priority, "realtime-priority", f.priority, "agents' SCHED_FIFO priority for the strobe path (0: off)")
	fl.StringVar(&f.addr, "addr", "", "run on the existing cluster whose controller API is at HOST:PORT (its mode, processors, slice and MPL) instead of starting local ones")
	fl.StringVar(&f.profile, "profile", "", "simulate with this machine profile (from cosched bench calibrate) instead of the default machine costs")
	fl.BoolVar(&f.wide, "wide", false, "print a column per measured and simulated value, with slowdown, makespan and slot reuses (the default table pairs them)")
	fl.DurationVar(&f.stallTimeout, "stall-timeout", 0, "fail a mode when no job ends for this long while jobs are running (default: max(2m, 4 × MPL × the longest time limit))")
}

// benchRunConfig is a validated bench run.
type benchRunConfig struct {
	opts    measure.RunOptions
	machine sweep.Machine // the workload's machine (the simulated side's is opts.Machine: the profile applied)
	profile *profile.Profile
}

var benchRunFlagNames = flagNames{"Modes": "--mode", "Nodes": "--nodes", "Slice": "--slice", "MPL": "--mpl", "Policy": "--policy",
	"Bandwidth": "--bandwidth", "Work": "--work", "StallTimeout": "--stall-timeout", "RealtimePriority": "--realtime-priority",
	"Point.Workload": "--workload", "Point.Jobs": "--jobs", "Point.Load": "--load", "Machine.MeanRuntime": "--mean-runtime", "Addr": "--addr"}

// validate parses the flags into the run's options, on the cluster behind
// cl when there is one (measure.Existing.Adopt), and checks them all
// (measure.RunOptions.Validate), every problem named by its flag.
func (f *benchRunFlags) validate(ctx context.Context, progress io.Writer, cl *api.Client, changed func(string) bool) (benchRunConfig, error) {
	var errs []error
	o := measure.RunOptions{Nodes: f.nodes, Slice: f.slice, MPL: f.mpl, Policy: gang.Policy(f.policy), RealtimePriority: f.priority,
		Work: f.work, StallTimeout: f.stallTimeout}
	for _, s := range strings.Split(f.modes, ",") {
		m, err := sharing.Parse(strings.TrimSpace(s))
		if err != nil {
			errs = append(errs, fmt.Errorf("--mode: %v", err))
			continue
		}
		o.Modes = append(o.Modes, m)
	}
	if bw, err := textvalue.Bandwidth(f.bandwidth); err != nil {
		errs = append(errs, fmt.Errorf("--bandwidth %q: %v", f.bandwidth, err))
	} else {
		o.Bandwidth = bw
	}
	if cl != nil {
		if err := f.adopt(ctx, progress, cl, &o, changed); err != nil {
			return benchRunConfig{}, err
		}
	}
	o.Work = cmp.Or(o.Work, measure.DefaultWork(o.Nodes))
	c := benchRunConfig{machine: sweep.DefaultMachine()}
	c.machine.Processors, c.machine.MemoryPerProc, c.machine.MeanRuntime = o.Nodes, 0, f.meanRuntime
	o.Machine = c.machine
	o.Point = sweep.Point{MPL: o.MPL, Slice: o.Slice, Load: f.load, Workload: f.workload, Jobs: f.jobs, Seed: f.seed, Policy: o.Policy}
	var skip []string
	if len(errs) > 0 && len(o.Modes) == 0 {
		skip = []string{"Modes"} // "no mode" says nothing new
	}
	errs = append(errs, benchRunFlagNames.list(o.Validate(), skip...)...)
	if len(errs) > 0 {
		return c, flagErrors(errs)
	}
	if f.profile != "" {
		p, err := profile.Load(f.profile)
		if err != nil {
			return c, fmt.Errorf("--profile: %w", err)
		}
		c.profile, o.Machine = p, p.Apply(c.machine)
	}
	c.opts = o
	return c, nil
}

// adopt takes the mode, processors, slice and MPL of the cluster behind cl
// into o (measure.Existing.Adopt): a flag set to something else is an
// error naming it.
func (f *benchRunFlags) adopt(ctx context.Context, progress io.Writer, cl *api.Client, o *measure.RunOptions, changed func(string) bool) error {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cs, err := measure.Inspect(qctx, cl)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", f.addr, err)
	}
	given := func(field string) bool { return changed(strings.TrimPrefix(benchRunFlagNames[field], "--")) }
	warning, err := cs.Adopt(o, given, runtime.NumCPU())
	if fields := fielderr.All(err); len(fields) > 0 {
		return benchRunFlagNames.errors(err)
	} else if err != nil {
		return fmt.Errorf("--addr %s: %w", f.addr, err)
	}
	if warning != "" {
		fmt.Fprintf(progress, "warning: %s\n", fielderr.Expand(warning, benchRunFlagNames.flag))
	}
	f.modes, f.nodes, f.slice, f.mpl, f.policy = string(cs.Mode), o.Nodes, o.Slice, o.MPL, string(o.Policy)
	return nil
}

func benchRun(ctx context.Context, out, progress io.Writer, f *benchRunFlags, changed func(string) bool) error {
	var cl *api.Client
	if f.addr != "" {
		var err error
		dir, _ := localcluster.StateDir("")
		if cl, err = clientForAddr(f.addr, dir); err != nil {
			return err
		}
	}
	c, err := f.validate(ctx, progress, cl, changed)
	if err != nil {
		return err
	}
	jobs, err := experiment.Workload(c.machine, c.opts.Point)
	if err != nil {
		return err
	}
	dir := f.out
	if dir == "" {
		dir = "cosched-bench-" + time.Now().Format("20060102-150405")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	where, cluster := fmt.Sprintf("a local cluster of %d agents per mode", f.nodes), "local"
	if cl != nil {
		where, cluster = "the cluster at "+f.addr, f.addr
	}
	fmt.Fprintf(progress, "%d %s jobs on %d processors (%s), load %g, last arrival at %v; modes %s; ranks' work: %s; results in %s\n",
		len(jobs), f.workload, f.nodes, where, f.load, jobs[len(jobs)-1].Submit.Round(time.Second), f.modes, c.opts.Work, dir)
	run := c.opts.Record(jobs, cluster)
	if c.profile != nil {
		run.Profile = &experiment.ProfileRef{Path: f.profile, Profile: c.profile}
	}
	o := c.opts
	o.Cluster, o.Dir, o.Progress = cl, dir, progress
	runErr := measure.RunModes(ctx, o, jobs, &run)
	if err := experiment.WriteAll(out, dir, &run, f.wide); err != nil {
		return err
	}
	return runErr
}
