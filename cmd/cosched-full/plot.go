package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/jss/plot"
	"github.com/cosched/cosched/jss/sweep"
)

func newPlotCmd() *cobra.Command {
	var o plot.Options
	cmd := &cobra.Command{
		Use:   "plot",
		Short: "Draw the figures of a sweep: response, wait, slowdown and utilization",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlot(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.In, "in", "", "results JSON file, or a directory with results.json (required)")
	fl.StringVar(&o.Out, "out", "", "directory for the figures (created if needed; required)")
	fl.StringVar(&o.Formats, "format", "png,svg", "file formats: "+strings.Join(plot.Formats(), ", "))
	return cmd
}

var plotFlagNames = cli.FlagNames{"In": "--in", "Out": "--out", "Formats": "--format"}

func runPlot(ctx context.Context, stdout, stderr io.Writer, o plot.Options) error {
	formats, err := o.Parse()
	if err != nil {
		return plotFlagNames.Errors(err)
	}
	res, err := sweep.ReadResults(ctx, o.In)
	if err != nil {
		return fmt.Errorf("--in: %w", err)
	}
	cli.PrintWarnings(stderr, res.Warnings)
	if res.Shard != "" {
		fmt.Fprintf(stderr, "plot: %s holds shard %s only: %d of %d points\n", o.In, res.Shard, len(res.Rows), res.Total)
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	figs, skips := plot.Figures(res.Rows)
	paths, err := plot.WriteFiles(ctx, o.Out, figs, formats)
	for _, p := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	if err != nil {
		return err
	}
	for _, s := range skips {
		fmt.Fprintf(stdout, "skipped %v\n", s)
	}
	if len(figs) == 0 {
		fmt.Fprintln(stdout, "no figure drawn: every x axis would have fewer than 2 values")
	}
	return nil
}
