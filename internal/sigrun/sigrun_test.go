package sigrun

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// interrupt sends this process SIGINT once cmd runs.
func interrupt(t *testing.T, running <-chan struct{}) {
	t.Helper()
	go func() {
		<-running
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
			t.Error(err)
		}
	}()
}

// A command a signal stopped fails with 128+signal; one that ends cleanly
// keeps its 0; the context's cause names the signal.
func TestFirstSignalCancels(t *testing.T) {
	for _, code := range []int{1, 0} {
		running := make(chan struct{})
		interrupt(t, running)
		var cause error
		got := Run("x", time.Minute, &bytes.Buffer{}, func(ctx context.Context) int {
			close(running)
			<-ctx.Done()
			cause = context.Cause(ctx)
			return code
		})
		want := map[int]int{1: 130, 0: 0}[code]
		if got != want || cause == nil || cause.Error() != "SIGINT received" {
			t.Errorf("command returning %d: status %d, cause %v; want %d, SIGINT received", code, got, cause, want)
		}
	}
}

// A second signal, or the end of the grace, returns without the command.
func TestSecondSignalAndGraceExit(t *testing.T) {
	running := make(chan struct{})
	interrupt(t, running)
	var stderr bytes.Buffer
	got := Run("x", time.Minute, &stderr, func(ctx context.Context) int {
		close(running)
		<-ctx.Done()
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
			t.Error(err)
		}
		select {} // a clean-up that hangs
	})
	if got != 130 || !strings.Contains(stderr.String(), "x: second SIGINT: exiting now") {
		t.Errorf("second signal: status %d, stderr %q", got, stderr.String())
	}
	running = make(chan struct{})
	interrupt(t, running)
	stderr.Reset()
	got = Run("x", 10*time.Millisecond, &stderr, func(ctx context.Context) int {
		close(running)
		select {}
	})
	if got != 130 || !strings.Contains(stderr.String(), "x: did not stop within 10ms of SIGINT: exiting now") {
		t.Errorf("grace: status %d, stderr %q", got, stderr.String())
	}
}
