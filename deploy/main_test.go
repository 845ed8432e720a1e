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

// coschedProc says what live (not zombie) cosched process pid is: an
// agent, an agent's cleanup guard (`agent --cleanup --when-gone`, which
// outlives its agent only to clean up after its death), or neither ("").
func coschedProc(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return ""
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	switch {
	case err != nil || !strings.Contains(string(cmdline), "\x00agent\x00"):
		return ""
	case strings.Contains(string(cmdline), "\x00--when-gone\x00"):
		return "guard"
	}
	return "agent"
}

// agentsUnder lists the live cosched agents whose command line mentions
// dir (their state directory): the agents a test started, not others'.
func agentsUnder(dir string) []int { return coschedUnder(dir, "agent") }

// guardsUnder lists the live cleanup guards of the agents agentsUnder
// lists.
func guardsUnder(dir string) []int { return coschedUnder(dir, "guard") }

func coschedUnder(dir, kind string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) && coschedProc(pid) == kind {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAgentsUnder is a test's last resort: SIGKILL its own leftover agents.
func killAgentsUnder(t *testing.T, dir string) {
	for _, pid := range append(agentsUnder(dir), guardsUnder(dir)...) {
		t.Errorf("%s pid %d (state under %s) left running; killing it", coschedProc(pid), pid, dir)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	time.Sleep(50 * time.Millisecond)
}
