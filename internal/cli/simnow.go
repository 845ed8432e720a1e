package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/gang/now"
	"github.com/cosched/cosched/jss/nowsim"
)

// simNowFlags are the flags of `cosched sim now`; the generator's numbers
// are bound to its configuration.
type simNowFlags struct {
	gen                                                                 nowsim.GenConfig
	policies, speeds, speedsFile, trace, ptime, estimate, seeds, format string
	ptimeClass                                                          [3]string // seq, small, large overrides
}

// nowGeneratorFlags are the flags --trace replaces.
var nowGeneratorFlags = []string{"jobs", "seq-share", "large-share", "balanced-share", "span", "ptime", "ptime-seq", "ptime-small", "ptime-large", "programs", "program-var"}

func newSimNowCmd() *cobra.Command {
	var f simNowFlags
	cmd := &cobra.Command{
		Use:   "now",
		Short: "Simulate online policies on a network of workstations with nodes of different speeds (Arndt et al.)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSimNow(cmd.Context(), cmd, cmd.InOrStdin(), cmd.OutOrStdout(), &f)
		},
	}
	fl, g := cmd.Flags(), &f.gen
	fl.StringVar(&f.policies, "policy", strings.ReplaceAll(now.PolicyList(), " ", ""), "comma-separated policies: "+now.PolicyList())
	fl.StringVar(&f.speeds, "speeds", "8x1,4x2,2x4", "node speeds, comma-separated; NxS is N nodes of speed S")
	fl.StringVar(&f.speedsFile, "speeds-file", "", "read the node speeds from a file instead (same items, separated by commas, spaces or lines; # starts a comment)")
	fl.StringVar(&f.trace, "trace", "", "SWF trace to simulate instead of a generated workload (plain or gzip; - reads standard input)")
	fl.IntVar(&g.Jobs, "jobs", 200, "number of generated jobs")
	fl.Float64Var(&g.SeqShare, "seq-share", 0.3, "share of sequential (1-task) jobs")
	fl.Float64Var(&g.LargeShare, "large-share", 0.2, "share of large parallel jobs (at least half the nodes); the rest are small parallel")
	fl.Float64Var(&g.BalancedShare, "balanced-share", 0, "share of parallel jobs that are load-balanced (run k·t / Σs instead of t / min s)")
	fl.DurationVar(&g.Span, "span", 0, "creation span: submit times uniform in [0, span]; 0 submits every job at once")
	fl.StringVar(&f.ptime, "ptime", "10m-2h", "processing-time range LO-HI (uniform; one task at speed 1) of every class")
	fl.StringVar(&f.ptimeClass[nowsim.Sequential], "ptime-seq", "", "processing-time range of sequential jobs (default: --ptime)")
	fl.StringVar(&f.ptimeClass[nowsim.SmallParallel], "ptime-small", "", "processing-time range of small parallel jobs (default: --ptime)")
	fl.StringVar(&f.ptimeClass[nowsim.LargeParallel], "ptime-large", "", "processing-time range of large parallel jobs (default: --ptime)")
	fl.IntVar(&g.Programs, "programs", 0, "programs per class (0: none): a program's jobs take its base time (uniform in the range) ± --program-var")
	fl.Float64Var(&g.ProgramVar, "program-var", 0.2, "relative variation of a program's processing times, in [0, 1)")
	fl.StringVar(&f.estimate, "estimate", "exact", "runtime estimates: exact, fuzzy:P or learned:W[:PRIOR]")
	fl.StringVar(&f.seeds, "seed", "1", "random seeds, comma-separated: each gives a workload (and fuzzy and random draws); one row per seed and policy")
	fl.StringVar(&f.format, "format", "table", "output format: table, json or csv")
	return cmd
}

var simNowFlagNames = FlagNames{"Jobs": "--jobs", "SeqShare": "--seq-share", "LargeShare": "--large-share", "BalancedShare": "--balanced-share",
	"Span": "--span", "Programs": "--programs", "ProgramVar": "--program-var",
	"PTime": "--ptime", "PTime[seq]": "--ptime-seq", "PTime[small]": "--ptime-small", "PTime[large]": "--ptime-large"}

// validate checks every flag and reports all problems at once; the
// generator (nowsim.GenConfig.Validate) is checked only without --trace,
// its sizes against the nodes only when everything else is right.
func (f *simNowFlags) validate(cmd *cobra.Command) (nowsim.Study, error) {
	s := nowsim.Study{Gen: f.gen}
	var errs []error
	var err error
	if s.Policies, err = now.ParsePolicies(f.policies); err != nil {
		errs = append(errs, fmt.Errorf("--policy: %w", err))
	}
	errs = append(errs, f.readSpeeds(&s, cmd.Flags().Changed("speeds")))
	if s.Estimate, err = now.ParseEstimate(f.estimate); err != nil {
		errs = append(errs, fmt.Errorf("--estimate %q: want exact, fuzzy:P (P ≥ 0) or learned:W[:PRIOR] (0 < W ≤ 1)", f.estimate))
	}
	if s.Seeds, err = nowsim.ParseSeeds(f.seeds); err != nil {
		errs = append(errs, fmt.Errorf("--seed %q: %w", f.seeds, err))
	}
	if !slices.Contains(nowsim.Formats(), f.format) {
		errs = append(errs, fmt.Errorf("--format %q: want table, json or csv", f.format))
	}
	if f.trace != "" {
		for _, name := range nowGeneratorFlags {
			if cmd.Flags().Changed(name) {
				errs = append(errs, fmt.Errorf("--%s: not used with --trace (the trace is the workload)", name))
			}
		}
		return s, flagProblems(errs)
	}
	s.Gen.Nodes = len(s.Speeds)
	s.Gen.PTime, err = nowsim.ParseRanges(f.ptime, f.ptimeClass)
	rangeErrs, check := simNowFlagNames.List(err), s.Gen
	if flagProblems(errs) != nil || len(rangeErrs) > 0 {
		check.Nodes = 0 // no sizes checked (the speeds, checked by their flag, give the nodes)
	}
	errs = append(errs, simNowFlagNames.List(check.Validate(), "Nodes")...)
	return s, flagProblems(append(errs, rangeErrs...))
}

// readSpeeds reads the node speeds into s: --speeds-file, else --speeds.
func (f *simNowFlags) readSpeeds(s *nowsim.Study, speedsGiven bool) error {
	var err error
	switch {
	case f.speedsFile == "":
		if s.Speeds, err = nowsim.ParseSpeeds(f.speeds); err != nil {
			return fmt.Errorf("--speeds %q: %w", f.speeds, err)
		}
	case speedsGiven:
		return errors.New("--speeds-file: give --speeds or --speeds-file, not both")
	default:
		if s.Speeds, err = nowsim.ReadSpeedsFile(f.speedsFile); err != nil {
			return fmt.Errorf("--speeds-file: %w", err)
		}
	}
	return nil
}

func runSimNow(ctx context.Context, cmd *cobra.Command, stdin io.Reader, stdout io.Writer, f *simNowFlags) error {
	s, err := f.validate(cmd)
	if err != nil {
		return err
	}
	t := nowsim.Table{Speeds: s.Speeds, Trace: f.trace, Gen: s.Gen, Estimate: s.Estimate.String()}
	if f.trace != "" {
		if s.Trace, t.Dropped, err = readNowTrace(ctx, f.trace, len(s.Speeds), stdin); err != nil {
			return err
		}
		if t.TraceJobs = len(s.Trace); len(s.Trace) == 0 {
			return fmt.Errorf("--trace %s: no job fits %d nodes (%d dropped)", f.trace, len(s.Speeds), t.Dropped.Total())
		}
	}
	results, err := s.Run(ctx)
	if err != nil {
		return err
	}
	return nowsim.Write(stdout, f.format, t, results)
}

// readNowTrace reads an SWF file (or standard input for "-") into jobs.
func readNowTrace(ctx context.Context, path string, nodes int, stdin io.Reader) ([]nowsim.Job, nowsim.Dropped, error) {
	rd, closer, err := openSWF(ctx, "--trace", path, stdin)
	if err != nil {
		return nil, nowsim.Dropped{}, err
	}
	defer closer.Close()
	return nowsim.ReadSWF(rd, nodes)
}
