package localcluster

import (
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A process a forker starts with the parent-death signal lives while the
// forker does, even as the runtime retires other threads, and gets
// SIGTERM when the forker closes (its thread exits): the link a Temporary
// cluster's agents have with the command.
func TestForkerLinksTheChildToItsThread(t *testing.T) {
	t.Run("any thread", func(t *testing.T) { testForkerLinks(t, newForker()) })
	// The main thread never exits (the runtime wedges it when a goroutine
	// locked to it ends): a forker that starts there must move off it, or
	// its children never get their signal (they did, one run in several).
	t.Run("started on the main thread", func(t *testing.T) {
		f := &forker{reqs: make(chan forkReq), done: make(chan struct{})}
		onMainThread(func() {
			if unix.Gettid() != unix.Getpid() {
				t.Error("onMainThread ran elsewhere")
			}
			f.loop() // returns once the loop runs on another thread
		})
		testForkerLinks(t, f)
	})
}

func testForkerLinks(t *testing.T, f *forker) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		f.close()
		t.Skip("no sleep:", err)
	}
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
