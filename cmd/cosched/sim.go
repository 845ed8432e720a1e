package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/cosched/cosched/gang"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/ctxio"
	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/metrics"
	"github.com/cosched/cosched/jss/report"
	"github.com/cosched/cosched/jss/sample"
	"github.com/cosched/cosched/jss/sweep"
	"github.com/cosched/cosched/jss/swf"
)

type simFlags struct {
	trace     string
	policies  string
	procs     int
	format    string
	outSWF    string
	jobsCSV   string
	overrun   string
	procsFrom string
	estimate  string
	tau       time.Duration
	lenient   bool
	check     bool
	parallel  int
	pfcfs     pfcfsFlags
	backfill  backfillFlags
	hosts     hostsFlags
	bf        gang.Backfill // parsed from backfill
	byBin     bool
	changed   func(name string) bool // whether a flag was given
}

func newSimCmd() *cobra.Command {
	var f simFlags
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate scheduling policies on a workload trace and report the standard metrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = func(name string) bool { return cmd.Flags().Changed(name) }
			return runSim(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "SWF trace to simulate, plain or gzip-compressed; - reads standard input (default: the embedded KTH-SP2 sample)")
	fl.StringVar(&f.policies, "policy", "fcfs,easy,easy-sjbf,conservative", "comma-separated policies to compare: "+jss.PolicyNames())
	fl.IntVar(&f.procs, "procs", 0, "machine size in processors (default: the trace header's MaxProcs, else MaxNodes)")
	fl.StringVar(&f.format, "format", "table", "output format: "+strings.Join(report.Formats(), ", "))
	fl.StringVar(&f.outSWF, "out-swf", "", "write the simulated schedule as an SWF file (field 3 = simulated wait); with several policies the policy name is inserted before the extension")
	fl.StringVar(&f.jobsCSV, "jobs-csv", "", "write one CSV row per job: id, submit, start, end, processors, runtime, estimate (seconds); named per policy like --out-swf")
	fl.StringVar(&f.overrun, "overrun", string(jss.OverrunExtend), "a job running past its estimate: extend (raise the estimate to the runtime) or kill (cut the runtime at the estimate)")
	fl.StringVar(&f.procsFrom, "procs-from", string(jss.ProcsRequested), "job size: requested (field 8, else field 5) or allocated (field 5, else field 8)")
	fl.StringVar(&f.estimate, "estimate", string(jss.EstimateRequested), "runtime estimate: requested (field 9, else the runtime), exact or actual (the runtime), actual+K% (the runtime plus K percent), or abort (the runtime, but the request for failed or cancelled jobs)")
	fl.DurationVar(&f.tau, "tau", metrics.DefaultTau, "bounded-slowdown threshold τ")
	fl.BoolVar(&f.lenient, "lenient", false, "skip and count malformed lines and out-of-order jobs instead of failing")
	fl.BoolVar(&f.check, "check", true, "verify every decision against an independent record of the machine (no processor used twice, none over capacity)")
	fl.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "policies simulated at once")
	addPFCFSFlags(fl, &f.pfcfs)
	f.backfill.add(fl, "")
	f.hosts.add(fl)
	fl.BoolVar(&f.byBin, "by-runtime-bin", false, "also report every metric by runtime bin: [0,1m), [1m,10m), [10m,100m), [100m,1000m), [1000m,∞) (dedicated runtime)")
	cmd.AddCommand(newSimGenCmd(), newSimFitCmd(), newSweepCmd(), newMergeCmd(), newPlotCmd(), newSimNowCmd(), newSimClosedCmd())
	return cmd
}

// parsePolicies resolves a comma-separated list, keeping order, dropping
// repeats.
func parsePolicies(list string) ([]gang.Policy, error) {
	var out []gang.Policy
	seen := map[gang.Policy]bool{}
	for _, name := range strings.Split(list, ",") {
		if strings.TrimSpace(name) == "" {
			continue
		}
		p, err := gang.ParsePolicy(name)
		if err != nil && isPFCFS(name) {
			p, err = jss.PolicyPFCFS, nil
		}
		if err != nil && isEQSpatial(name) {
			p, err = jss.PolicyEQSpatial, nil
		}
		if err != nil {
			return nil, fmt.Errorf("--policy: unknown policy %q (valid: %s)", strings.TrimSpace(name), jss.PolicyNames())
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--policy: no policy given (valid: %s)", jss.PolicyNames())
	}
	return out, nil
}

var conventionFlags = flagNames{"Processors": "--procs-from", "Estimate": "--estimate", "Overrun": "--overrun"}

// validate checks every flag and reports all problems at once.
func (f *simFlags) validate() ([]gang.Policy, jss.Conventions, error) {
	var errs []error
	policies, err := parsePolicies(f.policies)
	if err != nil {
		errs = append(errs, err)
	}
	conv := jss.Conventions{Processors: jss.ProcessorsFrom(f.procsFrom), Estimate: jss.EstimateFrom(f.estimate), Overrun: jss.Overrun(f.overrun)}
	if e, err := jss.ParseEstimate(f.estimate); err == nil {
		conv.Estimate = e // case and blanks do not matter
	}
	errs = append(errs, conventionFlags.list(conv.Validate())...)
	if !slices.Contains(report.Formats(), f.format) {
		errs = append(errs, fmt.Errorf("--format %q: want one of %s", f.format, strings.Join(report.Formats(), ", ")))
	}
	if f.changed == nil {
		f.changed = func(string) bool { return false }
	}
	if f.procs != 0 || f.changed("procs") { // 0 is "from the trace" only when not given
		if err := checkProcs("--procs", f.procs); err != nil {
			errs = append(errs, err)
		}
	}
	if err := checkDuration("--tau", f.tau, time.Nanosecond, maxSimDuration); err != nil {
		errs = append(errs, err)
	}
	if err := checkInt("--parallel", int64(f.parallel), 1, sweep.MaxParallel); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, f.pfcfs.validate(slices.ContainsFunc(strings.Split(f.policies, ","), isPFCFS))...)
	var bfErrs []error
	f.bf, bfErrs = f.backfill.parse(policies, f.changed)
	errs = append(errs, bfErrs...)
	errs = append(errs, f.hosts.validate(policies, f.procs, f.changed)...)
	if len(errs) > 0 {
		return nil, conv, flagErrors(errs)
	}
	return policies, conv, nil
}

// flagErrors reports every problem with the command line, one per line.
func flagErrors(errs []error) error {
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

func runSim(ctx context.Context, stdin io.Reader, stdout io.Writer, f *simFlags) error {
	policies, conv, err := f.validate()
	if err != nil {
		return err
	}
	input, err := simInput(ctx, f.trace, stdin)
	if err != nil {
		return err
	}
	results := make([]jss.TraceResult, len(policies))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.parallel)
	for i, p := range policies {
		g.Go(func() error {
			res, err := simulateOne(gctx, f, input, conv, p, len(policies) > 1)
			if err != nil {
				if len(policies) > 1 {
					return fmt.Errorf("policy %s: %w", p, err)
				}
				return err
			}
			results[i] = res
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	base := jss.TraceOptions{Input: input, Processors: f.procs, Conventions: conv, Lenient: f.lenient, Tau: f.tau, Check: f.check}
	if err := jss.AddFCFSRatios(ctx, base, results); err != nil {
		return err
	}
	return report.Write(stdout, f.format, results)
}

// maxStdinTrace bounds a trace read from standard input, which is held in
// memory; a larger trace is read from its file.
const maxStdinTrace = 1 << 30

// simInput resolves --trace: the embedded sample, standard input (read once
// into memory so several policies can stream it), or a file.
func simInput(ctx context.Context, trace string, stdin io.Reader) (jss.TraceInput, error) {
	switch trace {
	case "":
		return sample.KTH(), nil
	case "-":
		data, err := io.ReadAll(io.LimitReader(ctxio.Interruptible(ctx, stdin), maxStdinTrace+1))
		if err != nil {
			return jss.TraceInput{}, fmt.Errorf("read standard input: %w", err)
		}
		if len(data) > maxStdinTrace {
			return jss.TraceInput{}, fmt.Errorf("--trace -: standard input holds more than %d MiB: pass the file itself with --trace FILE", maxStdinTrace>>20)
		}
		return jss.TraceInput{Name: "<stdin>", Open: func(opts ...swf.Option) (*swf.Reader, io.Closer, error) {
			return swf.OpenReader(bytes.NewReader(data), "<stdin>", opts...)
		}}, nil
	}
	st, err := os.Stat(trace)
	if err != nil {
		return jss.TraceInput{}, fmt.Errorf("--trace: %w", err)
	}
	if st.IsDir() {
		return jss.TraceInput{}, fmt.Errorf("--trace %s: is a directory, not an SWF file", trace)
	}
	return jss.FileInput(trace), nil
}

// simulateOne runs one policy, writing any requested schedule files
// atomically: to a temporary file renamed into place only on success, so a
// failed or interrupted run never leaves a truncated schedule behind.
func simulateOne(ctx context.Context, f *simFlags, input jss.TraceInput, conv jss.Conventions, p gang.Policy, several bool) (jss.TraceResult, error) {
	opt := jss.TraceOptions{
		Input:        input,
		Processors:   f.procs,
		Conventions:  conv,
		Lenient:      f.lenient,
		Tau:          f.tau,
		Check:        f.check,
		Backfill:     f.bf,
		ByRuntimeBin: f.byBin,
	}
	var outs atomicfile.Group
	defer outs.Abort()
	open := func(path string) (io.Writer, error) {
		if several {
			path = withPolicy(path, p)
		}
		return outs.Create(path)
	}
	var err error
	if f.outSWF != "" {
		if opt.SWFOut, err = open(f.outSWF); err != nil {
			return jss.TraceResult{}, fmt.Errorf("--out-swf: %w", err)
		}
	}
	if f.jobsCSV != "" {
		if opt.JobsCSV, err = open(f.jobsCSV); err != nil {
			return jss.TraceResult{}, fmt.Errorf("--jobs-csv: %w", err)
		}
	}
	e := jss.Engines{PFCFS: f.pfcfs.config()}
	f.hosts.engines(&e)
	res, err := jss.SimulatePolicy(ctx, opt, p, e)
	if err != nil {
		return res, err
	}
	return res, outs.Commit()
}

// withPolicy inserts the policy name before a path's extension:
// out.swf → out.easy.swf.
func withPolicy(path string, p gang.Policy) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "." + string(p) + ext
}
