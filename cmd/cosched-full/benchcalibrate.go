package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench/measure"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/fielderr"
	"github.com/cosched/cosched/internal/textvalue"
)

var benchCalibrateFlagNames = cli.FlagNames{"Nodes": "--nodes", "Slice": "--slice", "MPL": "--mpl", "Work": "--work",
	"Bandwidth": "--bandwidth", "RealtimePriority": "--realtime-priority", "Barriers": "--barriers", "Pings": "--pings",
	"Stream": "--stream", "Out": "--out"}

func newBenchCalibrateCmd() *cobra.Command {
	o := measure.DefaultCalibrateOptions()
	bandwidth := textvalue.NewFlag(&o.Bandwidth, "Bandwidth", "100MB", textvalue.Bandwidth)
	out := "profile.json"
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure this machine's runtime costs and write a machine profile for the simulator",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var noOut error
			if out == "" {
				noOut = fielderr.New("Out", nil, "empty")
			}
			if err := errors.Join(bandwidth.Err, noOut, o.Validate()); err != nil {
				return benchCalibrateFlagNames.Errors(err)
			}
			// An unusable --out fails now, not after the measurements.
			if err := atomicfile.CheckDir(filepath.Dir(out)); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			o.Progress = cmd.ErrOrStderr()
			p, err := measure.Calibrate(cmd.Context(), o)
			if err != nil {
				return err
			}
			if err := p.Save(out); err != nil {
				return err
			}
			measure.WriteProfileSummary(cmd.OutOrStdout(), p)
			fmt.Fprintf(cmd.OutOrStdout(), "\nprofile written to %s (use: cosched bench run --profile %s)\n", out, out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Nodes, "nodes", o.Nodes, "agents of the bcs cluster (nodes of one processor; at least 2)")
	fl.DurationVar(&o.Slice, "slice", o.Slice, "time slice of the bcs cluster")
	fl.IntVar(&o.MPL, "mpl", o.MPL, "multiprogramming level of the bcs cluster")
	fl.StringVar(&o.Work, "work", "", "ranks' work: cpu or wall (default: wall when --nodes exceeds the cores, else cpu)")
	fl.Var(bandwidth, "bandwidth", "bcs: bandwidth per node per second (h_max = bandwidth × slice)")
	fl.StringVar(&out, "out", out, "the profile to write")
	fl.StringVar(&o.StateDir, "state-dir", "", "where the clusters' state (agent logs, rank output) goes (default: a temporary directory, removed)")
	fl.IntVar(&o.RealtimePriority, "realtime-priority", o.RealtimePriority, "agents' SCHED_FIFO priority for the strobe path (0: off)")
	fl.IntVar(&o.Barriers, "barriers", o.Barriers, "barriers of the delivery-delay probe (one a slice)")
	fl.IntVar(&o.Pings, "pings", o.Pings, "round trips of the latency probe")
	fl.IntVar(&o.Stream, "stream", o.Stream, "messages of the bandwidth probe")
	return cmd
}
