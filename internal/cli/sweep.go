package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/progress"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/sharing"
)

// sweepFlags are sim sweep's flags: the sweep's text (sweep.Text), and
// what the command does around it.
type sweepFlags struct {
	text     sweep.Text
	fitTrace string
	profile  string
	pfcfs    pfcfsFlags
}

func newSweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run space, gang and bcs over a design space of MPLs, slices, loads, workloads and memory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSweep(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f)
		},
	}
	f.addFlags(cmd)
	return cmd
}

// addFlags defines the command's flags on cmd, with f's values as defaults.
func (f *sweepFlags) addFlags(cmd *cobra.Command) {
	fl, t := cmd.Flags(), &f.text
	fl.StringVar(&t.Modes, "mode", "space,gang,bcs", "sharing modes: space (space sharing with backfilling), gang (backfilling gang scheduling), bcs (buffered coscheduling)")
	fl.StringVar(&t.MPLs, "mpl", "3", "multiprogramming levels (gang, bcs)")
	fl.StringVar(&t.Slices, "slice", "50ms", "time slices (gang, bcs), as Go durations")
	fl.StringVar(&t.Loads, "load", "0.8", "offered loads: a list (0.2,0.8) and/or inclusive ranges lo:hi:step (0.1:1.6:0.1)")
	fl.StringVar(&t.Workloads, "workload", "w3", "benchmark workloads: "+sweep.WorkloadNames())
	fl.StringVar(&t.MemMeans, "mem-mean", "0", "mean memory per process (e.g. 0,128MB,256MB); 0 for no memory constraint")
	fl.IntVar(&t.Jobs, "jobs", 1000, "jobs per point")
	fl.StringVar(&t.Seeds, "seed", "1", "random seeds (a list runs each point once per seed)")
	fl.StringVar(&t.Out, "out", "", "directory for the results (created if needed); without it the table is printed and no file written")
	fl.StringVar(&t.Shard, "shard", "", "run only shard k of n (k/n, 1 ≤ k ≤ n): the points whose index % n == k-1")
	fl.StringVar(&t.Policy, "policy", string(gang.EASY), "queue policy: "+gang.PolicyNames()+", or pfcfs (with --mode space only)")
	fl.IntVar(&t.Parallel, "parallel", runtime.GOMAXPROCS(0), "points simulated at once")
	fl.IntVar(&t.Procs, "procs", 32, "machine size in processors")
	fl.StringVar(&t.MemPerProc, "mem-per-proc", "512MiB", "memory of one processor; no process needs more")
	fl.DurationVar(&t.MeanRuntime, "mean-runtime", 30*time.Second, "mean job runtime at load 1 (0 keeps the workload model's time scale)")
	fl.BoolVar(&t.Check, "check", false, "verify every scheduling decision against an independent record of the machine (slower)")
	// The model's defaults, not sweep.DefaultMachine's whole machine: that
	// also decodes the built-in workload model, a cost every command's
	// start would pay for three flag defaults.
	def := jss.DefaultModelConfig(sharing.BCS)
	fl.StringVar(&f.fitTrace, "fit-trace", "", "fit the workload model to this SWF trace instead of the built-in KTH-SP2 parameters")
	fl.StringVar(&t.MsgSize, "msg-size", "4KiB", "size of one benchmark message")
	fl.StringVar(&t.Bandwidth, "bandwidth", "100MB", "network bandwidth per node, per second")
	fl.DurationVar(&t.Latency, "latency", def.Network.Latency, "network latency per message and per barrier level")
	fl.DurationVar(&t.JobSwitch, "job-switch", def.JobSwitch, "cost of switching a job in (gang)")
	fl.DurationVar(&t.ProcessSwitch, "process-switch", def.ProcessSwitch, "cost of a process context switch (bcs)")
	fl.StringVar(&f.profile, "profile", "", "machine profile from cosched bench calibrate: its switch costs, relay network and overheads replace --job-switch, --process-switch and the defaults (--latency and --bandwidth still set iterations and h_max)")
	addPFCFSFlags(fl, &f.pfcfs)
}

var sweepFlagNames = FlagNames{"Modes": "--mode", "MPLs": "--mpl", "Slices": "--slice", "Loads": "--load", "Workloads": "--workload",
	"MemMeans": "--mem-mean", "Jobs": "--jobs", "Seeds": "--seed", "Policy": "--policy", "Shard": "--shard", "Out": "--out",
	"Parallel": "--parallel", "Procs": "--procs", "MemPerProc": "--mem-per-proc", "MeanRuntime": "--mean-runtime",
	"MsgSize": "--msg-size", "Bandwidth": "--bandwidth", "Latency": "--latency", "JobSwitch": "--job-switch", "ProcessSwitch": "--process-switch"}

// setup checks every flag (sweep.Text.Parse, and the --pfcfs-* flags) and
// reports all problems at once, after printing the warnings; it returns
// the sweep, the shard and the machine, --profile applied.
func (f *sweepFlags) setup(stderr io.Writer) (sweep.Spec, sweep.Shard, sweep.Machine, error) {
	f.text.PFCFS = f.pfcfs.config()
	spec, shard, m, warnings, err := f.text.Parse()
	for _, w := range warnings {
		PrintWarnings(stderr, []string{w.Render(sweepFlagNames.Flag)})
	}
	errs := sweepFlagNames.List(err)
	if errs = append(errs, f.pfcfs.validate(isPFCFS(f.text.Policy))...); len(errs) > 0 {
		return spec, shard, m, FlagErrors(errs)
	}
	if err != nil {
		return spec, shard, m, usageError{err}
	}
	if f.profile != "" {
		if m, err = profile.ApplyFile(f.profile, m, spec); err != nil {
			return spec, shard, m, usageError{fmt.Errorf("--profile: %w", err)}
		}
	}
	return spec, shard, m, nil
}

func runSweep(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, f *sweepFlags) error {
	spec, shard, m, err := f.setup(stderr)
	if err != nil {
		return err
	}
	if f.fitTrace != "" {
		if m.Model, err = fitModelToTrace(ctx, "--fit-trace", f.fitTrace, 0, stdin); err != nil {
			return err
		}
	}
	// Fail on an unusable --out before spending the sweep's time.
	if out := f.text.Out; out != "" {
		if err := atomicfile.CheckDir(out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	total := len(sweep.Expand(spec))
	fmt.Fprintf(stderr, "sweep: %s, %d at a time\n", shard.Share(total), f.text.Parallel)
	pr := progress.New(stderr, "sweep", "points", len(shard.Indices(total)))
	res, err := sweep.Execute(ctx, m, spec, shard, f.text.Parallel, pr.Update)
	pr.Finish(err == nil)
	if err != nil {
		return err
	}
	return res.Publish(stdout, f.text.Out)
}
