package cli

import (
	"github.com/spf13/cobra"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/localcluster"
)

func newOutputCmd() *cobra.Command {
	var stateDir string
	var label, stderr bool
	cmd := &cobra.Command{
		Use:   "output [--label] [--err] JOB",
		Short: "Print a job's output: every rank's, in rank order, optionally labelled with its rank",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := api.ParseJobID(args[0])
			if err != nil {
				return usageError{err}
			}
			dir, err := localcluster.FindStateDir(stateDir)
			if err != nil {
				return err
			}
			ext := "out"
			if stderr {
				ext = "err"
			}
			return localcluster.WriteJobOutput(cmd.OutOrStdout(), dir, id, ext, label)
		},
	}
	cmd.Flags().BoolVarP(&label, "label", "l", false, "prefix each line with its rank (srun --label)")
	cmd.Flags().BoolVar(&stderr, "err", false, "print the ranks' standard error instead of their standard output")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", StateDirHelp)
	return cmd
}
