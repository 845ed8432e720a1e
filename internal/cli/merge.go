package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/jss/sweep"
)

func newMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge --out DIR INPUT...",
		Short: "Combine the shards of a sweep into its results",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageError{errors.New("--out: required: the directory for the merged results")}
			}
			parts, err := sweep.ReadParts(cmd.Context(), args)
			if err != nil {
				return err
			}
			res, err := sweep.Merge(parts)
			if err != nil {
				return err
			}
			PrintWarnings(cmd.ErrOrStderr(), res.Warnings)
			return res.Publish(cmd.OutOrStdout(), out)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for results.json and results.csv (created if needed; required)")
	return cmd
}

// PrintWarnings prints what a library noticed but read anyway (a results
// file's former mode names).
func PrintWarnings(stderr io.Writer, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
}
