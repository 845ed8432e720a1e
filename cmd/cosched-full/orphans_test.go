package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/internal/proctest"
	"github.com/cosched/cosched/internal/scratch"
	"github.com/cosched/cosched/localcluster"
)

// orphanBound is how long a killed benchmark's agents and ranks may take
// to be gone: an agent told by its parent-death signal (SIGTERM) stops
// within a second, or its own safety net exits it after cli.StopGrace;
// the rest is room for a loaded host. Not a speed goal.
const orphanBound = 3 * cli.StopGrace

// TestKilledBenchLeavesNoAgent: a benchmark killed with SIGKILL, so that
// none of its own clean-up runs (as after a second signal), leaves no
// agent and no rank: its agents get SIGTERM from their parent-death signal
// and stop their ranks in an orderly way; its state directory stays, and
// the next benchmark removes it.
func TestKilledBenchLeavesNoAgent(t *testing.T) {
	dir := t.TempDir()
	begin := time.Now()
	c, record, rec := startBenchStrobe(t, dir)
	t.Logf("measuring in %v", time.Since(begin).Round(time.Millisecond))
	state := filepath.Dir(record)
	ranks := func() []proctest.Rank {
		r, err := proctest.Ranks(proctest.OutputUnder(state))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	c.waitFor(t, "the ranks", func() bool { return len(ranks()) >= 2 })
	live := func() (left []string) {
		for _, a := range rec.Agents {
			if agentAlive(a.PID) && startTicks(a.PID) == a.StartTicks {
				left = append(left, fmt.Sprintf("agent %s (pid %d)", a.Name, a.PID))
			}
		}
		for _, r := range ranks() {
			left = append(left, fmt.Sprintf("rank of job %d (pid %d)", r.Job, r.PID))
		}
		return left
	}
	t.Cleanup(func() { // whatever a failure left
		for _, a := range rec.Agents {
			if agentAlive(a.PID) && startTicks(a.PID) == a.StartTicks {
				syscall.Kill(a.PID, syscall.SIGKILL)
			}
		}
		for _, r := range ranks() {
			syscall.Kill(r.PID, syscall.SIGKILL)
		}
	})

	t.Logf("started in %v", time.Since(begin).Round(time.Millisecond))
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-c.done
	killed := time.Now()
	deadline := killed.Add(orphanBound)
	for left := live(); len(left) > 0; left = live() {
		if time.Now().After(deadline) {
			t.Fatalf("%v after the benchmark was killed: %s", orphanBound, strings.Join(left, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("all gone %v after the kill", time.Since(killed).Round(time.Millisecond))
	// Stopped, not killed: each agent stopped its ranks itself.
	for _, a := range rec.Agents {
		log, err := os.ReadFile(a.Log)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "leaving the cluster and stopping ranks") {
			t.Errorf("agent %s did not stop in order (its log %s):\n%s", a.Name, a.Log, log)
		}
	}

	// Its state directory (the agents' logs) outlived it; the next
	// benchmark's removes it.
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("the killed benchmark's state directory: %v", err)
	}
	t.Setenv("TMPDIR", dir)
	next, swept, err := scratch.New("cosched-bench-strobe-", localcluster.RecordsLiveAgents)
	if err != nil {
		t.Fatal(err)
	}
	next.Remove()
	if !slices.Equal(swept, []string{state}) {
		t.Errorf("the next benchmark removed %q, want %q", swept, state)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", state, err)
	}
}

// startTicks is a process's start time (field 22 of /proc/PID/stat), 0 if
// it is gone: with the pid, who it is.
func startTicks(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 20 {
		return 0
	}
	var n uint64
	fmt.Sscan(f[19], &n)
	return n
}
