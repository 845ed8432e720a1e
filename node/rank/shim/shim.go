// Package shim is what runs inside a rank's start-up shim and keeper
// process (node/rank's package doc: "Lifecycle" and "Keepers"): the
// program side of the manager's protocol, with nothing but the standard
// library and x/sys. It is apart from node/rank, which links a logging
// library and the manager, so that the binary agents start every rank
// through (cmd/cosched-rank) links nothing else: every rank start pays
// that binary's package initialisation, and every kept rank its memory,
// for the rank's whole life (deps_test.go keeps it so).
package shim

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// ExitCode is the status with which Main reports any failure.
const ExitCode = 127

// KeeperArg starts Main's keeper mode: "--keep EXITFILE NFDS
// stopped|running AGENTPID -- program args...". AGENTPID is the parent
// the keeper was forked by: one it no longer has has died.
const KeeperArg = "--keep"

// Main is the body of the shim's process. args are its arguments
// verbatim: "--" followed by the program's argv (with cobra, set
// DisableFlagParsing so "--" is kept, or pass os.Args after the subcommand
// name), or KeeperArg and the keeper's arguments. The shim resolves
// argv[0] on PATH, stops its own process with SIGSTOP (the agent's SIGCONT
// releases it), and then executes the program with the inherited
// environment, so the program runs no instruction before that SIGCONT. It
// returns only on failure, after writing the reason to stderr, with
// ExitCode; the caller should exit with it.
//
// The shim re-arms Pdeathsig=SIGKILL on the thread that will call execve:
// the kernel keeps the parent-death signal per thread, the Go runtime may
// run this code on a thread other than the one the agent forked, and after
// execve only the exec'ing thread's setting survives. Without this a rank
// started stopped could outlive a killed agent.
func Main(args []string) int {
	if len(args) > 0 && args[0] == KeeperArg {
		if err := keeperMain(args[1:]); err != nil {
			fmt.Fprintf(os.Stderr, "cosched rank keeper: %v\n", err)
			return ExitCode
		}
		return 0
	}
	ppid := os.Getppid()
	if err := shim(args, ppid); err != nil {
		fmt.Fprintf(os.Stderr, "cosched rank shim: %v\n", err)
		return ExitCode
	}
	return 0 // not reached: shim returns only on failure
}

func shim(args []string, ppid int) error {
	if len(args) == 0 || args[0] != "--" {
		return fmt.Errorf("usage: -- program [args...] (got %q)", args)
	}
	argv := args[1:]
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("no program after --")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil && !errors.Is(err, exec.ErrDot) {
		return err
	}

	runtime.LockOSThread() // never unlocked: execve must run on this thread
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", err)
	}
	if os.Getppid() != ppid {
		return errors.New("the agent exited before the rank started")
	}
	// SIGSTOP must be directed at this thread (as raise(3) does), not at
	// the process: kill(getpid()) lets the kernel hand the signal to
	// another thread (the main one, if idle) and return to this one, which
	// could then reach execve before the group stop, losing the stop: the
	// program would run before Cont. Directed at this thread, the stop is
	// taken on the way out of tgkill, before execve.
	if err := unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGSTOP); err != nil {
		return fmt.Errorf("stopping itself: %w", err)
	}
	// Continued by the agent.
	if err := unix.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}
