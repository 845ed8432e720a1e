package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench/profile"
	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/progress"
	"github.com/cosched/cosched/jss/sweep"
)

// sweepTableMax is the most rows printed as a table after a sweep or merge.
const sweepTableMax = 60

type sweepFlags struct {
	modes       string
	mpls        string
	slices      string
	loads       string
	workloads   string
	memMeans    string
	jobs        int
	seeds       string
	out         string
	shard       string
	policy      string
	parallel    int
	procs       int
	memPerProc  string
	meanRuntime time.Duration
	check       bool
	fitTrace    string
	msgSize     string
	bandwidth   string
	latency     time.Duration
	jobSwitch   time.Duration
	procSwitch  time.Duration
	pfcfs       pfcfsFlags
	profile     string
	// warnings are validate's: former mode names read, printed before running.
	warnings []string
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
	fl := cmd.Flags()
	fl.StringVar(&f.modes, "mode", "space,gang,bcs", "sharing modes: space (space sharing with backfilling), gang (backfilling gang scheduling), bcs (buffered coscheduling)")
	fl.StringVar(&f.mpls, "mpl", "3", "multiprogramming levels (gang, bcs)")
	fl.StringVar(&f.slices, "slice", "50ms", "time slices (gang, bcs), as Go durations")
	fl.StringVar(&f.loads, "load", "0.8", "offered loads: a list (0.2,0.8) and/or inclusive ranges lo:hi:step (0.1:1.6:0.1)")
	fl.StringVar(&f.workloads, "workload", "w3", "benchmark workloads: "+sweep.WorkloadNames())
	fl.StringVar(&f.memMeans, "mem-mean", "0", "mean memory per process (e.g. 0,128MB,256MB); 0 for no memory constraint")
	fl.IntVar(&f.jobs, "jobs", 1000, "jobs per point")
	fl.StringVar(&f.seeds, "seed", "1", "random seeds (a list runs each point once per seed)")
	fl.StringVar(&f.out, "out", "", "directory for the results (created if needed); without it the table is printed and no file written")
	fl.StringVar(&f.shard, "shard", "", "run only shard k of n (k/n, 1 ≤ k ≤ n): the points whose index % n == k-1")
	fl.StringVar(&f.policy, "policy", string(gang.EASY), "queue policy: "+gang.PolicyNames()+", or pfcfs (with --mode space only)")
	fl.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "points simulated at once")
	fl.IntVar(&f.procs, "procs", 32, "machine size in processors")
	fl.StringVar(&f.memPerProc, "mem-per-proc", "512MiB", "memory of one processor; no process needs more")
	fl.DurationVar(&f.meanRuntime, "mean-runtime", 30*time.Second, "mean job runtime at load 1 (0 keeps the workload model's time scale)")
	fl.BoolVar(&f.check, "check", false, "verify every scheduling decision against an independent record of the machine (slower)")
	def := sweep.DefaultMachine()
	fl.StringVar(&f.fitTrace, "fit-trace", "", "fit the workload model to this SWF trace instead of the built-in KTH-SP2 parameters")
	fl.StringVar(&f.msgSize, "msg-size", "4KiB", "size of one benchmark message")
	fl.StringVar(&f.bandwidth, "bandwidth", "100MB", "network bandwidth per node, per second")
	fl.DurationVar(&f.latency, "latency", def.Network.Latency, "network latency per message and per barrier level")
	fl.DurationVar(&f.jobSwitch, "job-switch", def.JobSwitch, "cost of switching a job in (gang)")
	fl.DurationVar(&f.procSwitch, "process-switch", def.ProcessSwitch, "cost of a process context switch (bcs)")
	fl.StringVar(&f.profile, "profile", "", "machine profile from cosched bench calibrate: its switch costs, relay network and overheads replace --job-switch, --process-switch and the defaults (--latency and --bandwidth still set iterations and h_max)")
	addPFCFSFlags(fl, &f.pfcfs)
}

var sweepFlagNames = flagNames{"Modes": "--mode", "MPLs": "--mpl", "Slices": "--slice", "Loads": "--load", "Workloads": "--workload",
	"MemMeans": "--mem-mean", "Jobs": "--jobs", "Seeds": "--seed", "Policy": "--policy", "Shard": "--shard", "Out": "--out",
	"Parallel": "--parallel", "Procs": "--procs", "MemPerProc": "--mem-per-proc", "MeanRuntime": "--mean-runtime",
	"MsgSize": "--msg-size", "Bandwidth": "--bandwidth", "Latency": "--latency", "JobSwitch": "--job-switch", "ProcessSwitch": "--process-switch"}

// validate checks every flag (sweep.Text.Parse, and the --pfcfs-* flags),
// reports all problems at once, and returns the sweep, the shard and the
// machine.
func (f *sweepFlags) validate() (sweep.Spec, sweep.Shard, sweep.Machine, error) {
	t := sweep.Text{Modes: f.modes, MPLs: f.mpls, Slices: f.slices, Loads: f.loads, Workloads: f.workloads, MemMeans: f.memMeans,
		Seeds: f.seeds, Jobs: f.jobs, Policy: f.policy, Shard: f.shard, Out: f.out, Parallel: f.parallel, Procs: f.procs,
		MemPerProc: f.memPerProc, MeanRuntime: f.meanRuntime, Check: f.check, MsgSize: f.msgSize, Bandwidth: f.bandwidth,
		Latency: f.latency, JobSwitch: f.jobSwitch, ProcessSwitch: f.procSwitch, PFCFS: f.pfcfs.config()}
	spec, shard, m, warnings, err := t.Parse()
	f.warnings = nil
	for _, w := range warnings {
		f.warnings = append(f.warnings, w.Render(sweepFlagNames.flag))
	}
	errs := sweepFlagNames.list(err)
	if errs = append(errs, f.pfcfs.validate(isPFCFS(f.policy))...); len(errs) > 0 {
		return spec, shard, m, flagErrors(errs)
	}
	if err != nil {
		return spec, shard, m, usageError{err}
	}
	m, err = f.applyProfile(m, spec)
	return spec, shard, m, err
}

// applyProfile applies --profile's machine profile to m.
func (f *sweepFlags) applyProfile(m sweep.Machine, spec sweep.Spec) (sweep.Machine, error) {
	if f.profile == "" {
		return m, nil
	}
	p, err := profile.Load(f.profile)
	if err != nil {
		return m, usageError{fmt.Errorf("--profile: %w", err)}
	}
	m = p.Apply(m)
	if err := m.FitsSlices(spec); err != nil { // the checks above used the flags' switch costs
		return m, usageError{fmt.Errorf("--profile %s: %w", f.profile, err)}
	}
	return m, nil
}

func runSweep(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, f *sweepFlags) error {
	spec, shard, m, err := f.validate()
	printWarnings(stderr, f.warnings)
	if err != nil {
		return err
	}
	if f.fitTrace != "" {
		if m.Model, err = fitModelToTrace(ctx, "--fit-trace", f.fitTrace, 0, stdin); err != nil {
			return err
		}
	}
	// Fail on an unusable --out before spending the sweep's time.
	if f.out != "" {
		if err := checkOutDir(f.out); err != nil {
			return err
		}
	}
	total := len(sweep.Expand(spec))
	n := len(shard.Indices(total))
	if shard.Whole() {
		fmt.Fprintf(stderr, "sweep: %d points, %d at a time\n", total, f.parallel)
	} else {
		fmt.Fprintf(stderr, "sweep: shard %v: %d of %d points, %d at a time\n", shard, n, total, f.parallel)
	}
	pr := progress.New(stderr, "sweep", "points", n)
	res, err := sweep.Execute(ctx, m, spec, shard, f.parallel, pr.Update)
	pr.Finish(err == nil)
	if err != nil {
		return err
	}
	return writeSweepResults(stdout, res, f.out)
}

// checkOutDir creates dir if needed and checks that files can be created in it.
func checkOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	probe, err := os.CreateTemp(dir, ".cosched-probe*")
	if err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// writeSweepResults writes the files, lists them on stdout and, for a small
// sweep, prints the table.
func writeSweepResults(stdout io.Writer, res *sweep.Results, dir string) error {
	if dir == "" {
		return sweep.WriteTable(stdout, res.Rows) // nothing to write: the table is the result
	}
	paths, err := res.WriteFiles(dir)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	if len(res.Rows) > 0 && len(res.Rows) <= sweepTableMax {
		fmt.Fprintln(stdout)
		return sweep.WriteTable(stdout, res.Rows)
	}
	return nil
}
