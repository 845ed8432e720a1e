package localcluster

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRecordsLiveAgents: a directory is in use while an agent of a cluster
// recorded in it (or two levels down, calibrate's layout) runs, or while
// a record there cannot be read; not once the agents are gone.
func TestRecordsLiveAgents(t *testing.T) {
	dir := t.TempDir()
	if RecordsLiveAgents(dir) {
		t.Fatal("an empty directory is in use")
	}
	// A live process whose command line says agent, as alive checks.
	agent := exec.Command("/bin/sh", "-c", "sleep 60; :", "agent")
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer agent.Process.Kill()
	writeRecord(t, filepath.Join(dir, "bcs"), agent.Process.Pid)
	writeRecord(t, filepath.Join(dir, "space"), 1<<22+12345) // beyond pid_max's default
	if !RecordsLiveAgents(dir) {
		t.Error("a live agent recorded in bcs/: not in use")
	}
	agent.Process.Kill()
	agent.Wait()
	if RecordsLiveAgents(dir) {
		t.Error("no agent alive: still in use")
	}
	if err := os.WriteFile(File(dir), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !RecordsLiveAgents(dir) {
		t.Error("an unreadable record: not in use")
	}
}

// writeRecord records in dir a cluster of one agent, pid.
func writeRecord(t *testing.T, dir string, pid int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(Cluster{Agents: []Agent{{Ready: Ready{Name: "a0", PID: pid}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(File(dir), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
