package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench"
	benchrank "github.com/cosched/cosched/bench/rank"
	"github.com/cosched/cosched/comm"
	"github.com/cosched/cosched/internal/textvalue"
)

// envBench is the variable agents set to a benchmark job's template.
const envBench = "COSCHED_BENCH"

type benchRankFlags struct {
	template   string
	iterations int
	runtime    time.Duration
	seed       uint64
	work       string
	msgSize    string
}

func newBenchRankCmd() *cobra.Command {
	f := benchRankFlags{work: "cpu", msgSize: "4KiB"}
	cmd := &cobra.Command{
		Use:   "bench-rank",
		Short: "Run one rank of a benchmark job (what agents run for submit --bench)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchRank(cmd.Context(), cmd.OutOrStdout(), &f, cmd.Flags().Changed)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.template, "template", "", "⟨g,v,comm,sync⟩ template, e.g. 50ms,25ms,news,NB (default $"+envBench+")")
	fl.IntVar(&f.iterations, "iterations", 0, "iterations to run (or --runtime)")
	fl.DurationVar(&f.runtime, "runtime", 0, "target dedicated runtime, which sets the iterations (or --iterations)")
	fl.Uint64Var(&f.seed, "seed", 0, "seed of the compute-time draws (default: the job id, $COSCHED_JOB)")
	fl.StringVar(&f.work, "work", f.work, "compute work: cpu (burn CPU time) or wall (sleep, excluding stops)")
	fl.StringVar(&f.msgSize, "msg-size", f.msgSize, "size of one message")
	return cmd
}

// benchRankConfig is what the flags say; iterations and seed may still
// depend on the job (its size, its id).
type benchRankConfig struct {
	cfg     benchrank.Config
	runtime time.Duration // > 0: iterations from the job's size
	seedSet bool
}

// validate checks every flag (and $COSCHED_BENCH), reporting all problems.
func (f *benchRankFlags) validate(changed func(string) bool) (benchRankConfig, error) {
	var errs []error
	var c benchRankConfig
	switch {
	case changed("template"):
		t, err := bench.ParseTemplate(f.template)
		if err != nil {
			errs = append(errs, fmt.Errorf("--template: %v", err))
		}
		c.cfg.Template = t
	case os.Getenv(envBench) != "":
		t, err := bench.ParseTemplate(os.Getenv(envBench))
		if err != nil {
			errs = append(errs, fmt.Errorf("$%s: %v", envBench, err))
		}
		c.cfg.Template = t
	default:
		errs = append(errs, fmt.Errorf("--template: required when $%s is not set (e.g. --template 50ms,25ms,news,NB)", envBench))
	}
	switch its, rt := changed("iterations"), changed("runtime"); {
	case its && rt:
		errs = append(errs, errors.New("--iterations and --runtime: give one of them, not both"))
	case !its && !rt:
		errs = append(errs, errors.New("give --iterations N or --runtime D"))
	case its && f.iterations < 1:
		errs = append(errs, fmt.Errorf("--iterations %d: must be at least 1", f.iterations))
	case rt && f.runtime <= 0:
		errs = append(errs, fmt.Errorf("--runtime %v: must be positive", f.runtime))
	case its:
		c.cfg.Iterations = f.iterations
	default:
		c.runtime = f.runtime
	}
	w, err := benchrank.ParseWork(f.work)
	if err != nil {
		errs = append(errs, fmt.Errorf("--work %q: want cpu or wall", f.work))
	}
	c.cfg.Work = w
	size, err := textvalue.Size(f.msgSize)
	if err != nil || size < benchrank.HeaderSize || size > comm.MaxMessage {
		errs = append(errs, fmt.Errorf("--msg-size %q: want a size from %d to %d bytes (e.g. 4KiB)", f.msgSize, benchrank.HeaderSize, comm.MaxMessage))
	}
	c.cfg.MessageSize = int(size)
	c.cfg.Seed, c.seedSet = f.seed, changed("seed")
	if len(errs) > 0 {
		return c, flagErrors(errs)
	}
	return c, nil
}

func benchRank(ctx context.Context, out io.Writer, f *benchRankFlags, changed func(string) bool) error {
	if env := os.Getenv(bench.EnvJob); env != "" && !slices.ContainsFunc(benchRankFlagNames, changed) {
		return benchRankJob(ctx, out, env)
	}
	c, err := f.validate(changed)
	if err != nil {
		return err
	}
	p := benchrank.Program{Config: c.cfg, SeedFromJob: !c.seedSet}
	if c.runtime > 0 {
		net := bench.DefaultNetwork()
		net.MessageSize = c.cfg.MessageSize
		p.Iterations = func(size int) int { return bench.Iterations(c.cfg.Template, size, net, c.runtime) }
	}
	return p.Run(ctx, out)
}

// benchRankFlagNames are bench-rank's flags: given none, a rank of a
// benchmark job runs the job its agent hands it ($COSCHED_BENCH_JOB).
var benchRankFlagNames = []string{"template", "iterations", "runtime", "seed", "work", "msg-size"}

// benchRankJob runs a rank of the benchmark job encoded in env.
func benchRankJob(ctx context.Context, out io.Writer, env string) error {
	j, err := bench.DecodeJob(env)
	if err != nil {
		return usageError{fmt.Errorf("$%s: %w", bench.EnvJob, err)}
	}
	cfg, err := benchrank.ConfigOf(j)
	if err != nil {
		return usageError{fmt.Errorf("$%s: %w", bench.EnvJob, err)}
	}
	return benchrank.Program{Config: cfg}.Run(ctx, out)
}
