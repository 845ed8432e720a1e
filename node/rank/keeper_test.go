package rank

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// keepMgr is a manager whose ranks are kept in dir/keep.
func keepMgr(t *testing.T, keep string) (*Manager, string) {
	return newManager(t, func(c *Config) { c.KeepDir, c.KeepOwner = keep, "n0" })
}

// A kept rank reports its program's status (not the keeper's), stopped
// ranks included, and leaves no record behind.
func TestKeeperReportsTheProgramsExit(t *testing.T) {
	keep := filepath.Join(t.TempDir(), "keep")
	m, dir := keepMgr(t, keep)
	mustStart(t, m, spec(dir, 1, 0, false, "sh", "-c", "exit 3"))
	pid := mustStart(t, m, spec(dir, 1, 1, true, "sh", "-c", "kill -TERM $$"))
	if err := m.Cont(1); err != nil {
		t.Fatal(err)
	}
	got := map[int]Exit{}
	for range 2 {
		e := nextExit(t, m)
		got[e.Rank] = e
	}
	if e := got[0]; e.Code != 3 || e.Err != nil {
		t.Errorf("rank 0: %+v, want code 3", e)
	}
	if e := got[1]; e.Signal != "terminated" || e.Err != nil || e.PID != pid {
		t.Errorf("rank 1: %+v, want terminated (pid %d)", e, pid)
	}
	for _, e := range got {
		m.Forget(e.Job, e.Rank, e.PID)
	}
	if left, _ := filepath.Glob(filepath.Join(keep, "*")); len(left) != 0 {
		t.Errorf("records left after Forget: %v", left)
	}
}

// A kept rank's end outlives an agent that dies before delivering it: the
// records stay until Forget, so the next life's Adopt reports the exit
// with the program's status; a Forget with another run's pid leaves them.
func TestKeptExitSurvivesItsUndeliveredReport(t *testing.T) {
	keep := filepath.Join(t.TempDir(), "keep")
	m1, dir := keepMgr(t, keep)
	pid := mustStart(t, m1, spec(dir, 5, 0, false, "sh", "-c", "exit 7"))
	if e := nextExit(t, m1); e.Code != 7 || e.PID != pid {
		t.Fatalf("exit %+v, want code 7 (pid %d)", e, pid)
	}
	// m1's agent dies here, its report never sent.
	m2, _ := keepMgr(t, keep)
	kept, err := m2.Adopt()
	if err != nil || len(kept) != 1 || kept[0].Alive || kept[0].PID != pid {
		t.Fatalf("Adopt: %+v, %v; want the ended rank", kept, err)
	}
	e := nextExit(t, m2)
	if e.Code != 7 || e.Err != nil || e.Job != 5 || e.PID != pid {
		t.Fatalf("the next life's exit %+v, want code 7 of pid %d", e, pid)
	}
	m2.Forget(5, 0, pid+1)
	if left, _ := filepath.Glob(filepath.Join(keep, "5.0.*")); len(left) != 2 {
		t.Fatalf("records after another run's Forget: %v, want both kept", left)
	}
	m2.Forget(5, 0, pid)
	if left, _ := filepath.Glob(filepath.Join(keep, "*")); len(left) != 0 {
		t.Errorf("records left after Forget: %v", left)
	}
}

// A keeper killed from outside fails its rank with that reason, and its
// program dies with it.
func TestKeeperKilledByHand(t *testing.T) {
	keep := filepath.Join(t.TempDir(), "keep")
	m, dir := keepMgr(t, keep)
	pid := mustStart(t, m, spec(dir, 2, 0, false, "sleep", "60"))
	var child int
	eventually(t, func() bool { child = childOf(pid); return child != 0 })
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	e := nextExit(t, m)
	if e.Err == nil || !strings.Contains(e.Err.Error(), "keeper") {
		t.Fatalf("exit %+v: want a lost keeper", e)
	}
	eventually(t, func() bool { return unix.Kill(child, 0) != nil })
}

// A second manager (the agent's next life) adopts a live keeper: it
// signals its group and reports its exit from the record.
func TestAdoptKeptRank(t *testing.T) {
	keep := filepath.Join(t.TempDir(), "keep")
	dir := t.TempDir()
	mark := filepath.Join(dir, "go")
	m1, err := NewManager(Config{Shim: []string{os.Args[0]}, KeepDir: keep, KeepOwner: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	pid := mustStart(t, m1, spec(dir, 3, 0, false, "sh", "-c", "while [ ! -e "+mark+" ]; do sleep 0.05; done; exit 5"))
	// As if m1's agent had died: it stays the keeper's parent (its reaper
	// reaps it) but no longer reads or removes its records.
	m1.mu.Lock()
	m1.jobs[3][0].kept = false
	m1.mu.Unlock()

	if _, err := ReadKept(keep, "other"); err == nil || !strings.Contains(err.Error(), "another agent") {
		t.Fatalf("foreign owner: %v", err)
	}
	m2, _ := keepMgr(t, keep)
	kept, err := m2.Adopt()
	if err != nil || len(kept) != 1 || !kept[0].Alive || kept[0].PID != pid {
		t.Fatalf("Adopt: %+v, %v", kept, err)
	}
	if live := m2.Live(); len(live) != 1 || live[0].PID != pid {
		t.Fatalf("Live: %+v", live)
	}
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e := nextExit(t, m2)
	if e.Code != 5 || e.Err != nil || e.Job != 3 {
		t.Fatalf("adopted exit %+v, want code 5", e)
	}
	if e := nextExit(t, m1); e.Code != 0 {
		t.Errorf("the keeper itself ended with %+v, want 0", e)
	}
	closeAndDrain(t, m1)
}

// A corrupt record refuses the directory, naming the file.
func TestAdoptRefusesACorruptRecord(t *testing.T) {
	keep := t.TempDir()
	bad := filepath.Join(keep, "4.0.keeper")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, _ := keepMgr(t, keep)
	if _, err := m.Adopt(); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("Adopt: %v, want an error naming %s", err, bad)
	}
}

// A keeper survives an agent that dies the moment it has started it, before
// the keeper's runtime could catch the agent's death (SIGUSR2): a running
// rank's program runs on, a stopped rank's keeper stays stopped. With the
// parent-death signal armed at the fork, the keepers die of it.
func TestKeeperSurvivesAnAgentDeadAtOnce(t *testing.T) {
	for round := range 5 { // the window is short: one round can miss it
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		dir := t.TempDir()
		cmd.Env = append(os.Environ(), agentEnv+"=keep", "COSCHED_RANK_TEST_DIR="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != unix.SIGKILL {
			t.Fatalf("helper agent: %v, want killed; stderr:\n%s", err, stderr.String())
		}
		var pids []int
		for _, f := range strings.Fields(string(out)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("helper agent said %q", out)
			}
			pids = append(pids, pid)
			t.Cleanup(func() { // its group: the keeper and its program
				_ = unix.Kill(-pid, unix.SIGKILL)
				_ = unix.Kill(-pid, unix.SIGCONT)
			})
		}
		if len(pids) != 2 {
			t.Fatalf("helper agent said %q, want 2 pids", out)
		}
		stopped, running := pids[0], pids[1]
		gone := func(pid int) bool { s := state(pid); return s == 0 || s == 'Z' || s == 'X' }
		eventually(t, func() bool {
			for _, pid := range pids {
				if gone(pid) {
					t.Fatalf("round %d: keeper pid %d died with its agent", round, pid)
				}
			}
			return childOf(running) != 0 && state(stopped) == 'T'
		})
		time.Sleep(100 * time.Millisecond) // a parent-death signal would have come
		if s := state(running); s != 'S' {
			t.Fatalf("round %d: the running rank's keeper (pid %d) is in state %q, want alive and waiting", round, running, s)
		}
		if prog := childOf(running); prog == 0 || state(prog) != 'S' {
			t.Fatalf("round %d: the running rank's program (pid %d) is not running on", round, prog)
		}
		if s := state(stopped); s != 'T' {
			t.Fatalf("round %d: the stopped rank's keeper (pid %d) is in state %q, want stopped", round, stopped, s)
		}
	}
}

// SIGUSR2 is the agent's death to a keeper whose parent is no longer the
// agent it was started by: a time-shared rank's keeper then stops its whole
// group. While that agent is its parent, SIGUSR2 changes nothing.
func TestKeeperStopsItsGroupWhenItsAgentIsGone(t *testing.T) {
	for _, gone := range []bool{false, true} {
		agent := os.Getpid() // its parent
		if gone {
			agent = 1 // alive, and not its parent: an agent it has lost
		}
		exitFile := filepath.Join(t.TempDir(), "exit")
		cmd := exec.Command(os.Args[0], keeperArg, exitFile, "3", "stopped", strconv.Itoa(agent), "--", "sleep", "1000")
		cmd.Env = append(os.Environ(), shimEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		keeper := cmd.Process.Pid
		t.Cleanup(func() {
			_ = unix.Kill(-keeper, unix.SIGKILL)
			_ = unix.Kill(-keeper, unix.SIGCONT)
			_ = cmd.Wait()
		})
		waitState(t, keeper, "T") // it stops itself until its first slice
		if err := unix.Kill(-keeper, unix.SIGCONT); err != nil {
			t.Fatal(err)
		}
		var prog int
		eventually(t, func() bool { prog = childOf(keeper); return prog != 0 })
		waitState(t, prog, "S")
		if err := unix.Kill(keeper, unix.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		if gone {
			waitState(t, keeper, "T")
			waitState(t, prog, "T")
			continue
		}
		time.Sleep(200 * time.Millisecond)
		if s, p := state(keeper), state(prog); s != 'S' || p != 'S' {
			t.Errorf("agent alive: keeper state %q, program %q after SIGUSR2, want both running on", s, p)
		}
	}
}

// helperKeepingAgent runs in a child test process (agentEnv "keep"): it
// starts a stopped and a running kept rank, prints their pids and kills
// itself the moment the last one has started.
func helperKeepingAgent() int {
	dir := os.Getenv("COSCHED_RANK_TEST_DIR")
	m, err := NewManager(Config{Shim: []string{os.Args[0]}, KeepDir: filepath.Join(dir, "keep"), KeepOwner: "n0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper agent:", err)
		return 1
	}
	for i, stopped := range []bool{true, false} {
		pid, err := m.Start(spec(dir, 1, i, stopped, "sleep", "1000"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper agent:", err)
			return 1
		}
		fmt.Println(pid)
	}
	_ = unix.Kill(os.Getpid(), unix.SIGKILL)
	return 1
}

func childOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n := 0
	for _, c := range f[0] {
		n = n*10 + int(c-'0')
	}
	return n
}

func eventually(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
