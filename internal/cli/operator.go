package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newOperatorCmd() *cobra.Command {
	raft := &cobra.Command{Use: "raft", Short: "The controllers' raft group: list its servers, remove a dead one"}
	raft.AddCommand(newRaftListPeersCmd(), newRaftRemovePeerCmd())
	cmd := &cobra.Command{Use: "operator", Short: "Operate the cluster's controllers (root or --admin-group members)"}
	cmd.AddCommand(raft)
	return cmd
}

func newRaftListPeersCmd() *cobra.Command {
	var cf ClientFlags
	cmd := &cobra.Command{
		Use:   "list-peers",
		Short: "List the controllers of the raft group: address, leader, voter, agent alive",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.Client()
			if err != nil {
				return err
			}
			servers, err := c.RaftPeers(cmd.Context())
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tADDRESS\tSTATE\tVOTER\tAGENT")
			for _, s := range servers {
				state, agent := "follower", "gone"
				if s.Leader {
					state = "leader"
				}
				if s.Alive {
					agent = "alive"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%t\t%s\n", s.Name, s.Address, state, s.Voter, agent)
			}
			return w.Flush()
		},
	}
	cf.Add(cmd)
	return cmd
}

func newRaftRemovePeerCmd() *cobra.Command {
	var cf ClientFlags
	cmd := &cobra.Command{
		Use:   "remove-peer NAME",
		Short: "Remove a dead controller from the raft group, so it no longer counts toward the majority",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return usageError{errors.New("remove-peer: NAME is empty: give the controller's agent name, as list-peers shows it")}
			}
			c, err := cf.Client()
			if err != nil {
				return err
			}
			return c.RemoveRaftPeer(cmd.Context(), args[0])
		},
	}
	cf.Add(cmd)
	return cmd
}
