package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/gang/now"
	"github.com/cosched/cosched/jss/nowsim"
)

type simNowFlags struct {
	policies      string
	speeds        string
	speedsFile    string
	trace         string
	jobs          int
	seqShare      float64
	largeShare    float64
	balancedShare float64
	span          time.Duration
	ptime         string
	ptimeClass    [3]string // seq, small, large overrides
	programs      int
	programVar    float64
	estimate      string
	seeds         string
	format        string
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
	fl := cmd.Flags()
	fl.StringVar(&f.policies, "policy", strings.ReplaceAll(now.PolicyList(), " ", ""), "comma-separated policies: "+now.PolicyList())
	fl.StringVar(&f.speeds, "speeds", "8x1,4x2,2x4", "node speeds, comma-separated; NxS is N nodes of speed S")
	fl.StringVar(&f.speedsFile, "speeds-file", "", "read the node speeds from a file instead (same items, separated by commas, spaces or lines; # starts a comment)")
	fl.StringVar(&f.trace, "trace", "", "SWF trace to simulate instead of a generated workload (plain or gzip; - reads standard input)")
	fl.IntVar(&f.jobs, "jobs", 200, "number of generated jobs")
	fl.Float64Var(&f.seqShare, "seq-share", 0.3, "share of sequential (1-task) jobs")
	fl.Float64Var(&f.largeShare, "large-share", 0.2, "share of large parallel jobs (at least half the nodes); the rest are small parallel")
	fl.Float64Var(&f.balancedShare, "balanced-share", 0, "share of parallel jobs that are load-balanced (run k·t / Σs instead of t / min s)")
	fl.DurationVar(&f.span, "span", 0, "creation span: submit times uniform in [0, span]; 0 submits every job at once")
	fl.StringVar(&f.ptime, "ptime", "10m-2h", "processing-time range LO-HI (uniform; one task at speed 1) of every class")
	fl.StringVar(&f.ptimeClass[nowsim.Sequential], "ptime-seq", "", "processing-time range of sequential jobs (default: --ptime)")
	fl.StringVar(&f.ptimeClass[nowsim.SmallParallel], "ptime-small", "", "processing-time range of small parallel jobs (default: --ptime)")
	fl.StringVar(&f.ptimeClass[nowsim.LargeParallel], "ptime-large", "", "processing-time range of large parallel jobs (default: --ptime)")
	fl.IntVar(&f.programs, "programs", 0, "programs per class (0: none): a program's jobs take its base time (uniform in the range) ± --program-var")
	fl.Float64Var(&f.programVar, "program-var", 0.2, "relative variation of a program's processing times, in [0, 1)")
	fl.StringVar(&f.estimate, "estimate", "exact", "runtime estimates: exact, fuzzy:P or learned:W[:PRIOR]")
	fl.StringVar(&f.seeds, "seed", "1", "random seeds, comma-separated: each gives a workload (and fuzzy and random draws); one row per seed and policy")
	fl.StringVar(&f.format, "format", "table", "output format: table, json or csv")
	return cmd
}

// simNowPlan is a validated command line.
type simNowPlan struct {
	policies []now.Policy
	speeds   []float64
	estimate now.EstimateSpec
	seeds    []uint64
	gen      nowsim.GenConfig
}

func (f *simNowFlags) validate(cmd *cobra.Command) (simNowPlan, error) {
	var p simNowPlan
	errs := f.policiesInto(&p)
	errs = append(errs, f.speedsInto(&p, cmd.Flags().Changed("speeds"))...)
	var err error
	if p.estimate, err = now.ParseEstimate(f.estimate); err != nil {
		errs = append(errs, fmt.Errorf("--estimate %q: want exact, fuzzy:P (P ≥ 0) or learned:W[:PRIOR] (0 < W ≤ 1)", f.estimate))
	}
	for _, item := range strings.Split(f.seeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(item), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("--seed %q: want non-negative integers, comma-separated", f.seeds))
			break
		}
		p.seeds = append(p.seeds, v)
	}
	if !slices.Contains([]string{"table", "json", "csv"}, f.format) {
		errs = append(errs, fmt.Errorf("--format %q: want table, json or csv", f.format))
	}
	if f.trace != "" {
		for _, name := range nowGeneratorFlags {
			if cmd.Flags().Changed(name) {
				errs = append(errs, fmt.Errorf("--%s: not used with --trace (the trace is the workload)", name))
			}
		}
		return p, nowFlagErrors(errs)
	}
	var genErrs []error
	p.gen, genErrs = f.generator(p.speeds, len(errs) == 0)
	return p, nowFlagErrors(append(errs, genErrs...))
}

// policiesInto parses --policy into p, dropping repeats.
func (f *simNowFlags) policiesInto(p *simNowPlan) []error {
	var errs []error
	seen := map[now.Policy]bool{}
	for _, name := range strings.Split(f.policies, ",") {
		if strings.TrimSpace(name) == "" {
			continue
		}
		pol, err := now.ParsePolicy(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("--policy: unknown policy %q (valid: %s)", strings.TrimSpace(name), now.PolicyList()))
		} else if !seen[pol] {
			seen[pol] = true
			p.policies = append(p.policies, pol)
		}
	}
	if len(p.policies) == 0 && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("--policy: no policy given (valid: %s)", now.PolicyList()))
	}
	return errs
}

// speedsInto reads the node speeds into p: --speeds-file, else --speeds.
func (f *simNowFlags) speedsInto(p *simNowPlan, speedsGiven bool) []error {
	if f.speedsFile == "" {
		var err error
		if p.speeds, err = nowsim.ParseSpeeds(f.speeds); err != nil {
			return []error{fmt.Errorf("--speeds %q: %w", f.speeds, err)}
		}
		return nil
	}
	if speedsGiven {
		return []error{errors.New("--speeds-file: give --speeds or --speeds-file, not both")}
	}
	data, err := os.ReadFile(f.speedsFile)
	if err != nil {
		return []error{fmt.Errorf("--speeds-file: %w", err)}
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		l, _, _ = strings.Cut(l, "#")
		lines = append(lines, l)
	}
	if p.speeds, err = nowsim.ParseSpeeds(strings.Join(lines, "\n")); err != nil {
		return []error{fmt.Errorf("--speeds-file %s: %w", f.speedsFile, err)}
	}
	return nil
}

var simNowFlagNames = flagNames{"Jobs": "--jobs", "SeqShare": "--seq-share", "LargeShare": "--large-share", "BalancedShare": "--balanced-share",
	"Span": "--span", "Programs": "--programs", "ProgramVar": "--program-var", "PTime": "--ptime"}

// generator checks the generator's flags (nowsim.GenConfig.Validate), each
// named in its own message; sizes are checked against the nodes when
// everything else is right (valid).
func (f *simNowFlags) generator(speeds []float64, valid bool) (nowsim.GenConfig, []error) {
	var errs []error
	g := nowsim.GenConfig{Nodes: len(speeds), Jobs: f.jobs, SeqShare: f.seqShare, LargeShare: f.largeShare,
		BalancedShare: f.balancedShare, Span: f.span, Programs: f.programs, ProgramVar: f.programVar}
	all, err := nowsim.ParseRange(f.ptime)
	if err != nil {
		errs = append(errs, fmt.Errorf("--ptime %q: %w", f.ptime, err))
	}
	for cl, s := range f.ptimeClass {
		g.PTime[cl] = all
		if s == "" {
			continue
		}
		if g.PTime[cl], err = nowsim.ParseRange(s); err != nil {
			errs = append(errs, fmt.Errorf("--ptime-%s %q: %w", nowsim.Class(cl), s, err))
		}
	}
	check := g
	if !valid || len(errs) > 0 {
		check.Nodes = 0 // no sizes checked (the speeds, checked by their flag, give the nodes)
	}
	return g, append(simNowFlagNames.list(check.Validate(), "Nodes"), errs...)
}

func nowFlagErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return flagErrors(errs)
}

func runSimNow(ctx context.Context, cmd *cobra.Command, stdin io.Reader, stdout io.Writer, f *simNowFlags) error {
	p, err := f.validate(cmd)
	if err != nil {
		return err
	}
	var traceJobs []nowsim.Job
	var dropped nowsim.Dropped
	if f.trace != "" {
		if traceJobs, dropped, err = readNowTrace(ctx, f.trace, len(p.speeds), stdin); err != nil {
			return err
		}
		if len(traceJobs) == 0 {
			return fmt.Errorf("--trace %s: no job fits %d nodes (%d dropped)", f.trace, len(p.speeds), dropped.Total())
		}
	}
	var results []nowsim.Result
	for _, seed := range p.seeds {
		jobs := traceJobs
		if jobs == nil {
			g := p.gen
			g.Seed = seed
			if jobs, err = nowsim.Generate(ctx, g); err != nil {
				return err
			}
		}
		for _, pol := range p.policies {
			cfg := nowsim.Config{Speeds: p.speeds, Policy: pol, Estimate: p.estimate, Prior: nowsim.MeanWork(jobs), Seed: seed}
			res, err := nowsim.Run(ctx, cfg, jobs, nil)
			if err != nil {
				return fmt.Errorf("policy %s, seed %d: %w", pol, seed, err)
			}
			results = append(results, res)
		}
	}
	switch f.format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	case "csv":
		return nowsim.WriteCSV(stdout, results)
	}
	t := nowsim.Table{Speeds: p.speeds, Trace: f.trace, TraceJobs: len(traceJobs), Dropped: dropped, Gen: p.gen, Estimate: p.estimate.String()}
	return nowsim.WriteTable(stdout, t, results)
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
