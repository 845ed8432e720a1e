// Command cosched is the buffered-coscheduling and gang-scheduling runtime
// and its job scheduling simulator. Run `cosched --help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/node"
)

func main() {
	// Whatever started this process, it starts at the normal policy: an
	// inherited real-time one would let a busy command starve the machine.
	// The agent raises itself if told to.
	if _, err := node.DropRealtime(); err != nil {
		fmt.Fprintf(os.Stderr, "cosched: warning: running at an inherited real-time priority: %v\n", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the process exit status:
// 0 on success, 1 on failure, 2 on a usage error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "cosched: %v\n", err)
	if isUsage(err) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", usageCommand(root, args))
		return 2
	}
	return 1
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "cosched",
		Short: "Buffered coscheduling, gang scheduling and backfilling: runtime and simulator",
		Long: `cosched schedules parallel jobs on a cluster with buffered coscheduling (BCS),
gang scheduling or space sharing with backfilling, and simulates the same
scheduler core on workload traces.`,
		SilenceUsage:  true, // errors are printed once, by run
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newSimCmd(), newAgentCmd(), newClusterCmd(), newSubmitCmd(), newQueueCmd(), newCancelCmd(), newNodesCmd(), newOutputCmd(), newBenchCmd(), newBenchRankCmd(), newBenchProbeCmd(), newRankExecCmd())
	return root
}

// usageError marks errors in the command line itself (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func isUsage(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	// cobra reports unknown commands and wrong argument counts as plain errors.
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires "} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func usageCommand(root *cobra.Command, args []string) string {
	if cmd, _, err := root.Find(args); err == nil && cmd != nil {
		return cmd.CommandPath()
	}
	return root.Name()
}
