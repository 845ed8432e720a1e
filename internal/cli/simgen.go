package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/jss/swf"
	"github.com/cosched/cosched/jss/workload"
)

func newSimGenCmd() *cobra.Command {
	var s workload.Settings
	var fitTrace, out string
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate a synthetic workload (Jann et al. 1997) as an SWF file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimGen(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), s, fitTrace, out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&s.Workload, "workload", "w3", "benchmark templates the jobs draw from: "+bench.WorkloadNames()+", or "+workload.NoTemplates)
	fl.IntVar(&s.Jobs, "jobs", 1000, fmt.Sprintf("number of jobs (at most %d)", workload.MaxJobs))
	fl.Float64Var(&s.Load, "load", 1.0, "offered load: Σ size × runtime over processors × time (above 1 needs time sharing)")
	fl.Uint64Var(&s.Seed, "seed", 1, "random seed")
	fl.IntVar(&s.Processors, "procs", 32, "machine size in processors; larger jobs are not generated")
	fl.StringVar(&fitTrace, "fit-trace", "", "fit the model to this SWF trace (plain or gzip; - for standard input) instead of the built-in KTH-SP2 parameters")
	fl.DurationVar(&s.MeanRuntime, "mean-runtime", 30*time.Second, "mean runtime at load 1; 0 keeps the model's own time scale")
	fl.StringVar(&s.MemMean, "mem-mean", "0", "mean memory per process (e.g. 256MB, 1GiB); 0 for no memory requirement")
	fl.StringVar(&s.MemPerProc, "mem-per-proc", "512MiB", "memory of one processor (column): no process needs more; must be at least --mem-mean")
	fl.StringVar(&out, "out", "", "write the SWF here instead of standard output (- is standard output)")
	return cmd
}

var simGenFlagNames = FlagNames{"Processors": "--procs", "Jobs": "--jobs", "Load": "--load", "MeanRuntime": "--mean-runtime",
	"Workload": "--workload", "MemoryMean": "--mem-mean", "MemoryMax": "--mem-per-proc"}

func runSimGen(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, s workload.Settings, fitTrace, out string) error {
	c, err := s.Parse()
	if err != nil {
		return simGenFlagNames.Errors(err)
	}
	if fitTrace != "" {
		if c.Model, err = fitModelToTrace(ctx, "--fit-trace", fitTrace, 0, stdin); err != nil {
			return err
		}
	}
	if out == "" || out == "-" {
		_, err := workload.Generate(ctx, stdout, c)
		return err
	}
	n, err := workload.GenerateFile(ctx, out, c)
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("--out: %w", err) // an interrupted run is not the file's fault
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %d jobs to %s (load %g on %d processors, seed %d)\n", n, out, c.Load, c.Processors, c.Seed)
	return nil
}

// fitModelToTrace fits the workload model to the SWF trace at path (- for
// standard input), named by flag if it cannot be opened; procs overrides
// the trace's machine size when positive.
func fitModelToTrace(ctx context.Context, flag, path string, procs int, stdin io.Reader) (workload.Model, error) {
	m, err := workload.FitInput(ctx, path, stdin, procs)
	return m, inputFlagError(flag, err)
}

// openSWF opens the SWF file at path (- for standard input), named by flag
// if it cannot be opened; reads stop when ctx is cancelled.
func openSWF(ctx context.Context, flag, path string, stdin io.Reader) (*swf.Reader, io.Closer, error) {
	rd, closer, err := swf.OpenInput(ctx, path, stdin)
	return rd, closer, inputFlagError(flag, err)
}

// inputFlagError names flag in an error opening the file it gives (a
// missing file, a directory); an error in the file's content names its
// file and line itself.
func inputFlagError(flag string, err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && (pe.Op == "open" || pe.Op == "stat") {
		return fmt.Errorf("%s: %w", flag, pe)
	}
	return err
}

func newSimFitCmd() *cobra.Command {
	var s workload.FitSettings
	cmd := &cobra.Command{
		Use:   "fit",
		Short: "Fit the synthetic-workload model (Jann et al. 1997) to an SWF trace",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := s.Validate(); err != nil {
				return FlagNames{"Trace": "--trace", "Processors": "--procs", "Format": "--format"}.Errors(err)
			}
			m, err := fitModelToTrace(cmd.Context(), "--trace", s.Trace, s.Processors, cmd.InOrStdin())
			if err != nil {
				return err
			}
			return m.Write(cmd.OutOrStdout(), s.Format)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&s.Trace, "trace", "", "SWF trace to fit, plain or gzip-compressed; - reads standard input (required)")
	fl.IntVar(&s.Processors, "procs", 0, "the trace's machine size (default: its header's MaxProcs, else MaxNodes)")
	fl.StringVar(&s.Format, "format", "json", "output format: json or table")
	return cmd
}
