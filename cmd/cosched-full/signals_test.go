package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/cli"
	"github.com/cosched/cosched/localcluster"
)

// coschedBinary is the cosched binary the tests run as child processes:
// this test binary, which TestMain turns into cosched for its children.
func coschedBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs cosched as child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// signalBound is how long a stopped command may take to exit in the tests:
// the goal is a second, the bound leaves room for a loaded machine.
const signalBound = 5 * time.Second

// child is a cosched command running in its own directory.
type child struct {
	cmd    *exec.Cmd
	dir    string
	stderr lockedBuffer
	done   chan error
}

// lockedBuffer is a buffer the exec package's copying goroutine writes
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startChild(t *testing.T, dir string, stdin io.Reader, args ...string) *child {
	t.Helper()
	c := &child{dir: dir, done: make(chan error, 1)}
	// Started with SIGINT ignored (as nohup and background shells do):
	// Go keeps it ignored until the program asks for it (sigrun's
	// Notify, first thing in main), so its SigIgn in /proc tells when
	// the child can take a signal; before that, under load, its package
	// initialisation alone outlasted a fixed delay and SIGINT killed it.
	c.cmd = exec.Command("/bin/sh", append([]string{"-c", `trap "" INT; exec "$0" "$@"`, coschedBinary(t)}, args...)...)
	c.cmd.Dir = dir
	c.cmd.Stdin = stdin
	c.cmd.Stderr = &c.stderr
	c.cmd.Env = append(os.Environ(), "TMPDIR="+dir, "COSCHED_STATE_DIR="+filepath.Join(dir, "state"))
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// waitFor polls cond until it holds, failing if the child exits first or
// the wait is long.
func (c *child) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case err := <-c.done:
			c.done <- err
			t.Fatalf("exited (%v) before %s; stderr:\n%s", err, what, c.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after a minute; stderr:\n%s", what, c.stderr.String())
		}
	}
}

// stop sends sig and returns the exit status, failing if the child takes
// longer than signalBound.
func (c *child) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	return c.stopWithin(t, sig, signalBound)
}

// stopWithin is stop for a command whose clean-up may take longer than
// signalBound, but never more than cli.StopGrace: past it the process exits
// anyway (sigrun).
func (c *child) stopWithin(t *testing.T, sig syscall.Signal, bound time.Duration) int {
	t.Helper()
	c.waitFor(t, "its signal handlers", c.handlesSignals(t))
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal: %v", err)
	}
	start := time.Now()
	select {
	case err := <-c.done:
		var ee *exec.ExitError
		if err == nil {
			return 0
		}
		if !errors.As(err, &ee) {
			t.Fatalf("wait: %v", err)
		}
		t.Logf("%s exited %d %v after the signal", strings.Join(c.cmd.Args[3:], " "), ee.ExitCode(), time.Since(start).Round(time.Millisecond))
		return ee.ExitCode()
	case <-time.After(bound):
		// SIGQUIT: the Go runtime writes every goroutine's stack and
		// exits, so the report says where it hangs.
		c.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("still running %v after %v (then SIGQUIT: its goroutines below); stderr:\n%s", bound, sig, c.stderr.String())
	}
	return -1
}

// handlesSignals holds once the child runs cosched (not the shell that
// starts it) and no longer ignores SIGINT: its main has asked for
// SIGINT and SIGTERM.
func (c *child) handlesSignals(t *testing.T) func() bool {
	bin, err := filepath.EvalSymlinks(coschedBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	pid := c.cmd.Process.Pid
	return func() bool {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != bin {
			return false
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return false
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				return err == nil && mask&(1<<(syscall.SIGINT-1)) == 0
			}
		}
		return false
	}
}

// tempFiles lists the temporary files (atomicfile's .NAME.tmp*) under dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp") {
			found = append(found, path)
		}
		return nil
	})
	return found
}

func fileGrows(pattern string) func() bool {
	return func() bool {
		m, _ := filepath.Glob(pattern)
		for _, p := range m {
			if st, err := os.Stat(p); err == nil && st.Size() > 0 {
				return true
			}
		}
		return false
	}
}

func stderrHas(c *child, s string) func() bool {
	return func() bool { return strings.Contains(c.stderr.String(), s) }
}

func elapsed(d time.Duration) func() bool {
	end := time.Now().Add(d)
	return func() bool { return time.Now().After(end) }
}

// TestSignalsStopLongCommands sends SIGINT or SIGTERM to each long-running
// command, as a real child process, and checks that it exits promptly,
// non-zero, without leaving a temporary file.
func TestSignalsStopLongCommands(t *testing.T) {
	bin := coschedBinary(t)
	shared := t.TempDir()
	trace := filepath.Join(shared, "load.swf")
	// A heavy trace: conservative backfilling on it runs for minutes.
	if out, err := exec.Command(bin, "sim", "gen", "--jobs", "100000", "--load", "1.5", "--procs", "128", "--out", trace).CombinedOutput(); err != nil {
		t.Fatalf("sim gen: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		sig   syscall.Signal
		ready func(c *child) func() bool
		gone  []string // outputs that must not exist afterwards
	}{
		{"sim gen", []string{"sim", "gen", "--jobs", "10000000", "--out", "big.swf"}, syscall.SIGINT,
			func(c *child) func() bool { return fileGrows(filepath.Join(c.dir, ".big.swf.tmp*")) }, []string{"big.swf"}},
		{"sim gen stdout", []string{"sim", "gen", "--jobs", "10000000"}, syscall.SIGTERM,
			func(c *child) func() bool { return elapsed(500 * time.Millisecond) }, nil},
		{"sim", []string{"sim", "--trace", trace, "--policy", "conservative", "--out-swf", "o.swf", "--jobs-csv", "o.csv"}, syscall.SIGINT,
			func(c *child) func() bool { return fileGrows(filepath.Join(c.dir, ".o.csv.tmp*")) }, []string{"o.swf", "o.csv"}},
		{"sim now", []string{"sim", "now", "--jobs", "3000000"}, syscall.SIGTERM,
			func(c *child) func() bool { return elapsed(time.Second) }, nil},
		{"sim closed", []string{"sim", "closed", "--replications", "200", "--completions", "2000000"}, syscall.SIGINT,
			func(c *child) func() bool { return elapsed(time.Second) }, nil},
		{"sim sweep", []string{"sim", "sweep", "--load", "0.1:1.6:0.1", "--jobs", "5000", "--out", "sw"}, syscall.SIGINT,
			func(c *child) func() bool { return stderrHas(c, "sweep: 5/") }, []string{"sw/results.json"}},
		{"sim fit (blocked on standard input)", []string{"sim", "fit", "--trace", "-"}, syscall.SIGINT,
			func(c *child) func() bool { return elapsed(500 * time.Millisecond) }, nil},
		{"sim gen --fit-trace", []string{"sim", "gen", "--fit-trace", trace, "--jobs", "10000000", "--out", "fit.swf"}, syscall.SIGTERM,
			func(c *child) func() bool { return fileGrows(filepath.Join(c.dir, ".fit.swf.tmp*")) }, []string{"fit.swf"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// Standard input is a pipe nobody writes to: a read of it
			// blocks for ever.
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close(); w.Close() })
			c := startChild(t, dir, r, tc.args...)
			c.waitFor(t, "work under way", tc.ready(c))
			code := c.stop(t, tc.sig)
			if code != 128+int(tc.sig) {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, 128+int(tc.sig), c.stderr.String())
			}
			if left := tempFiles(t, dir); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
			for _, g := range tc.gone {
				if _, err := os.Stat(filepath.Join(dir, g)); err == nil {
					t.Errorf("%s written by an interrupted run", g)
				}
			}
		})
	}
}

// TestSignalStopsAgent: an agent's orderly stop on SIGTERM is its normal
// end (exit 0, as systemd expects), and prompt, even right after it
// started, as its controller first reaches it (that race once left 3 in
// 20 agents hung: a few rounds give it room to show).
func TestSignalStopsAgent(t *testing.T) {
	for round := range 4 {
		dir := t.TempDir()
		ready := filepath.Join(dir, "ready.json")
		c := startChild(t, dir, nil, "agent", "--name", "sig0", "--bind", "127.0.0.1:0", "--controller", "--local",
			"--state-dir", filepath.Join(dir, "agent"), "--realtime-priority", "0", "--nice", "0", "--ready-file", ready)
		c.waitFor(t, "the agent's ready file", fileGrows(ready))
		if code := c.stop(t, syscall.SIGTERM); code != 0 {
			t.Errorf("round %d: exit status %d, want 0; stderr:\n%s", round, code, c.stderr.String())
		}
	}
}

// TestSignalStopsStartingAgent: an agent still trying to join peers that
// do not answer stops at SIGTERM, without waiting out its join rounds
// (cluster up and the systemd unit stop agents that are starting).
func TestSignalStopsStartingAgent(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "agent")
	c := startChild(t, dir, nil, "agent", "--name", "sig1", "--bind", "127.0.0.1:0", "--local", "--join", "127.0.0.1:1",
		"--state-dir", state, "--realtime-priority", "0", "--nice", "0", "--log-format", "json")
	c.waitFor(t, "a failed join round", func() bool { return strings.Contains(c.stderr.String(), "join failed; retrying") })
	if code := c.stop(t, syscall.SIGTERM); code != 143 {
		t.Errorf("exit status %d, want 143 (stopped before it started); stderr:\n%s", code, c.stderr.String())
	}
	if !strings.Contains(c.stderr.String(), "context canceled") {
		t.Errorf("the agent does not say its start was cancelled; stderr:\n%s", c.stderr.String())
	}
}

// TestSignalStopsBenchStrobe: a benchmark that started a cluster stops its
// agents and exits non-zero. (It keeps the cluster's state directory, with
// the agents' logs, whenever it fails; an interruption counts as a failure.)
func TestSignalStopsBenchStrobe(t *testing.T) {
	dir := t.TempDir()
	c, _, rec := startBenchStrobe(t, dir)
	if code := c.stop(t, syscall.SIGINT); code != 130 {
		t.Errorf("exit status %d, want 130; stderr:\n%s", code, c.stderr.String())
	}
	// The agents run in their own sessions: they must be gone too.
	waitAgentsGone(t, readies(rec.Agents), "the benchmark stopped")
}

// TestSignalStopsBenchCalibrate: calibration interrupted while its
// clusters run exits non-zero, writes no profile and leaves no temporary
// state directory or agent.
func TestSignalStopsBenchCalibrate(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, dir, nil, "bench", "calibrate", "--out", "profile.json", "--realtime-priority", "0")
	var record string
	c.waitFor(t, "a cluster's record", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "*", "*", "cluster.json"))
		if len(m) > 0 {
			record = m[0]
		}
		return record != ""
	})
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var rec localcluster.Cluster
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Agents) == 0 {
		t.Fatalf("cluster record %s: %v", b, err)
	}
	if code := c.stop(t, syscall.SIGINT); code != 130 {
		t.Errorf("exit status %d, want 130; stderr:\n%s", code, c.stderr.String())
	}
	waitAgentsGone(t, readies(rec.Agents), "calibration stopped")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("left behind: %v", names)
	}
}

// TestSignalStopsClusterUp: a signal while cluster up waits for its agents
// stops the ones it started and records no cluster.
func TestSignalStopsClusterUp(t *testing.T) {
	dir := t.TempDir()
	c := startChild(t, dir, nil, "cluster", "up", "-N", "8", "--realtime-priority", "0")
	state := filepath.Join(dir, "state") // COSCHED_STATE_DIR of startChild
	c.waitFor(t, "the first agent", fileGrows(filepath.Join(state, "agents", "a0", "ready.json")))
	// The agents it started get up to 5 s to stop before they are killed
	// and cleaned up after (localcluster.Up): on a loaded host an agent in
	// the middle of its start can take that long.
	if code := c.stopWithin(t, syscall.SIGINT, cli.StopGrace+time.Second); code != 130 {
		t.Errorf("exit status %d, want 130; stderr:\n%s", code, c.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(state, "cluster.json")); err == nil {
		t.Error("an interrupted cluster up recorded a cluster")
	}
	files, _ := filepath.Glob(filepath.Join(state, "agents", "*", "ready.json"))
	var started []localcluster.Ready
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // removed with its agent
		}
		var info localcluster.Ready
		if json.Unmarshal(b, &info) == nil {
			started = append(started, info)
		}
	}
	waitAgentsGone(t, started, "cluster up was interrupted")
}

// readies are the agents' Ready records.
func readies(agents []localcluster.Agent) []localcluster.Ready {
	out := make([]localcluster.Ready, len(agents))
	for i, a := range agents {
		out[i] = a.Ready
	}
	return out
}

// waitAgentsGone waits up to signalBound for every agent to be gone after
// what happened; one still running fails the test (and is killed).
func waitAgentsGone(t *testing.T, agents []localcluster.Ready, after string) {
	t.Helper()
	deadline := time.Now().Add(signalBound)
	for _, a := range agents {
		for agentAlive(a.PID) {
			if time.Now().After(deadline) {
				syscall.Kill(a.PID, syscall.SIGKILL)
				t.Fatalf("agent %s (pid %d) still running after %s", a.Name, a.PID, after)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// agentAlive reports whether pid is a live cosched agent: not gone, not a
// zombie waiting for its reaper (after its parent exited, init reaps it
// when it gets to it), not a reused pid running something else.
func agentAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.Contains(string(cmdline), "agent\x00")
}

// startBenchStrobe starts a 2-agent `bench strobe` of 5 minutes as a child
// with TMPDIR dir, and returns it once it measures, with its cluster's
// record and the record's path (in the state directory, a temporary
// directory under dir).
func startBenchStrobe(t *testing.T, dir string) (*child, string, localcluster.Cluster) {
	t.Helper()
	c := startChild(t, dir, nil, "bench", "strobe", "-N", "2", "--mpl", "1", "--slice", "20ms", "--duration", "5m", "--realtime-priority", "0")
	var record string
	c.waitFor(t, "the cluster's record", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "*", "cluster.json"))
		if len(m) == 1 {
			record = m[0]
		}
		return record != ""
	})
	c.waitFor(t, "the measurement", stderrHas(c, "measuring"))
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	var rec localcluster.Cluster
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Agents) != 2 {
		t.Fatalf("cluster record %s: %v", b, err)
	}
	return c, record, rec
}
