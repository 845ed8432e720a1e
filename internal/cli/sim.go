package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/ctxio"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/report"
	"github.com/cosched/cosched/jss/sample"
	"github.com/cosched/cosched/jss/sweep"
)

// simFlags are the flags of `cosched sim`, bound to the comparison they
// set where the types allow.
type simFlags struct {
	jss.Comparison
	trace    string
	policies string
	format   string
	pfcfs    pfcfsFlags
	backfill BackfillFlags
	hosts    hostsFlags
	changed  func(name string) bool // whether a flag was given
}

func newSimCmd(simPlot, simClosed *cobra.Command) *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate scheduling policies on a workload trace and report the standard metrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			return runSim(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), &f)
		},
	}
	fl, o := cmd.Flags(), &f.Trace
	fl.StringVar(&f.trace, "trace", "", "SWF trace to simulate, plain or gzip-compressed; - reads standard input (default: the embedded KTH-SP2 sample)")
	fl.StringVar(&f.policies, "policy", "fcfs,easy,easy-sjbf,conservative", "comma-separated policies to compare: "+jss.PolicyNames())
	fl.IntVar(&o.Processors, "procs", 0, "machine size in processors (default: the trace header's MaxProcs, else MaxNodes)")
	fl.StringVar(&f.format, "format", "table", "output format: "+strings.Join(report.Formats(), ", "))
	fl.StringVar(&f.SWFPath, "out-swf", "", "write the simulated schedule as an SWF file (field 3 = simulated wait); with several policies the policy name is inserted before the extension")
	fl.StringVar(&f.JobsCSVPath, "jobs-csv", "", "write one CSV row per job: id, submit, start, end, processors, runtime, estimate (seconds); named per policy like --out-swf")
	fl.StringVar((*string)(&o.Conventions.Overrun), "overrun", string(jss.OverrunExtend), "a job running past its estimate: extend (raise the estimate to the runtime) or kill (cut the runtime at the estimate)")
	fl.StringVar((*string)(&o.Conventions.Processors), "procs-from", string(jss.ProcsRequested), "job size: requested (field 8, else field 5) or allocated (field 5, else field 8)")
	fl.StringVar((*string)(&o.Conventions.Estimate), "estimate", string(jss.EstimateRequested), "runtime estimate: requested (field 9, else the runtime), exact or actual (the runtime), actual+K% (the runtime plus K percent), or abort (the runtime, but the request for failed or cancelled jobs)")
	fl.DurationVar(&o.Tau, "tau", metrics.DefaultTau, "bounded-slowdown threshold τ")
	fl.BoolVar(&o.Lenient, "lenient", false, "skip and count malformed lines and out-of-order jobs instead of failing")
	fl.BoolVar(&o.Check, "check", true, "verify every decision against an independent record of the machine (no processor used twice, none over capacity)")
	fl.IntVar(&f.Parallel, "parallel", runtime.GOMAXPROCS(0), "policies simulated at once")
	addPFCFSFlags(fl, &f.pfcfs)
	f.backfill.Add(fl, "")
	f.hosts.add(fl)
	fl.BoolVar(&o.ByRuntimeBin, "by-runtime-bin", false, "also report every metric by runtime bin: [0,1m), [1m,10m), [10m,100m), [100m,1000m), [1000m,∞) (dedicated runtime)")
	cmd.AddCommand(newSimGenCmd(), newSimFitCmd(), newSweepCmd(), newMergeCmd(), simPlot, newSimNowCmd(), simClosed)
	return cmd
}

var conventionFlags = FlagNames{"Processors": "--procs-from", "Estimate": "--estimate", "Overrun": "--overrun"}

// validate checks every flag and reports all problems at once, setting
// what the flags' text resolves to.
func (f *simFlags) validate() error {
	var errs []error
	var err error
	if f.Policies, err = jss.ParsePolicies(f.policies); err != nil {
		errs = append(errs, fmt.Errorf("--policy: %w", err))
	}
	o := &f.Trace
	if e, err := jss.ParseEstimate(string(o.Conventions.Estimate)); err == nil {
		o.Conventions.Estimate = e // case and blanks do not matter
	}
	errs = append(errs, conventionFlags.List(o.Conventions.Validate())...)
	if !slices.Contains(report.Formats(), f.format) {
		errs = append(errs, fmt.Errorf("--format %q: want one of %s", f.format, strings.Join(report.Formats(), ", ")))
	}
	if o.Processors != 0 || f.changed("procs") { // 0 is "from the trace" only when not given
		errs = append(errs, checkProcs("--procs", o.Processors))
	}
	errs = append(errs, checkDuration("--tau", o.Tau, time.Nanosecond, maxSimDuration), checkInt("--parallel", int64(f.Parallel), 1, sweep.MaxParallel))
	errs = append(errs, f.pfcfs.validate(slices.ContainsFunc(strings.Split(f.policies, ","), isPFCFS))...)
	var bfErrs []error
	o.Backfill, bfErrs = f.backfill.parse(f.Policies, f.changed)
	errs = append(append(errs, bfErrs...), f.hosts.validate(f.Policies, o.Processors, f.changed)...)
	return flagProblems(errs)
}

// FlagErrors reports every problem with the command line, one per line.
func FlagErrors(errs []error) error {
	if len(errs) == 1 {
		return usageError{errs[0]}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems with the command line:", len(errs))
	for _, e := range errs {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return usageError{errors.New(b.String())}
}

// flagProblems is the usage error of the problems found (nil entries are
// checks that passed), nil if there are none.
func flagProblems(errs []error) error {
	if errs = slices.DeleteFunc(errs, func(err error) bool { return err == nil }); len(errs) == 0 {
		return nil
	}
	return FlagErrors(errs)
}

func runSim(ctx context.Context, stdin io.Reader, stdout io.Writer, f *simFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	f.Trace.Input = sample.KTH()
	if f.trace != "" {
		var err error
		if f.Trace.Input, err = jss.InputFrom(f.trace, ctxio.Interruptible(ctx, stdin)); err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
	}
	f.Engines = jss.Engines{PFCFS: f.pfcfs.config()}
	f.hosts.engines(&f.Engines)
	results, err := jss.Compare(ctx, f.Comparison)
	if err != nil {
		return err
	}
	return report.Write(stdout, f.format, results)
}
