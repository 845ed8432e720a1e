package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/bench/measure"
	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/textvalue"
)

func newBenchProbeCmd() *cobra.Command {
	o := measure.ProbeOptions{Count: 100}
	size := textvalue.NewFlag(&o.Size, "Size", "4KiB", textvalue.Size)
	cmd := &cobra.Command{
		Use:    "bench-probe",
		Short:  "One rank of a calibration probe (what bench calibrate runs)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := errors.Join(size.Err, o.Validate()); err != nil {
				return cli.FlagNames{"Test": "--test", "Count": "--count", "Size": "--size"}.Errors(err)
			}
			return measure.Probe(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Test, "test", "", "pingpong, stream or barrier")
	fl.IntVar(&o.Count, "count", o.Count, "round trips, messages or barriers")
	fl.Var(size, "size", "message size")
	return cmd
}
