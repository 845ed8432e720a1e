package deploy_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	stopRealSlurm()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildCosched builds the binary the scripts run (and cosched-full beside
// it, which it executes for agent), once per test binary.
func buildCosched(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "cosched-deploy-test-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "cosched")
		out, err := exec.Command("go", "build", "-o", binDir, "../cmd/cosched", "../cmd/cosched-full").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// agentAlive reports whether pid is a live (not zombie) cosched agent.
func agentAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), "\x00agent\x00")
}

// agentsUnder lists the live cosched agents whose command line mentions
// dir (their state directory): the agents a test started, not others'.
func agentsUnder(dir string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) && agentAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAgentsUnder is a test's last resort: SIGKILL its own leftover agents.
func killAgentsUnder(t *testing.T, dir string) {
	for _, pid := range agentsUnder(dir) {
		t.Errorf("agent pid %d (state under %s) left running; killing it", pid, dir)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(50 * time.Millisecond)
}
