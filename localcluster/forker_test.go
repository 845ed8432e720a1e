package localcluster

import (
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A process a forker starts with the parent-death signal lives while the
// forker does, even as the runtime retires other threads, and gets
// SIGTERM when the forker closes (its thread exits): the link a Temporary
// cluster's agents have with the command.
func TestForkerLinksTheChildToItsThread(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep:", err)
	}
	f := newForker()
	p, err := startDetached(sleep, []string{"60"}, nil, filepath.Join(t.TempDir(), "log"), true, f.start)
	if err != nil {
		f.close()
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(p.pid, syscall.SIGKILL) })
	// Threads retired by goroutines that exit locked: none is the forker's.
	for range 8 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread()
		}()
		<-done
	}
	select {
	case err := <-p.exited:
		t.Fatalf("the child died while its forker lives: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	f.close()
	select {
	case err := <-p.exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Fatalf("the child ended with %v, want SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the child still runs 30 s after its forker closed")
	}
}
