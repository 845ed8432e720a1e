package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench/measure"
	"github.com/cosched/cosched/internal/atomicfile"
	"github.com/cosched/cosched/internal/textvalue"
)

type benchCalibrateFlags struct {
	opts      measure.CalibrateOptions
	bandwidth string
	out       string
}

var benchCalibrateFlagNames = flagNames{"Nodes": "--nodes", "Slice": "--slice", "MPL": "--mpl", "Work": "--work",
	"Bandwidth": "--bandwidth", "RealtimePriority": "--realtime-priority", "Barriers": "--barriers", "Pings": "--pings",
	"Stream": "--stream", "StateDir": "--state-dir"}

func newBenchCalibrateCmd() *cobra.Command {
	f := benchCalibrateFlags{opts: measure.DefaultCalibrateOptions(), bandwidth: "100MB", out: "profile.json"}
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure this machine's runtime costs and write a machine profile for the simulator",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchCalibrate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.opts.Nodes, "nodes", f.opts.Nodes, "agents of the bcs cluster (nodes of one processor; at least 2)")
	fl.DurationVar(&f.opts.Slice, "slice", f.opts.Slice, "time slice of the bcs cluster")
	fl.IntVar(&f.opts.MPL, "mpl", f.opts.MPL, "multiprogramming level of the bcs cluster")
	fl.StringVar(&f.opts.Work, "work", "", "ranks' work: cpu or wall (default: wall when --nodes exceeds the cores, else cpu)")
	fl.StringVar(&f.bandwidth, "bandwidth", f.bandwidth, "bcs: bandwidth per node per second (h_max = bandwidth × slice)")
	fl.StringVar(&f.out, "out", f.out, "the profile to write")
	fl.StringVar(&f.opts.StateDir, "state-dir", "", "where the clusters' state (agent logs, rank output) goes (default: a temporary directory, removed)")
	fl.IntVar(&f.opts.RealtimePriority, "realtime-priority", f.opts.RealtimePriority, "agents' SCHED_FIFO priority for the strobe path (0: off)")
	fl.IntVar(&f.opts.Barriers, "barriers", f.opts.Barriers, "barriers of the delivery-delay probe (one a slice)")
	fl.IntVar(&f.opts.Pings, "pings", f.opts.Pings, "round trips of the latency probe")
	fl.IntVar(&f.opts.Stream, "stream", f.opts.Stream, "messages of the bandwidth probe")
	return cmd
}

// options checks every flag and returns the calibration's options.
func (f *benchCalibrateFlags) options() (measure.CalibrateOptions, error) {
	var errs []error
	o := f.opts
	if bw, err := textvalue.Bandwidth(f.bandwidth); err != nil {
		errs = append(errs, fmt.Errorf("--bandwidth %q: %v", f.bandwidth, err))
	} else {
		o.Bandwidth = bw
	}
	if f.out == "" {
		errs = append(errs, errors.New("--out: empty"))
	}
	if o.StateDir == "" {
		o.StateDir = "-" // a temporary directory, made once every flag is right
	}
	errs = append(errs, benchCalibrateFlagNames.list(o.Validate())...)
	if len(errs) > 0 {
		return o, flagErrors(errs)
	}
	return o, nil
}

func benchCalibrate(ctx context.Context, out, progress io.Writer, f *benchCalibrateFlags) (err error) {
	o, err := f.options()
	if err != nil {
		return err
	}
	if o.StateDir == "-" {
		if o.StateDir, err = os.MkdirTemp("", "cosched-calibrate-"); err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		defer os.RemoveAll(o.StateDir)
	}
	o.Progress = progress
	p, err := measure.Calibrate(ctx, o)
	if err != nil {
		return err
	}
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(f.out, b); err != nil {
		return fmt.Errorf("calibrate: writing the profile: %w", err)
	}
	measure.WriteProfileSummary(out, p)
	fmt.Fprintf(out, "\nprofile written to %s (use: cosched bench run --profile %s)\n", f.out, f.out)
	return nil
}
