package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cosched/cosched/internal/version"
	"github.com/cosched/cosched/jss/swf"
)

// stopGrace is how long a command has, after SIGINT or SIGTERM, to stop by
// itself before the process exits anyway. Commands stop within a second
// (their loops watch the context, reads of standard input are
// interruptible); the rest of the grace is for clean-ups that take time,
// such as stopping a benchmark's cluster and writing what it measured. It
// is a safety net for a clean-up that hangs. A second signal exits at once.
const StopGrace = 10 * time.Second

// Run executes the command line args on root (NewRoot's) and returns the
// process exit status: 0 on success, 1 on failure, 2 on a usage error.
func Run(ctx context.Context, root *cobra.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil && ctx.Err() != nil && cmd.Annotations[StopAnnotation] != StopClean {
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

// NewRoot is the command tree of cosched: every command, the full
// binary's from full (cmd/cosched-full), or, when full is nil, stubs in
// their places that say so (see NeedsFull: the light binary executes the
// full one for them instead of running them).
func NewRoot(full *Full) *cobra.Command {
	root := newRootOnly()
	heavy, simPlot, simClosed := full.commands()
	root.AddCommand(newSimCmd(simPlot, simClosed))
	for _, c := range lightCommands() {
		root.AddCommand(c.build())
	}
	root.AddCommand(heavy...)
	return root
}

// NewLightRoot is NewRoot(nil) for the command line args (without the
// program name), built for a start-up as short as a Go "hello, world":
// when args[0] names one of the light binary's own commands, the root has
// that command alone. Its siblings would be built for nothing: the answer
// (output, help text, errors, exit status) is the same, and only the
// root's help, `help`, completion and an unknown command's suggestion read
// the others, which build the whole tree.
func NewLightRoot(args []string) *cobra.Command {
	if len(args) == 0 {
		return NewRoot(nil)
	}
	var cmd *cobra.Command
	if args[0] == "sim" {
		_, simPlot, simClosed := (*Full)(nil).commands()
		cmd = newSimCmd(simPlot, simClosed)
	}
	for _, c := range lightCommands() {
		if c.name == args[0] {
			cmd = c.build()
		}
	}
	if cmd == nil {
		return NewRoot(nil)
	}
	root := newRootOnly()
	root.AddCommand(cmd)
	// Nor is cobra's completion command built, at every call, for a
	// command line that runs another.
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}

// lightCommand is one of the client commands below the root, by name, so
// that NewLightRoot builds only the one it runs.
type lightCommand struct {
	name  string
	build func() *cobra.Command
}

// lightCommands are the client commands in the order NewRoot adds them
// (after sim); each name is its command's Name() (TestLightRootNames).
func lightCommands() []lightCommand {
	return []lightCommand{
		{"submit", newSubmitCmd}, {"queue", newQueueCmd}, {"cancel", newCancelCmd}, {"show", newShowCmd},
		{"nodes", newNodesCmd}, {"operator", newOperatorCmd}, {"output", newOutputCmd},
	}
}

// newRootOnly is the root command without its subcommands.
func newRootOnly() *cobra.Command {
	root := &cobra.Command{
		Use:           "cosched",
		Short:         "Buffered coscheduling, gang scheduling and backfilling: runtime and simulator",
		SilenceUsage:  true, // errors are printed once, by Run
		SilenceErrors: true,
		Version:       Version(),
	}
	root.SetVersionTemplate("cosched {{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{suggestFlag(cmd, err)} })
	// The long help and examples are read from the help files only for
	// the command whose help is shown: reading them all cost a tenth of a
	// CLI call's start-up.
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		loadHelp(cmd)
		help(cmd, args)
	})
	return root
}

// Version is what `cosched --version` prints after "cosched ".
func Version() string { return version.String(BuildVersion) }

// IsVersion says whether the command line args (without the program name)
// only asks for the version (`--version` or `-v`), which a binary can then
// answer as the root command would (VersionLine) without building it.
func IsVersion(args []string) bool {
	return len(args) == 1 && (args[0] == "--version" || args[0] == "-v")
}

// VersionLine is the root command's answer to --version.
func VersionLine() string { return "cosched " + Version() + "\n" }

// BuildVersion is set at link time by release builds, in both binaries:
// go build -ldflags "-X github.com/cosched/cosched/internal/cli.BuildVersion=v1.2.3" ./cmd/...
var BuildVersion string

// A command annotated StopAnnotation: StopClean (a daemon) ends normally on
// SIGINT or SIGTERM; any other command stopped by a signal fails.
const (
	StopAnnotation = "cosched-signal-stop"
	StopClean      = "clean"
)

// isInternalPrefix says whether p is a package name that the libraries put
// before their errors ("jss: ", "swf: "): context for a developer, noise
// for a user, who is shown the file, line, flag or value instead. (A
// switch, not a map: nothing to build at every start-up.)
func isInternalPrefix(p string) bool {
	switch p {
	case "jss", "swf", "gang", "node", "workload", "sweep", "closed",
		"nowsim", "experiment", "profile", "report", "plot", "strobe",
		"relay", "comm", "bench", "now", "hosts", "pfcfs", "verify",
		"metrics", "sample", "atomicfile", "frame", "localcluster":
		return true
	}
	return false
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
		if isInternalPrefix(p) && i < len(parts)-1 {
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

// Usage marks err as an error in the command line itself (exit status 2),
// for the full binary's commands.
func Usage(err error) error { return usageError{err} }
