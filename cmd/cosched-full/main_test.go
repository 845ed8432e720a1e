package main

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/proctest"
)

// asCosched makes this test binary run as cosched (main) instead of the
// tests: the tests run `cosched …` as processes with it, and the agents
// those start run it again for their rank shim and benchmark ranks.
const asCosched = "COSCHED_TEST_AS_COSCHED"

func TestMain(m *testing.M) {
	// A rank shim of another user's rank has a clean environment: its
	// first argument says what it is.
	if os.Getenv(asCosched) == "1" || len(os.Args) > 1 && os.Args[1] == "__rank-exec" {
		main()
	}
	// Whatever this process starts from its own binary is cosched: the
	// agents of an in-process `cluster up`, their ranks.
	os.Setenv(asCosched, "1")
	os.Setenv("GORACE", childRace)
	os.Exit(m.Run())
}

// childRace is the race detector's setting for the processes the tests
// start from this binary: without atexit_sleep_ms=0 every race-built
// process sleeps a second as it exits, and a cluster's stop waits that
// second per agent (CI's loaded 2-core machine ran a 5 s bound out).
const childRace = "atexit_sleep_ms=0"

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
// directory dir (by their output under dir: other tests on the machine run
// jobs of the same numbers in other clusters).
func jobPIDs(t *testing.T, dir string, id int64) []int {
	t.Helper()
	pids, err := proctest.JobPIDs(id, proctest.OutputUnder(dir))
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// procState is a process's state letter (0 if gone).
func procState(pid int) byte { return proctest.State(pid) }

var busy = []string{"sh", "-c", "while :; do :; done"}
