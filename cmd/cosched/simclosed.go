package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/jss/closed"
	"github.com/cosched/cosched/jss/sweep"
)

type simClosedFlags struct {
	procs        int
	jobs         string
	policies     string
	dist         string
	cv           float64
	cvGiven      bool
	serviceMean  float64
	ioMean       float64
	replications int
	completions  int
	warmup       int
	seed         uint64
	format       string
	parallel     int
}

func newSimClosedCmd() *cobra.Command {
	var f simClosedFlags
	cmd := &cobra.Command{
		Use:   "closed",
		Short: "Simulate gang policies (fcfs, afcfs, ljfs) in Karatza's closed network of processors and an I/O unit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.cvGiven = cmd.Flags().Changed("cv")
			return runSimClosed(cmd.Context(), cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.procs, "procs", 8, "processors P")
	fl.StringVar(&f.jobs, "jobs", "2,4,6,8,10", "numbers of circulating jobs N, comma-separated")
	fl.StringVar(&f.policies, "policy", "fcfs,afcfs,ljfs", "comma-separated policies: "+closed.PolicyNames())
	fl.StringVar(&f.dist, "dist", "", "service-time distribution: "+closed.DistNames()+" (default: chosen by --cv)")
	fl.Float64Var(&f.cv, "cv", 1, "coefficient of variation C of the service time: 0.707 (erlang2), 1 (exp) or above 1 (branching-erlang)")
	fl.Float64Var(&f.serviceMean, "service-mean", 1, "mean service time m")
	fl.Float64Var(&f.ioMean, "io-mean", 0.563, "mean I/O service time k (0.563 ≈ m·E[size]/P for P = 8: processors and I/O equally loaded)")
	fl.IntVar(&f.replications, "replications", 10, "independent replications per point (at least 2, for the confidence intervals)")
	fl.IntVar(&f.completions, "completions", 20000, "processor completions measured per replication")
	fl.IntVar(&f.warmup, "warmup", 2000, "processor completions discarded per replication before measuring")
	fl.Uint64Var(&f.seed, "seed", 1, "base random seed; replication r's seed is derived from it")
	fl.StringVar(&f.format, "format", "table", "output format: "+strings.Join(closed.Formats(), ", "))
	fl.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "replications simulated at once")
	return cmd
}

// simClosedFlagNames maps closed.Experiment's fields to sim closed's flags.
var simClosedFlagNames = flagNames{"Procs": "--procs", "Jobs": "--jobs", "Policies": "--policy", "Service.Dist": "--dist",
	"Service.Mean": "--service-mean", "Service.CV": "--cv", "IOMean": "--io-mean", "Warmup": "--warmup",
	"Completions": "--completions", "Replications": "--replications"}

// validate parses the lists and the service distribution, then checks the
// experiment (closed.Experiment.Validate), every problem named by its flag.
func (f *simClosedFlags) validate() (*closed.Experiment, error) {
	e := &closed.Experiment{
		Procs: f.procs, IOMean: f.ioMean,
		Warmup: f.warmup, Completions: f.completions, Replications: f.replications, Seed: f.seed,
	}
	var unparsed []string // fields whose flag did not parse
	jobs, errs := textvalue.List("--jobs", f.jobs, func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > closed.MaxJobs {
			return 0, fmt.Errorf("want a whole number of jobs in 1..%d", closed.MaxJobs)
		}
		return n, nil
	})
	if e.Jobs = jobs; len(errs) > 0 {
		unparsed = append(unparsed, "Jobs")
	}
	policies, ee := textvalue.List("--policy", f.policies, func(s string) (closed.Policy, error) {
		p, err := closed.ParsePolicy(s)
		if err != nil {
			return "", fmt.Errorf("unknown policy (valid: %s)", closed.PolicyNames())
		}
		return p, nil
	})
	if e.Policies = policies; len(ee) > 0 {
		unparsed = append(unparsed, "Policies")
	}
	errs = append(errs, ee...)
	svc, err := closed.ServiceFor(f.dist, f.cv, f.cvGiven, f.serviceMean)
	if err != nil {
		errs = append(errs, simClosedFlagNames.list(err)...)
		unparsed = append(unparsed, "Service.Dist", "Service.CV")
	}
	e.Service = svc
	if !slices.Contains(closed.Formats(), f.format) {
		errs = append(errs, fmt.Errorf("--format %q: want one of %s", f.format, strings.Join(closed.Formats(), ", ")))
	}
	if err := checkInt("--parallel", int64(f.parallel), 1, sweep.MaxParallel); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, simClosedFlagNames.list(e.Validate(), unparsed...)...)
	if len(errs) > 0 {
		return nil, flagErrors(errs)
	}
	return e, nil
}

func runSimClosed(ctx context.Context, stdout io.Writer, f *simClosedFlags) error {
	e, err := f.validate()
	if err != nil {
		return err
	}
	rows, err := e.Run(ctx, f.parallel)
	if err != nil {
		return fmt.Errorf("sim closed: %w", err)
	}
	return closed.Write(stdout, f.format, e, rows)
}
