// Command cosched-full is cosched with every command, among them those
// that link the heavy libraries (memberlist, Prometheus, cgroups,
// gonum/plot, gonum): agent, cluster, bench, ui, sim plot and sim closed, and bench-rank, the
// benchmark ranks the agents run. The light cosched
// binary (cmd/cosched) executes it for those commands; it runs every other
// command too, so a process that runs its own executable again (an agent's
// rank shim and benchmark ranks, a cluster's agents) needs nothing else.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/rtprio"
	"github.com/cosched/cosched/internal/sigrun"
)

func main() {
	// Whatever started this process, it starts at the normal policy: an
	// inherited real-time one would let a busy command starve the machine.
	// The agent raises itself if told to.
	if _, err := rtprio.DropRealtime(); err != nil {
		fmt.Fprintf(os.Stderr, "cosched: warning: running at an inherited real-time priority: %v\n", err)
	}
	os.Exit(sigrun.Run("cosched", cli.StopGrace, os.Stderr, func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}))
}

// run executes the command line args with every command and returns the
// process exit status (cli.Run).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Run(ctx, newRootCmd(), args, stdin, stdout, stderr)
}

// newRootCmd is the whole command tree.
func newRootCmd() *cobra.Command {
	return cli.NewRoot(&cli.Full{
		Root:      []*cobra.Command{newAgentCmd(), newClusterCmd(), newBenchCmd(), newUICmd(), newBenchRankCmd(), newBenchProbeCmd(), newRankExecCmd()},
		SimPlot:   newPlotCmd(),
		SimClosed: newSimClosedCmd(),
	})
}
