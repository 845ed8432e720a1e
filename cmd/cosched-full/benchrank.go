package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench"
	benchrank "github.com/cosched/cosched/bench/rank"
	"github.com/cosched/cosched/internal/cli"
)

// benchRankFlagNames names benchrank.Settings' fields by bench-rank's
// flags.
var benchRankFlagNames = cli.FlagNames{"Template": "--template", "TemplateEnv": "$" + bench.EnvTemplate, "Iterations": "--iterations",
	"Runtime": "--runtime", "Seed": "--seed", "Work": "--work", "MessageSize": "--msg-size"}

func newBenchRankCmd() *cobra.Command {
	s := benchrank.Settings{Work: "cpu", MessageSize: "4KiB"}
	cmd := &cobra.Command{
		Use:   "bench-rank",
		Short: "Run one rank of a benchmark job (what agents run for submit --bench)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := benchRankProgram(cmd, s)
			if err != nil {
				return err
			}
			return p.Run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&s.Template, "template", "", "⟨g,v,comm,sync⟩ template, e.g. 50ms,25ms,news,NB (default $"+bench.EnvTemplate+")")
	fl.IntVar(&s.Iterations, "iterations", 0, "iterations to run (or --runtime)")
	fl.DurationVar(&s.Runtime, "runtime", 0, "target dedicated runtime, which sets the iterations (or --iterations)")
	fl.Uint64Var(&s.Seed, "seed", 0, "seed of the compute-time draws (default: the job id, $COSCHED_JOB)")
	fl.StringVar(&s.Work, "work", s.Work, "compute work: cpu (burn CPU time) or wall (sleep, excluding stops)")
	fl.StringVar(&s.MessageSize, "msg-size", s.MessageSize, "size of one message")
	return cmd
}

// benchRankProgram is the rank to run: given no flag, a rank of the
// benchmark job its agent hands it ($COSCHED_BENCH_JOB); else the flags'.
func benchRankProgram(cmd *cobra.Command, s benchrank.Settings) (benchrank.Program, error) {
	if env := os.Getenv(bench.EnvJob); env != "" && cmd.Flags().NFlag() == 0 {
		p, err := benchrank.JobProgram(env)
		if err != nil {
			return p, cli.Usage(fmt.Errorf("$%s: %w", bench.EnvJob, err))
		}
		return p, nil
	}
	s.Given = func(field string) bool {
		return cmd.Flags().Changed(strings.TrimPrefix(benchRankFlagNames[field], "--"))
	}
	p, err := s.Program()
	return p, benchRankFlagNames.Errors(err)
}
