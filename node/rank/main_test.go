package rank

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// The test binary doubles as the shim and as a helper agent, selected by
// environment variables (see the package doc).
const (
	shimEnv  = "COSCHED_RANK_SHIM"       // "1": ShimMain; "thread": ShimMain on a thread the agent did not fork
	agentEnv = "COSCHED_RANK_TEST_AGENT" // "1": run helperAgent (agent_test.go); "keep": helperKeepingAgent (keeper_test.go)
)

// Keep the main goroutine on the main thread, so that the "thread" shim mode
// really runs ShimMain on another one.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	switch os.Getenv(shimEnv) {
	case "1":
		os.Exit(ShimMain(os.Args[1:]))
	case "thread":
		code := make(chan int)
		go func() {
			runtime.LockOSThread()
			code <- ShimMain(os.Args[1:])
		}()
		os.Exit(<-code)
	}
	switch os.Getenv(agentEnv) {
	case "1":
		os.Exit(helperAgent())
	case "keep":
		os.Exit(helperKeepingAgent())
	}
	os.Exit(m.Run())
}

// Generous bounds: they catch hangs, not slowness.
const (
	waitLong = 20 * time.Second
	poll     = 2 * time.Millisecond
)

// newManager returns a manager whose shim is this test binary, and a log
// directory. Cleanup closes the manager (before the directory is removed) and
// checks that every Exit is delivered and the channel closed.
func newManager(t testing.TB, mods ...func(*Config)) (*Manager, string) {
	t.Helper()
	dir := t.TempDir()
	level := zap.InfoLevel
	if _, bench := t.(*testing.B); bench {
		level = zap.WarnLevel // keep benchmark output to the numbers
	}
	cfg := Config{Shim: []string{os.Args[0]}, Log: zaptest.NewLogger(t, zaptest.Level(level))}
	for _, mod := range mods {
		mod(&cfg)
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeAndDrain(t, m) })
	return m, dir
}

// closeAndDrain closes m and returns the Exits not yet received.
func closeAndDrain(t testing.TB, m *Manager) []Exit {
	t.Helper()
	if err := m.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	var rest []Exit
	deadline := time.After(waitLong)
	for {
		select {
		case e, ok := <-m.Exits():
			if !ok {
				return rest
			}
			rest = append(rest, e)
		case <-deadline:
			t.Fatalf("Exits not closed %v after Close", waitLong)
		}
	}
}

// spec is a rank of job in dir; shim mode is on for every rank (only the
// test binary reads the variable).
func spec(dir string, job int64, rank int, stopped bool, argv ...string) Spec {
	return Spec{
		Job: job, Rank: rank, Size: 8, Argv: argv,
		Env:    []string{shimEnv + "=1"},
		LogDir: dir, CPU: -1, Stopped: stopped,
	}
}

func mustStart(t testing.TB, m *Manager, s Spec) int {
	t.Helper()
	pid, err := m.Start(s)
	if err != nil {
		t.Fatalf("Start(job %d rank %d %q): %v", s.Job, s.Rank, s.Argv, err)
	}
	return pid
}

// nextExit waits for the next Exit.
func nextExit(t testing.TB, m *Manager) Exit {
	t.Helper()
	select {
	case e, ok := <-m.Exits():
		if !ok {
			t.Fatal("Exits closed")
		}
		return e
	case <-time.After(waitLong):
		t.Fatalf("no Exit within %v", waitLong)
	}
	panic("unreachable")
}

// procStat is what the tests read from /proc/<pid>/stat.
type procStat struct {
	state     byte
	pgid      int
	startTime uint64 // clock ticks since boot: tells a recycled pid apart
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	// The command name (field 2) may contain anything: parse after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 20 {
		return procStat{}, false
	}
	pgid, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procStat{state: f[0][0], pgid: pgid, startTime: start}, true
}

func state(pid int) byte {
	st, ok := readStat(pid)
	if !ok {
		return 0
	}
	return st.state
}

// waitState polls until pid's state is one of states ("T", "RS", …) and
// returns how long that took.
func waitState(t testing.TB, pid int, states string) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < waitLong {
		if s := state(pid); s != 0 && strings.IndexByte(states, s) >= 0 {
			return time.Since(start)
		}
		time.Sleep(poll)
	}
	t.Fatalf("pid %d: state %q, want one of %q after %v", pid, state(pid), states, waitLong)
	return 0
}

// dead reports whether the process that had this start time is gone (or a
// zombie: orphans are reaped by init, which may take its time).
func dead(pid int, startTime uint64) bool {
	st, ok := readStat(pid)
	return !ok || st.startTime != startTime || st.state == 'Z' || st.state == 'X'
}

// waitDead polls until the process is dead.
func waitDead(t testing.TB, pid int, startTime uint64) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < waitLong {
		if dead(pid, startTime) {
			return time.Since(start)
		}
		time.Sleep(poll)
	}
	t.Fatalf("pid %d still alive (state %q) after %v", pid, state(pid), waitLong)
	return 0
}

// mustStat reads a live process's stat.
func mustStat(t testing.TB, pid int) procStat {
	t.Helper()
	st, ok := readStat(pid)
	if !ok {
		t.Fatalf("pid %d: no /proc entry", pid)
	}
	return st
}

// waitFile polls until the file exists and has content, and returns it.
func waitFile(t testing.TB, name string) string {
	t.Helper()
	start := time.Now()
	for time.Since(start) < waitLong {
		if b, err := os.ReadFile(name); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return string(b)
		}
		time.Sleep(poll)
	}
	t.Fatalf("%s not written within %v", name, waitLong)
	return ""
}

func waitPidFile(t testing.TB, name string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(waitFile(t, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return pid
}
