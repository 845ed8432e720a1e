// Command cosched is the buffered-coscheduling and gang-scheduling runtime
// and its job scheduling simulator. Run `cosched --help` for the commands.
//
// This is the light binary: the commands a user types often (the
// simulator, the client commands) start like a Go "hello, world". The
// commands that need the heavy libraries (agent, cluster, bench, ui, sim
// plot, sim closed) are in cosched-full (cmd/cosched-full), which it executes in its
// own place, as git runs git-CMD: same process, arguments, standard
// streams, signals and exit status.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/rtprio"
	"github.com/cosched/cosched/internal/sigrun"
)

func main() {
	// The version alone needs no command tree: answered before one is
	// built, as the root command would.
	if cli.IsVersion(os.Args[1:]) {
		os.Stdout.WriteString(cli.VersionLine())
		return
	}
	root := cli.NewLightRoot(os.Args[1:])
	if cli.NeedsFull(root, os.Args[1:]) {
		os.Exit(execFull())
	}
	// Whatever started this process, it starts at the normal policy: an
	// inherited real-time one would let a busy command starve the machine.
	if _, err := rtprio.DropRealtime(); err != nil {
		fmt.Fprintf(os.Stderr, "cosched: warning: running at an inherited real-time priority: %v\n", err)
	}
	os.Exit(sigrun.Run("cosched", cli.StopGrace, os.Stderr, func(ctx context.Context) int {
		return cli.Run(ctx, root, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}))
}

// execFull replaces this process by the full binary with the same
// arguments and environment (so the pid, a service manager's signals and
// the exit status are the full binary's own), and returns an exit status
// only if it cannot.
func execFull() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cosched: finding this binary, to run %s beside it: %v\n", cli.FullName, err)
		return 1
	}
	full, err := cli.FullPath(exe)
	if err == nil {
		err = syscall.Exec(full, os.Args, os.Environ())
		err = fmt.Errorf("executing %s: %w", full, err)
	}
	fmt.Fprintf(os.Stderr, "cosched: %v\n", err)
	return 1
}
