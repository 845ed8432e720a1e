package proctest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A child with COSCHED_JOB in its environment is found, with its state and
// parent; once it has ended it is not.
func TestFindsARankAndForgetsIt(t *testing.T) {
	const job = 987654321
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), "COSCHED_JOB="+strconv.Itoa(job))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mine := func(r Rank) bool { return r.PPID == os.Getpid() }
	pids, err := JobPIDs(job, mine)
	if err != nil || len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("JobPIDs = %v, %v; want [%d]", pids, err, cmd.Process.Pid)
	}
	if s := State(cmd.Process.Pid); s != 'S' && s != 'R' {
		t.Errorf("State = %q, want S or R", s)
	}
	if p := Parent(cmd.Process.Pid); p != os.Getpid() {
		t.Errorf("Parent = %d, want %d", p, os.Getpid())
	}
	if pids, _ := JobPIDs(job+1, mine); len(pids) != 0 {
		t.Errorf("another job's ranks: %v", pids)
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids, _ := JobPIDs(job, mine)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still found after it ended: %v", pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := State(cmd.Process.Pid); s != 0 {
		t.Errorf("State of a reaped process = %q, want 0", s)
	}
}

// Where names a sleeping process's state and wait channel and, with gdb
// installed, its stack, which goes through the C library's nanosleep.
func TestWhereSaysWhereAProcessWaits(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var w string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// until the exec is through and it sleeps
		if w = Where(cmd.Process.Pid); strings.Contains(w, "state S") || time.Now().After(deadline) {
			break
		}
	}
	first, _, _ := strings.Cut(w, "\n")
	if !strings.Contains(first, "state S, wchan ") || strings.HasSuffix(first, "wchan ") {
		t.Fatalf("Where says %q, want state S and a wait channel", w)
	}
	if _, err := exec.LookPath("gdb"); err != nil {
		t.Log("no gdb (.ci/run installs it): the stack is not checked")
		return
	}
	if !strings.Contains(w, "#0 ") || !strings.Contains(w, "nanosleep") {
		t.Fatalf("Where says %q, want a stack through nanosleep", w)
	}
}
