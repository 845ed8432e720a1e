// Command cosched is the buffered-coscheduling and gang-scheduling runtime
// and its job scheduling simulator. Run `cosched --help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/sigrun"
	"github.com/cosched/cosched/internal/version"
	"github.com/cosched/cosched/jss/swf"
	"github.com/cosched/cosched/node"
)

func main() {
	// Whatever started this process, it starts at the normal policy: an
	// inherited real-time one would let a busy command starve the machine.
	// The agent raises itself if told to.
	if _, err := node.DropRealtime(); err != nil {
		fmt.Fprintf(os.Stderr, "cosched: warning: running at an inherited real-time priority: %v\n", err)
	}
	os.Exit(sigrun.Run("cosched", stopGrace, os.Stderr, func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}))
}

// stopGrace is how long a command has, after SIGINT or SIGTERM, to stop by
// itself before the process exits anyway. Commands stop within a second
// (their loops watch the context, reads of standard input are
// interruptible); the rest of the grace is for clean-ups that take time,
// such as stopping a benchmark's cluster and writing what it measured. It
// is a safety net for a clean-up that hangs. A second signal exits at once.
const stopGrace = 10 * time.Second

// run executes the command line args and returns the process exit status:
// 0 on success, 1 on failure, 2 on a usage error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil && ctx.Err() != nil && cmd.Annotations[stopAnnotation] != stopClean {
		// A command that returned normally after a signal stopped early:
		// its output is not the complete answer.
		err = context.Cause(ctx)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "cosched: %s\n", userMessage(err))
	var status exitStatusError
	if errors.As(err, &status) {
		return status.code
	}
	if isUsage(err) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", usageCommand(root, args))
		return 2
	}
	return 1
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "cosched",
		Short:         "Buffered coscheduling, gang scheduling and backfilling: runtime and simulator",
		SilenceUsage:  true, // errors are printed once, by run
		SilenceErrors: true,
		Version:       version.String(buildVersion),
	}
	root.SetVersionTemplate("cosched {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{suggestFlag(cmd, err)} })
	root.AddCommand(newSimCmd(), newAgentCmd(), newClusterCmd(), newSubmitCmd(), newQueueCmd(), newCancelCmd(), newShowCmd(), newNodesCmd(), newOperatorCmd(), newOutputCmd(), newBenchCmd(), newBenchRankCmd(), newBenchProbeCmd(), newRankExecCmd(), newUICmd())
	addHelp(root)
	return root
}

// buildVersion is set at link time by release builds:
// go build -ldflags "-X main.buildVersion=v1.2.3" ./cmd/cosched
var buildVersion string

// A command annotated stopAnnotation: stopClean (a daemon) ends normally on
// SIGINT or SIGTERM; any other command stopped by a signal fails.
const (
	stopAnnotation = "cosched-signal-stop"
	stopClean      = "clean"
)

// internalPrefixes are the package names that the libraries put before
// their errors ("jss: ", "swf: "): context for a developer, noise for a
// user, who is shown the file, line, flag or value instead.
var internalPrefixes = map[string]bool{
	"jss": true, "swf": true, "gang": true, "node": true, "workload": true, "sweep": true, "closed": true,
	"nowsim": true, "experiment": true, "profile": true, "report": true, "plot": true, "strobe": true,
	"relay": true, "comm": true, "bench": true, "now": true, "hosts": true, "pfcfs": true, "verify": true,
	"metrics": true, "sample": true, "atomicfile": true, "frame": true, "localcluster": true,
}

// userMessage is err as a user reads it: a problem in an input file is
// its file:line and what is wrong there; otherwise the message without
// the packages' prefixes.
func userMessage(err error) string {
	var pe *swf.ParseError
	if errors.As(err, &pe) && pe.File != "" {
		return pe.Error()
	}
	parts := strings.Split(err.Error(), ": ")
	kept := parts[:0]
	for i, p := range parts {
		if internalPrefixes[p] && i < len(parts)-1 {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, ": ")
}

// exitStatusError is a failure with its own exit status (submit --wait:
// the job's).
type exitStatusError struct {
	code int
	err  error
}

func (e exitStatusError) Error() string { return e.err.Error() }
func (e exitStatusError) Unwrap() error { return e.err }

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
