package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// asCosched makes this test binary run as cosched (main) instead of the
// tests: the tests run `cosched …` as processes with it, and the agents
// those start run it again for their rank shim and benchmark ranks.
const asCosched = "COSCHED_TEST_AS_COSCHED"

func TestMain(m *testing.M) {
	if os.Getenv(asCosched) == "1" {
		main()
	}
	// Whatever this process starts from its own binary is cosched: the
	// agents of an in-process `cluster up`, their ranks.
	os.Setenv(asCosched, "1")
	os.Exit(m.Run())
}

// coschedCmd is `cosched args…` as a process (this binary, see TestMain).
func coschedCmd(args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return exec.Command(exe, args...)
}

// eventually retries f until it succeeds or the (generous) timeout passes.
func eventually(t *testing.T, timeout time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobPIDs finds the live processes of a job of the cluster in state
// directory dir: by their COSCHED_JOB environment variable (the shim passes
// it on to the program) and their standard output, a rank file under dir.
// The output, unlike the parent, survives a killed agent, and other tests
// on the machine run jobs of the same numbers in other clusters.
func jobPIDs(t *testing.T, dir string, id int64) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	want := []byte("COSCHED_JOB=" + strconv.FormatInt(id, 10) + "\x00")
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !strings.Contains("\x00"+string(env), "\x00"+string(want)) {
			continue
		}
		out, err := os.Readlink(filepath.Join("/proc", e.Name(), "fd", "1"))
		if err != nil || !strings.HasPrefix(out, dir+string(filepath.Separator)) {
			continue
		}
		if procState(pid) == 'Z' || procState(pid) == 0 {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// procState is a process's state letter from /proc/pid/stat (0 if gone).
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

var busy = []string{"sh", "-c", "while :; do :; done"}
