package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/textvalue"
	"github.com/cosched/cosched/jss/plot"
	"github.com/cosched/cosched/jss/sweep"
)

type plotFlags struct {
	in      string
	out     string
	formats string
}

func newPlotCmd() *cobra.Command {
	var f plotFlags
	cmd := &cobra.Command{
		Use:   "plot",
		Short: "Draw the figures of a sweep: response, wait, slowdown and utilization",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlot(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.in, "in", "", "results JSON file, or a directory with results.json (required)")
	fl.StringVar(&f.out, "out", "", "directory for the figures (created if needed; required)")
	fl.StringVar(&f.formats, "format", "png,svg", "file formats: "+strings.Join(plot.Formats(), ", "))
	return cmd
}

func (f *plotFlags) validate() ([]string, error) {
	var errs []error
	if f.in == "" {
		errs = append(errs, errors.New("--in: required: the sweep's results file or directory"))
	}
	if f.out == "" {
		errs = append(errs, errors.New("--out: required: the directory for the figures"))
	}
	formats, e := textvalue.List("--format", f.formats, func(s string) (string, error) {
		s = strings.ToLower(s)
		if !slices.Contains(plot.Formats(), s) {
			return "", fmt.Errorf("unknown format (valid: %s)", strings.Join(plot.Formats(), ", "))
		}
		return s, nil
	})
	errs = append(errs, e...)
	if len(errs) > 0 {
		return nil, flagErrors(errs)
	}
	return formats, nil
}

func runPlot(ctx context.Context, stdout, stderr io.Writer, f *plotFlags) error {
	formats, err := f.validate()
	if err != nil {
		return err
	}
	res, err := sweep.ReadResults(f.in)
	if err != nil {
		return fmt.Errorf("--in: %w", err)
	}
	printWarnings(stderr, res.Warnings)
	if res.Shard != "" {
		fmt.Fprintf(stderr, "plot: %s holds shard %s only: %d of %d points\n", f.in, res.Shard, len(res.Rows), res.Total)
	}
	figs, skips := plot.Figures(res.Rows)
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	paths, err := plot.WriteFiles(ctx, f.out, figs, formats)
	for _, p := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	if err != nil {
		return err
	}
	for _, s := range skips {
		what := s.Names[0]
		if len(s.Names) > 1 {
			what = fmt.Sprintf("%d %s figures (%s, …)", len(s.Names), s.Kind, s.Names[0])
		}
		fmt.Fprintf(stdout, "skipped %s: %s\n", what, s.Reason)
	}
	if len(figs) == 0 {
		fmt.Fprintln(stdout, "no figure drawn: every x axis would have fewer than 2 values")
	}
	return nil
}
