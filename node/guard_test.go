package node_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/node"
	"github.com/cosched/cosched/node/rank"
)

// The cleanup guard's wait: CleanupWhenGone returns only once the
// process it is given has ended, and then cleans; given a process that
// is not the one named (another start time, a pid gone) it does not wait;
// and when another life of the agent holds the state directory by then it
// leaves the cleaning to that life.
func TestCleanupWhenGoneWaitsForItsAgent(t *testing.T) {
	dir := t.TempDir()
	cfg := node.Config{Name: "guarded", StateDir: dir, Cgroups: "none"} // no Log: a Nop one
	agent, ticks := sleeper(t)
	type result struct {
		n   int
		err error
	}
	cleaned := make(chan result, 1)
	go func() {
		n, err := node.CleanupWhenGone(context.Background(), cfg, agent.Process.Pid, ticks)
		cleaned <- result{n, err}
	}()
	select {
	case r := <-cleaned:
		t.Fatalf("CleanupWhenGone returned %+v while its agent runs", r)
	case <-time.After(300 * time.Millisecond):
	}
	_ = agent.Process.Kill()
	_ = agent.Wait()
	select {
	case r := <-cleaned:
		if r.err != nil || r.n != 0 {
			t.Fatalf("after the agent's death: %d cleaned, %v; want 0, nil", r.n, r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("CleanupWhenGone still waits 20 s after its agent died")
	}

	// A process of another start time is not the agent: no wait.
	other, _ := sleeper(t)
	done := make(chan error, 1)
	go func() {
		_, err := node.CleanupWhenGone(context.Background(), cfg, other.Process.Pid, ticks+1)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("CleanupWhenGone waits for a process that is not the agent it names")
	}

	// Another life holds the state directory: it cleaned at its start.
	holdStateDir(t, dir)
	if n, err := node.CleanupWhenGone(context.Background(), cfg, agent.Process.Pid, ticks); err != nil || n != 0 {
		t.Fatalf("beside another life: %d cleaned, %v; want 0, nil", n, err)
	}

	// Stopped while it waits: ctx's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	live, liveTicks := sleeper(t)
	if _, err := node.CleanupWhenGone(ctx, cfg, live.Process.Pid, liveTicks); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("stopped while waiting: %v, want context canceled", err)
	}
}

// sleeper is a process that runs until the test ends, and its start
// time.
func sleeper(t *testing.T) (*exec.Cmd, uint64) {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ticks, err := rank.StartTicks(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, ticks
}

// holdStateDir takes the state directory's lock until the test ends, as
// a running agent holds it.
func holdStateDir(t *testing.T, dir string) {
	t.Helper()
	lock, err := os.OpenFile(filepath.Join(dir, "agent.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
}

func TestParseProcess(t *testing.T) {
	if pid, ticks, err := node.ParseProcess(node.FormatProcess(42, 12345)); err != nil || pid != 42 || ticks != 12345 {
		t.Fatalf("round trip: %d %d %v", pid, ticks, err)
	}
	for _, bad := range []string{"", "42", "42:", ":7", "x:7", "0:7", "-3:7", "42:-1", "42:7:8"} {
		if _, _, err := node.ParseProcess(bad); err == nil || !strings.Contains(err.Error(), "want PID:TICKS") {
			t.Errorf("ParseProcess(%q) = %v, want refused", bad, err)
		}
	}
}

// With kept ranks the guard waits for the agent's next life, up to its
// grace: it stops waiting at once when a next life holds the state
// directory (which takes the ranks) and when nothing is kept any more
// (cluster down killed them), not after the grace (an hour here).
// TestKeptRanksWaitTheGraceForTheNextLife (cmd/cosched-full) has the
// rest: ranks kept through a restart, killed when none came.
func TestCleanupWhenGoneWaitsForTheNextLifeOfKeptRanks(t *testing.T) {
	dir := t.TempDir()
	cfg := node.Config{Name: "kept", StateDir: dir, Cgroups: "none", KeepRanks: true, ControllerGrace: time.Hour}
	agent, ticks := sleeper(t)
	_ = agent.Process.Kill()
	_ = agent.Wait()
	returns := func(what string) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := node.CleanupWhenGone(context.Background(), cfg, agent.Process.Pid, ticks)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: still waiting after 20 s (its grace is an hour)", what)
		}
	}
	returns("nothing kept")
	holdStateDir(t, dir)
	returns("a next life holds the state directory")
}

// A guard waits the controller's grace its agent recorded, and its agent's
// own when the record is absent or unreadable.
func TestGuardGraceIsTheControllers(t *testing.T) {
	dir := t.TempDir()
	cfg := node.Config{Name: "g", StateDir: dir, ControllerGrace: time.Hour}
	for _, tc := range []struct {
		file  string // "" : none
		grace time.Duration
		whose string
	}{
		{"", time.Hour, "the agent's own"},
		{"3s\n", 3 * time.Second, "the controller's"},
		{"soon\n", time.Hour, "the agent's own"},
		{"-3s\n", time.Hour, "the agent's own"},
	} {
		path := filepath.Join(dir, "controller-grace")
		os.Remove(path)
		if tc.file != "" {
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if grace, whose := node.GuardGrace(cfg); grace != tc.grace || whose != tc.whose {
			t.Errorf("record %q: %v (%s), want %v (%s)", tc.file, grace, whose, tc.grace, tc.whose)
		}
	}
}
