package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/cosched/cosched/api"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench/measure"
	"github.com/cosched/cosched/internal/fielderr"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the runtime on this machine",
	}
	cmd.AddCommand(newBenchStrobeCmd(), newBenchRunCmd(), newBenchCalibrateCmd())
	return cmd
}

type benchStrobeFlags struct {
	opts    measure.StrobeOptions
	json    bool
	keep    bool
	suspend []string // measured one after the other, each on a cluster of its own
	auth    string   // on, off or both (off first: the baseline)
}

var benchStrobeFlagNames = flagNames{"Agents": "-N", "Slice": "--slice", "Duration": "--duration", "MPL": "--mpl",
	"RealtimePriority": "--realtime-priority", "Suspend": "--suspend",
	"Fanout": "--strobe-fanout", "Auth": "--auth"}

func newBenchStrobeCmd() *cobra.Command {
	f := benchStrobeFlags{opts: measure.StrobeOptions{Agents: 8, Slice: 10 * time.Millisecond, Duration: 30 * time.Second, MPL: 2, RealtimePriority: 50},
		suspend: []string{api.SuspendSignal}, auth: "on"}
	cmd := &cobra.Command{
		Use:   "strobe",
		Short: "Measure slice switching on a local gang-mode cluster: skew, latency, overhead",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			warnDeprecated(cmd, map[string]string{"agents": "-N/--nodes"})
			return benchStrobe(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), &f)
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.opts.Agents, "nodes", "N", f.opts.Agents, "agents (nodes of one processor) on this machine")
	fl.IntVarP(&f.opts.Agents, "agents", "n", f.opts.Agents, "agents")
	_ = fl.MarkHidden("agents")
	fl.DurationVar(&f.opts.Slice, "slice", f.opts.Slice, "time slice δ (at least 1ms)")
	fl.DurationVar(&f.opts.Duration, "duration", f.opts.Duration, "how long to measure, after the jobs are running")
	fl.IntVar(&f.opts.MPL, "mpl", f.opts.MPL, "rows of the matrix, each filled by one job")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	fl.IntVar(&f.opts.RealtimePriority, "realtime-priority", f.opts.RealtimePriority, "agents' SCHED_FIFO priority for the strobe path; 0 measures without real-time scheduling")
	fl.StringSliceVar(&f.suspend, "suspend", f.suspend, "suspension methods to measure, in turn: signal, freezer or both (signal,freezer)")
	fl.IntVar(&f.opts.Fanout, "strobe-fanout", 0, "strobe the agents along a tree of this arity (0: directly), as cosched agent --strobe-fanout")
	fl.StringVar(&f.auth, "auth", f.auth, "seal strobes and heartbeats with the cluster key: on, off, or both (measured in turn, unsealed first, and compared)")
	fl.BoolVar(&f.keep, "keep", false, "keep the cluster's state directory (agent logs) and print where it is")
	return cmd
}

func benchStrobe(ctx context.Context, out, progress io.Writer, f *benchStrobeFlags) error {
	var unsealed []bool // the authentication settings measured, in turn
	switch f.auth {
	case "on":
		unsealed = []bool{false}
	case "off":
		unsealed = []bool{true}
	case "both":
		unsealed = []bool{true, false}
	default:
		// Reported with whatever else is wrong, before anything starts.
		bad := fielderr.New("Auth", f.auth, "want on, off or both")
		return benchStrobeFlagNames.errors(errors.Join(bad, measure.ValidateStrobeMethods(f.opts, f.suspend)))
	}
	o := f.opts
	o.Progress = progress
	reps, err := measure.StrobeMethods(ctx, o, f.suspend, unsealed, f.keep)
	if err != nil {
		return benchStrobeFlagNames.errors(err)
	}
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if len(reps) == 1 {
			return enc.Encode(reps[0])
		}
		return enc.Encode(reps)
	}
	measure.WriteStrobeMethods(out, reps, len(f.suspend), len(unsealed))
	return nil
}
