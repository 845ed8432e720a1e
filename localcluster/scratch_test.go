package localcluster

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestScratchSweep: a scratch directory is swept by the next NewScratch
// only when its maker is gone (its lock free: a lock held through another
// open file, as another process's is, keeps it), it was not kept, and no
// agent of a cluster recorded in it still runs.
func TestScratchSweep(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const prefix = "cosched-test-scratch-"

	live, _, err := NewScratch(prefix) // its maker lives: this test
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := NewScratch(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.Keep(); err != nil {
		t.Fatal(err)
	}
	abandonedDir := scratchOfDeadMaker(t, tmp, prefix)

	// A killed benchmark whose agent still finishes its stop: a live
	// process whose command line says agent, recorded in a cluster two
	// levels down (calibrate's layout: one cluster per run).
	agentDir := scratchOfDeadMaker(t, tmp, prefix)
	agent := exec.Command("/bin/sh", "-c", "sleep 60; :", "agent")
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer agent.Process.Kill()
	writeRecord(t, filepath.Join(agentDir, "bcs"), agent.Process.Pid)
	// Another whose agent is gone.
	goneDir := scratchOfDeadMaker(t, tmp, prefix)
	writeRecord(t, goneDir, 1<<22+12345) // beyond pid_max's default: no such process

	other := filepath.Join(tmp, prefix+"not-a-scratch")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}

	s, swept, err := NewScratch(prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Remove()
	slices.Sort(swept)
	want := []string{abandonedDir, goneDir}
	slices.Sort(want)
	if !slices.Equal(swept, want) {
		t.Fatalf("swept %q, want %q", swept, want)
	}
	for _, d := range want {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", d, err)
		}
	}
	for _, d := range []string{live.Dir(), kept.Dir(), agentDir, other, s.Dir()} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s should stay: %v", d, err)
		}
	}

	// Once the agent is gone, the next sweep takes its directory too.
	agent.Process.Kill()
	agent.Wait()
	if got := sweepScratch(tmp, prefix); !slices.Equal(got, []string{agentDir}) {
		t.Errorf("after the agent died, swept %q, want %q", got, agentDir)
	}
	if err := live.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live.Dir()); !os.IsNotExist(err) {
		t.Errorf("Remove left %s (%v)", live.Dir(), err)
	}
}

// scratchOfDeadMaker is a scratch directory as a killed maker leaves it:
// its lock file there, locked by no one.
func scratchOfDeadMaker(t *testing.T, tmp, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp(tmp, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, scratchLock), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
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
