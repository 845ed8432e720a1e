package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/bench/measure"
	"github.com/cosched/cosched/internal/cli"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the runtime on this machine",
	}
	cmd.AddCommand(newBenchStrobeCmd(), newBenchRunCmd(), newBenchCalibrateCmd())
	return cmd
}

var benchStrobeFlagNames = cli.FlagNames{"Agents": "-N", "Slice": "--slice", "Duration": "--duration", "MPL": "--mpl",
	"RealtimePriority": "--realtime-priority", "Suspend": "--suspend",
	"Fanout": "--strobe-fanout", "Auth": "--auth"}

func newBenchStrobeCmd() *cobra.Command {
	r := measure.StrobeRuns{StrobeOptions: measure.StrobeOptions{Agents: 8, Slice: 10 * time.Millisecond, Duration: 30 * time.Second, MPL: 2, RealtimePriority: 50},
		Methods: []string{api.SuspendSignal}, Auth: measure.AuthOn}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "strobe",
		Short: "Measure slice switching on a local gang-mode cluster: skew, latency, overhead",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cli.WarnDeprecated(cmd, map[string]string{"agents": "-N/--nodes"})
			r.Progress = cmd.ErrOrStderr()
			reps, err := measure.StrobeMethods(cmd.Context(), r)
			if err != nil {
				return benchStrobeFlagNames.Errors(err)
			}
			if asJSON {
				return measure.WriteStrobeJSON(cmd.OutOrStdout(), reps)
			}
			r.WriteReports(cmd.OutOrStdout(), reps)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&r.Agents, "nodes", "N", r.Agents, "agents (nodes of one processor) on this machine")
	fl.IntVarP(&r.Agents, "agents", "n", r.Agents, "agents")
	_ = fl.MarkHidden("agents")
	fl.DurationVar(&r.Slice, "slice", r.Slice, "time slice δ (at least 1ms)")
	fl.DurationVar(&r.Duration, "duration", r.Duration, "how long to measure, after the jobs are running")
	fl.IntVar(&r.MPL, "mpl", r.MPL, "rows of the matrix, each filled by one job")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.IntVar(&r.RealtimePriority, "realtime-priority", r.RealtimePriority, "agents' SCHED_FIFO priority for the strobe path; 0 measures without real-time scheduling")
	fl.StringSliceVar(&r.Methods, "suspend", r.Methods, "suspension methods to measure, in turn: signal, freezer or both (signal,freezer)")
	fl.IntVar(&r.Fanout, "strobe-fanout", 0, "strobe the agents along a tree of this arity (0: directly), as cosched agent --strobe-fanout")
	fl.StringVar(&r.Auth, "auth", r.Auth, "seal strobes and heartbeats with the cluster key: on, off, or both (measured in turn, unsealed first, and compared)")
	fl.BoolVar(&r.Keep, "keep", false, "keep the cluster's state directory (agent logs) and print where it is")
	return cmd
}
