// Package sigrun runs a command under SIGINT and SIGTERM as a shell user
// expects: the first signal cancels the command's context and lets it stop
// by itself within a grace period, a second signal exits at once, and a
// command a signal stopped exits 128+signal.
package sigrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Run runs cmd with a context the first SIGINT or SIGTERM cancels (its
// cause names the signal) and returns the exit status: cmd's, or, for a
// command that was stopped by a signal and failed, 128+signal (130 for
// SIGINT, 143 for SIGTERM) as shells report it; a command that completed
// cleanly after a signal (a daemon's orderly stop) keeps its 0. After
// grace, or at a second signal, Run returns without waiting for cmd,
// saying so on stderr after name (the program's name): the caller exits
// the process, which ends cmd.
func Run(name string, grace time.Duration, stderr io.Writer, cmd func(ctx context.Context) int) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan int, 1)
	go func() { done <- cmd(ctx) }()
	var got os.Signal
	var timeout <-chan time.Time
	for {
		select {
		case code := <-done:
			if got != nil && code != 0 {
				return Status(got)
			}
			return code
		case s := <-sigs:
			if got != nil {
				fmt.Fprintf(stderr, "%s: second %s: exiting now\n", name, signalName(s))
				return Status(s)
			}
			got = s
			cancel(fmt.Errorf("%s received", signalName(s)))
			timeout = time.After(grace)
		case <-timeout:
			fmt.Fprintf(stderr, "%s: did not stop within %v of %s: exiting now\n", name, grace, signalName(got))
			return Status(got)
		}
	}
}

func signalName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// Status is the exit status a shell shows for a process a signal
// stopped: 128 + the signal's number.
func Status(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 130
}
