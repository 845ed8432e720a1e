package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cosched/cosched/bench/experiment"
	"github.com/cosched/cosched/bench/measure"
	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/localcluster"
)

var benchRunFlagNames = cli.FlagNames{"Modes": "--mode", "Nodes": "--nodes", "Slice": "--slice", "MPL": "--mpl", "Policy": "--policy",
	"Bandwidth": "--bandwidth", "Work": "--work", "StallTimeout": "--stall-timeout", "RealtimePriority": "--realtime-priority",
	"Point.Workload": "--workload", "Point.Jobs": "--jobs", "Point.Load": "--load", "Machine.MeanRuntime": "--mean-runtime", "Addr": "--addr",
	"Programs": "--mpi-programs"}

func newBenchRunCmd() *cobra.Command {
	o := measure.DefaultRunOptions()
	var arms []measure.Arm
	modes := textvalue.NewFlag(&arms, "Modes", "bcs,gang,space", measure.ParseArms)
	bandwidth := textvalue.NewFlag(&o.Bandwidth, "Bandwidth", "100MB", textvalue.Bandwidth)
	var addr, profilePath, mpiPrograms string
	var wide bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a benchmark workload on a local cluster under each mode and compare",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			if fl.Changed("modes") {
				cli.PrintWarnings(cmd.ErrOrStderr(), []string{"--modes is the former name of --mode; write --mode (--modes will stop working)"})
			}
			o.Progress = cmd.ErrOrStderr()
			o.Modes = measure.ModesOf(arms)
			for _, a := range arms {
				if a.Own() { // a mode at a slice or MPL of its own
					o.Arms = arms
				}
			}
			if mpiPrograms != "" {
				if err := mpiProgramsFlags(fl); err != nil {
					return err
				}
				p, err := measure.LoadMPIPrograms(mpiPrograms)
				if err != nil {
					return err
				}
				o.Programs = p
			}
			if addr != "" && (o.Arms != nil || o.Programs != nil) {
				return errors.New("--addr: a mode at its own slice or MPL (--mode MODE:SLICE) and --mpi-programs need local clusters: leave out --addr")
			}
			if addr != "" {
				if err := benchRunOn(cmd.Context(), addr, &o, fl); err != nil {
					return err
				}
			}
			if err := errors.Join(modes.Err, bandwidth.Err, o.Validate()); err != nil {
				return benchRunFlagNames.Errors(err)
			}
			if profilePath != "" {
				p, err := profile.Load(profilePath)
				if err != nil {
					return fmt.Errorf("--profile: %w", err)
				}
				o.Profile = &experiment.ProfileRef{Path: profilePath, Profile: p}
			}
			if o.Dir != "" { // an unusable one fails now, not after the run
				if err := atomicfile.CheckDir(o.Dir); err != nil {
					return fmt.Errorf("--out: %w", err)
				}
			}
			return measure.Run(cmd.Context(), cmd.OutOrStdout(), o, wide)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Point.Workload, "workload", o.Point.Workload, "named workload (template mix): w0 … w4")
	fl.IntVar(&o.Point.Jobs, "jobs", o.Point.Jobs, "jobs in the workload")
	fl.Float64Var(&o.Point.Load, "load", o.Point.Load, "offered load")
	fl.Var(modes, "mode", "comma-separated modes to run: space, gang, bcs; MODE:SLICE[:MPL] runs a mode at a slice (and MPL) of its own, e.g. bcs:2ms,bcs:50ms,gang:10ms,space")
	fl.Var(modes, "modes", "former name of --mode")
	_ = fl.MarkHidden("modes") // still read, with a warning
	fl.IntVar(&o.Nodes, "nodes", o.Nodes, "agents (nodes of one processor)")
	fl.DurationVar(&o.Slice, "slice", o.Slice, "time slice (gang, bcs)")
	fl.IntVar(&o.MPL, "mpl", o.MPL, "multiprogramming level (gang, bcs)")
	fl.StringVar((*string)(&o.Policy), "policy", string(o.Policy), "queue policy: "+gang.PolicyNames())
	fl.DurationVar(&o.Machine.MeanRuntime, "mean-runtime", o.Machine.MeanRuntime, "mean dedicated runtime at load 1 (the run's time scale)")
	fl.StringVar(&o.Work, "work", "", "ranks' work: cpu or wall (default: wall when --nodes exceeds the cores, else cpu)")
	fl.Uint64Var(&o.Point.Seed, "seed", o.Point.Seed, "workload seed")
	fl.Var(bandwidth, "bandwidth", "bcs: bandwidth per node per second (h_max = bandwidth × slice)")
	fl.StringVar(&o.Dir, "out", "", "output directory (default: cosched-bench-DATE-TIME)")
	fl.IntVar(&o.RealtimePriority, "realtime-priority", o.RealtimePriority, "agents' SCHED_FIFO priority for the strobe path (0: off)")
	fl.StringVar(&addr, "addr", "", "run on the existing cluster whose controller API is at HOST:PORT (its mode, processors, slice and MPL) instead of starting local ones")
	fl.StringVar(&profilePath, "profile", "", "simulate with this machine profile (from cosched bench calibrate) instead of the default machine costs")
	fl.StringVar(&mpiPrograms, "mpi-programs", "", "run these MPI programs (a TOML file: path, args, ranks, weight; docs/mpi.md) with --mpi cosched instead of benchmark jobs, each calibrated alone first for the simulator's model")
	fl.StringVar(&o.MPILib, "mpi-lib", "", "directory of cosched's MPI library for --mpi-programs (default: lib/cosched beside cosched's bin directory, where make build puts it)")
	fl.BoolVar(&wide, "wide", false, "print a column per measured and simulated value, with slowdown, makespan and slot reuses (the default table pairs them)")
	fl.DurationVar(&o.StallTimeout, "stall-timeout", 0, "fail a mode when no job ends for this long while jobs are running (default: max(2m, 4 × MPL × the longest time limit))")
	return cmd
}

// benchRunOn makes o a run on the cluster at addr, taking its mode,
// processors, slice and MPL (measure.RunOptions.OnCluster): a flag of fl
// given with another value is an error naming it.
func benchRunOn(ctx context.Context, addr string, o *measure.RunOptions, fl *pflag.FlagSet) error {
	dir, _ := localcluster.FindStateDir("")
	cl, err := cli.ClientForAddr(addr, dir)
	if err != nil {
		return err
	}
	o.Cluster, o.ClusterAddr = cl, addr
	// A field is given when its flag is (--modes is the former name of --mode).
	given := func(field string) bool {
		name := strings.TrimPrefix(benchRunFlagNames[field], "--")
		return fl.Changed(name) || name == "mode" && fl.Changed("modes")
	}
	warning, err := o.OnCluster(ctx, given)
	if err != nil && len(fielderr.All(err)) == 0 {
		err = fmt.Errorf("--addr %s: %w", addr, err)
	}
	if warning != "" {
		fmt.Fprintf(o.Progress, "warning: %s\n", fielderr.Expand(warning, benchRunFlagNames.Flag))
	}
	return benchRunFlagNames.Errors(err)
}

// mpiProgramsFlags refuses, with --mpi-programs, the flags that shape a
// generated benchmark workload: the file is the workload.
func mpiProgramsFlags(fl *pflag.FlagSet) error {
	var errs []error
	for _, name := range []string{"workload", "jobs", "load", "mean-runtime", "work"} {
		if fl.Changed(name) {
			errs = append(errs, fmt.Errorf("--%s: not with --mpi-programs (the file is the workload: its programs, ranks and weights)", name))
		}
	}
	return errors.Join(errs...)
}
