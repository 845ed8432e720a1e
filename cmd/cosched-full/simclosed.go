package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/jss/closed"
	"github.com/cosched/cosched/jss/sweep"
)

// newSimClosedCmd is `sim closed`, in this binary alone: its
// distributions come from gonum (its matrices, BLAS and LAPACK: a fifth of
// the light binary's code, and their package initialisation in every CLI
// call). A closed-network study runs seconds to minutes of replications,
// so executing this binary first costs it nothing a user notices.
func newSimClosedCmd() *cobra.Command {
	var s closed.Settings
	var format string
	var parallel int
	cmd := &cobra.Command{
		Use:   "closed",
		Short: "Simulate gang policies (fcfs, afcfs, ljfs) in Karatza's closed network of processors and an I/O unit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s.CVGiven = cmd.Flags().Changed("cv")
			e, err := s.Parse()
			errs := simClosedFlagNames.List(err)
			if !slices.Contains(closed.Formats(), format) {
				errs = append(errs, fmt.Errorf("--format %q: want one of %s", format, strings.Join(closed.Formats(), ", ")))
			}
			if err := cli.CheckInt("--parallel", int64(parallel), 1, sweep.MaxParallel); err != nil {
				errs = append(errs, err)
			}
			if len(errs) > 0 {
				return cli.FlagErrors(errs)
			}
			rows, err := e.Run(cmd.Context(), parallel)
			if err != nil {
				return fmt.Errorf("sim closed: %w", err)
			}
			return closed.Write(cmd.OutOrStdout(), format, e, rows)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&s.Procs, "procs", 8, "processors P")
	fl.StringVar(&s.JobList, "jobs", "2,4,6,8,10", "numbers of circulating jobs N, comma-separated")
	fl.StringVar(&s.PolicyList, "policy", "fcfs,afcfs,ljfs", "comma-separated policies: "+closed.PolicyNames())
	fl.StringVar(&s.Dist, "dist", "", "service-time distribution: "+closed.DistNames()+" (default: chosen by --cv)")
	fl.Float64Var(&s.CV, "cv", 1, "coefficient of variation C of the service time: 0.707 (erlang2), 1 (exp) or above 1 (branching-erlang)")
	fl.Float64Var(&s.ServiceMean, "service-mean", 1, "mean service time m")
	fl.Float64Var(&s.IOMean, "io-mean", 0.563, "mean I/O service time k (0.563 ≈ m·E[size]/P for P = 8: processors and I/O equally loaded)")
	fl.IntVar(&s.Replications, "replications", 10, "independent replications per point (at least 2, for the confidence intervals)")
	fl.IntVar(&s.Completions, "completions", 20000, "processor completions measured per replication")
	fl.IntVar(&s.Warmup, "warmup", 2000, "processor completions discarded per replication before measuring")
	fl.Uint64Var(&s.Seed, "seed", 1, "base random seed; replication r's seed is derived from it")
	fl.StringVar(&format, "format", "table", "output format: "+strings.Join(closed.Formats(), ", "))
	fl.IntVar(&parallel, "parallel", runtime.GOMAXPROCS(0), "replications simulated at once")
	return cmd
}

// simClosedFlagNames maps closed.Experiment's fields to sim closed's flags.
var simClosedFlagNames = cli.FlagNames{"Procs": "--procs", "Jobs": "--jobs", "Policies": "--policy", "Service.Dist": "--dist",
	"Service.Mean": "--service-mean", "Service.CV": "--cv", "IOMean": "--io-mean", "Warmup": "--warmup",
	"Completions": "--completions", "Replications": "--replications"}
