package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/ctxio"
	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/jss/swf"
	"github.com/cosched/cosched/jss/workload"
)

type simGenFlags struct {
	workload    string
	jobs        int
	load        float64
	seed        uint64
	procs       int
	fitTrace    string
	meanRuntime time.Duration
	memMean     string
	memPerProc  string
	out         string
}

// genNoTemplates is the --workload value for jobs without a benchmark template.
const genNoTemplates = "none"

func newSimGenCmd() *cobra.Command {
	var f simGenFlags
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Generate a synthetic workload (Jann et al. 1997) as an SWF file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimGen(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "w3", "benchmark templates the jobs draw from: "+bench.WorkloadNames()+", or "+genNoTemplates)
	fl.IntVar(&f.jobs, "jobs", 1000, fmt.Sprintf("number of jobs (at most %d)", workload.MaxJobs))
	fl.Float64Var(&f.load, "load", 1.0, "offered load: Σ size × runtime over processors × time (above 1 needs time sharing)")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed")
	fl.IntVar(&f.procs, "procs", 32, "machine size in processors; larger jobs are not generated")
	fl.StringVar(&f.fitTrace, "fit-trace", "", "fit the model to this SWF trace (plain or gzip; - for standard input) instead of the built-in KTH-SP2 parameters")
	fl.DurationVar(&f.meanRuntime, "mean-runtime", 30*time.Second, "mean runtime at load 1; 0 keeps the model's own time scale")
	fl.StringVar(&f.memMean, "mem-mean", "0", "mean memory per process (e.g. 256MB, 1GiB); 0 for no memory requirement")
	fl.StringVar(&f.memPerProc, "mem-per-proc", "512MiB", "memory of one processor (column): no process needs more; must be at least --mem-mean")
	fl.StringVar(&f.out, "out", "", "write the SWF here instead of standard output (- is standard output)")
	return cmd
}

// parseMemoryFlag reads a memory size with units, as humanize.ParseBytes does,
// and checks it fits an int64.
func parseMemoryFlag(flag, s string) (int64, error) {
	n, err := textvalue.Size(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %v", flag, s, err)
	}
	return n, nil
}

// validate checks every flag, reports all problems at once, and returns the
// generator's configuration less its model.
var simGenFlagNames = flagNames{"Processors": "--procs", "Jobs": "--jobs", "Load": "--load", "MeanRuntime": "--mean-runtime"}

func (f *simGenFlags) validate() (workload.Config, error) {
	var errs []error
	c := workload.Config{Model: workload.Builtin(), Processors: f.procs, Jobs: f.jobs, Load: f.load, MeanRuntime: f.meanRuntime, Seed: f.seed}
	if !strings.EqualFold(f.workload, genNoTemplates) {
		w, err := bench.LookupWorkload(f.workload)
		if err != nil {
			errs = append(errs, fmt.Errorf("--workload %q: unknown workload (valid: %s, %s)", f.workload, bench.WorkloadNames(), genNoTemplates))
		}
		c.Templates = w.Templates
	}
	// The memory sizes are checked below, as written.
	errs = append(errs, simGenFlagNames.list(c.Validate(), "MemoryMean", "MemoryMax")...)
	var memErr bool
	var err error
	if c.MemoryMean, err = parseMemoryFlag("--mem-mean", f.memMean); err != nil {
		errs, memErr = append(errs, err), true
	}
	if c.MemoryMax, err = parseMemoryFlag("--mem-per-proc", f.memPerProc); err != nil {
		errs, memErr = append(errs, err), true
	}
	if !memErr && c.MemoryMean > c.MemoryMax {
		errs = append(errs, fmt.Errorf("--mem-mean %s: no room: more than --mem-per-proc %s, a processor's memory", f.memMean, f.memPerProc))
	}
	if len(errs) > 0 {
		return c, flagErrors(errs)
	}
	return c, nil
}

func runSimGen(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, f *simGenFlags) error {
	c, err := f.validate()
	if err != nil {
		return err
	}
	c.Model = workload.Builtin()
	if f.fitTrace != "" {
		if c.Model, err = fitModelToTrace(ctx, "--fit-trace", f.fitTrace, 0, stdin); err != nil {
			return err
		}
	}
	gen, err := workload.NewGenerator(c)
	if err != nil {
		return err
	}
	if f.out == "" || f.out == "-" {
		_, err := workload.WriteSWF(ctxio.Writer(ctx, stdout), gen, c)
		return err
	}
	if err := atomicfile.CheckSpace(f.out, int64(c.Jobs)*genBytesPerJob); err != nil {
		return fmt.Errorf("--out %s: %w", f.out, err)
	}
	o, err := atomicfile.Create(f.out)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer o.Abort() // removes the temporary file when interrupted
	n, err := workload.WriteSWF(ctxio.Writer(ctx, o), gen, c)
	if err != nil {
		return err
	}
	if err := o.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %d jobs to %s (load %g on %d processors, seed %d)\n", n, f.out, c.Load, c.Processors, c.Seed)
	return nil
}

// fitModelToTrace fits the workload model to an SWF file, or standard input for
// "-". procs overrides the trace's machine size when positive.
func fitModelToTrace(ctx context.Context, flag, path string, procs int, stdin io.Reader) (workload.Model, error) {
	rd, closer, err := openSWF(ctx, flag, path, stdin)
	if err != nil {
		return workload.Model{}, err
	}
	defer closer.Close()
	name := filepath.Base(path)
	if path == "-" {
		name = "<stdin>"
	}
	return workload.FitSWF(rd, name, procs)
}

// openSWF opens the SWF file at path (named by flag in errors), or standard
// input for "-"; reads stop when ctx is cancelled.
func openSWF(ctx context.Context, flag, path string, stdin io.Reader) (*swf.Reader, io.Closer, error) {
	if path == "-" {
		return swf.OpenReader(ctxio.Interruptible(ctx, stdin), "<stdin>")
	}
	if st, err := os.Stat(path); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flag, err)
	} else if st.IsDir() {
		return nil, nil, fmt.Errorf("%s %s: is a directory, not an SWF file", flag, path)
	}
	rd, closer, err := swf.OpenContext(ctx, path)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Op == "open" {
		return nil, nil, fmt.Errorf("%s: %w", flag, pe)
	}
	return rd, closer, err
}

type simFitFlags struct {
	trace  string
	procs  int
	format string
}

func newSimFitCmd() *cobra.Command {
	var f simFitFlags
	cmd := &cobra.Command{
		Use:   "fit",
		Short: "Fit the synthetic-workload model (Jann et al. 1997) to an SWF trace",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimFit(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.trace, "trace", "", "SWF trace to fit, plain or gzip-compressed; - reads standard input (required)")
	fl.IntVar(&f.procs, "procs", 0, "the trace's machine size (default: its header's MaxProcs, else MaxNodes)")
	fl.StringVar(&f.format, "format", "json", "output format: json or table")
	return cmd
}

func runSimFit(ctx context.Context, stdin io.Reader, stdout io.Writer, f *simFitFlags) error {
	var errs []error
	if f.trace == "" {
		errs = append(errs, errors.New("--trace: required: the SWF trace to fit"))
	}
	if f.procs != 0 {
		if err := checkProcs("--procs", f.procs); err != nil {
			errs = append(errs, err)
		}
	}
	if f.format != "json" && f.format != "table" {
		errs = append(errs, fmt.Errorf("--format %q: want json or table", f.format))
	}
	if len(errs) > 0 {
		return flagErrors(errs)
	}
	m, err := fitModelToTrace(ctx, "--trace", f.trace, f.procs, stdin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if f.format == "json" {
		if err := m.WriteJSON(&buf); err != nil {
			return err
		}
	} else {
		m.WriteTable(&buf)
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}
