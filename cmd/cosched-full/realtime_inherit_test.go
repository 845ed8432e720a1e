package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A cosched process started by a real-time parent (here: this test's
// thread at SCHED_FIFO, as a test binary running agents in process is)
// does not keep that policy: `cluster up` and the agent it starts without
// --realtime-priority run at the normal one. Before, they inherited it,
// and several of them spinning at real-time priority starved a 2-core
// machine for 14 minutes.
func TestCoschedDropsAnInheritedRealtimePolicy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (SCHED_FIFO)")
	}
	state := t.TempDir()
	env := append(os.Environ(), "COSCHED_STATE_DIR="+state)
	t.Cleanup(func() {
		cmd := coschedCmd("cluster", "down")
		cmd.Env = env
		cmd.Run()
	})
	func() {
		// Fork from a real-time thread: the child inherits its policy.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		size := uint32(unsafe.Sizeof(unix.SchedAttr{}))
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: size, Policy: unix.SCHED_FIFO, Priority: 1}, 0); err != nil {
			t.Fatal(err)
		}
		defer unix.SchedSetAttr(0, &unix.SchedAttr{Size: size, Policy: unix.SCHED_NORMAL}, 0)
		cmd := coschedCmd("cluster", "up", "-N", "1", "--realtime-priority", "0")
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("cluster up: %v\n%s", err, out)
		}
	}()
	var rec struct {
		Agents []struct{ PID int } `json:"agents"`
	}
	b, err := os.ReadFile(filepath.Join(state, "cluster.json"))
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err != nil || len(rec.Agents) != 1 {
		t.Fatalf("cluster record: %v %s", err, b)
	}
	pid := rec.Agents[0].PID
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "stat"))
		if err != nil {
			continue // the thread ended
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if policy := fields[41-3]; policy != "0" {
			t.Errorf("agent %d thread %s runs at policy %s, want 0 (normal)", pid, task.Name(), policy)
		}
	}
}
