package rank

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A rank started Stopped is stopped when Start returns, is still the shim
// (its program has not been exec'd), does nothing until Cont, then runs.
func TestStartStoppedRunsNothingBeforeCont(t *testing.T) {
	m, dir := newManager(t)
	marker := filepath.Join(dir, "marker")
	begin := time.Now()
	pid := mustStart(t, m, spec(dir, 1, 0, true, "sh", "-c", `echo ran > "$1"`, "sh", marker))
	t.Logf("Start of a stopped rank (shim reaches T): %v", time.Since(begin))

	if s := state(pid); s != 'T' {
		t.Fatalf("state after Start = %q, want 'T'", s)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err != nil || exe != self {
		t.Fatalf("rank's executable = %q (%v), want the shim %q", exe, err, self)
	}
	if st := mustStat(t, pid); st.pgid != pid {
		t.Fatalf("pgid = %d, want own group %d", st.pgid, pid)
	}
	time.Sleep(200 * time.Millisecond) // give a wrongly running program every chance
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("marker exists before Cont (%v)", err)
	}
	if s := state(pid); s != 'T' {
		t.Fatalf("state before Cont = %q, want 'T'", s)
	}
	if got := m.Ranks(1); len(got) != 1 || got[0] != pid {
		t.Fatalf("Ranks = %v, want [%d]", got, pid)
	}

	if err := m.Cont(1); err != nil {
		t.Fatal(err)
	}
	e := nextExit(t, m)
	if e.Err != nil || e.Code != 0 || e.Signal != "" || e.PID != pid || e.Job != 1 || e.Rank != 0 {
		t.Fatalf("Exit = %+v, want code 0 of pid %d", e, pid)
	}
	if e.CPUTime <= 0 || e.MaxRSS <= 0 || !e.Ended.After(e.Started) {
		t.Fatalf("Exit resources = cpu %v, maxrss %d, %v..%v; want > 0", e.CPUTime, e.MaxRSS, e.Started, e.Ended)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "ran\n" {
		t.Fatalf("marker after Cont: %q, %v", b, err)
	}
	if got := m.Ranks(1); len(got) != 0 {
		t.Fatalf("Ranks after exit = %v", got)
	}
	if _, ok := readStat(pid); ok {
		t.Fatalf("pid %d still in /proc after its Exit (zombie?)", pid)
	}
}

// Exit codes and terminating signals, for ranks started directly and through
// the shim.
func TestExitStatus(t *testing.T) {
	m, dir := newManager(t)
	cases := []struct {
		script string
		code   int
		signal string
	}{
		{"exit 0", 0, ""},
		{"exit 3", 3, ""},
		{"kill -TERM $$", -1, "terminated"},
		{"kill -KILL $$", -1, "killed"},
	}
	for _, stopped := range []bool{false, true} {
		for i, c := range cases {
			pid := mustStart(t, m, spec(dir, 2, i, stopped, "sh", "-c", c.script))
			if stopped {
				if err := m.Cont(2); err != nil {
					t.Fatal(err)
				}
			}
			e := nextExit(t, m)
			if e.PID != pid || e.Rank != i || e.Code != c.code || e.Signal != c.signal || e.Err != nil {
				t.Errorf("stopped=%v %q: Exit = %+v, want code %d signal %q", stopped, c.script, e, c.code, c.signal)
			}
		}
	}
}

// Exits come in the order the ranks end, not the order they started.
func TestExitsInOrder(t *testing.T) {
	m, dir := newManager(t)
	gate := filepath.Join(dir, "gate")
	mustStart(t, m, spec(dir, 3, 0, false, "sh", "-c", `while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", gate))
	mustStart(t, m, spec(dir, 3, 1, false, "true"))
	if e := nextExit(t, m); e.Rank != 1 {
		t.Fatalf("first Exit is rank %d, want 1", e.Rank)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if e := nextExit(t, m); e.Rank != 0 || e.Code != 0 {
		t.Fatalf("second Exit = %+v, want rank 0 code 0", e)
	}
}

// Every way a spawn can fail ends in an error from Start and one Exit with
// Err, never a hang or a panic.
func TestSpawnFailures(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	self := os.Args[0]
	cases := []struct {
		name    string
		cfg     func(*Config)
		spec    func(dir string) Spec
		process bool   // a process (the shim) was created
		code    int    // its exit code, when it exited
		signal  string // or its signal
		errLog  string // expected in rank-0.err
		errText string // expected in Start's error
	}{
		{name: "missing", spec: func(dir string) Spec { return spec(dir, 4, 0, false, "no-such-program-xyz") }, code: 127},
		{name: "missing stopped", spec: func(dir string) Spec { return spec(dir, 4, 0, true, "/no/such/program") }, code: 127},
		{name: "not executable", spec: func(dir string) Spec { return spec(dir, 4, 0, false, notExec) }, code: 127},
		{name: "empty argv", spec: func(dir string) Spec { return spec(dir, 4, 0, false) }, code: 127},
		{name: "no log dir", spec: func(string) Spec { return spec("", 4, 0, false, "true") }, code: 127},
		{name: "rank outside size", spec: func(dir string) Spec { s := spec(dir, 4, 0, false, "true"); s.Rank = 8; return s }, code: 127},
		{name: "bad cpu", spec: func(dir string) Spec { s := spec(dir, 4, 0, false, "true"); s.CPU = maxCPU - 1; return s }, code: 127},
		{name: "bad dir", spec: func(dir string) Spec { s := spec(dir, 4, 0, false, "true"); s.Dir = "/no/such/dir"; return s }, code: 127},
		{name: "dir closed to the user", spec: func(dir string) Spec {
			s := spec(dir, 4, 0, false, "true")
			s.Dir, s.Credential = private, &syscall.Credential{Uid: 65534, Gid: 65534}
			return s
		}, code: 127, errText: "working directory " + private + ": permission denied to uid 65534 on " + private},
		{
			name: "no shim", cfg: func(c *Config) { c.Shim = nil },
			spec: func(dir string) Spec { return spec(dir, 4, 0, true, "true") }, code: 127,
		},
		{
			name: "shim fails", cfg: func(c *Config) { c.Shim = []string{self, "unexpected-arg"} },
			spec:    func(dir string) Spec { return spec(dir, 4, 0, true, "true") },
			process: true, code: ShimExitCode, errLog: "cosched rank shim: usage",
		},
		{
			name: "shim exits", cfg: func(c *Config) { c.Shim = []string{"true"} },
			spec:    func(dir string) Spec { return spec(dir, 4, 0, true, "true") },
			process: true, code: 0,
		},
		{
			name: "shim never stops",
			cfg: func(c *Config) {
				c.Shim = []string{"sh", "-c", "sleep 1000", "sh"}
				c.StartTimeout = 300 * time.Millisecond
			},
			spec:    func(dir string) Spec { return spec(dir, 4, 0, true, "true") },
			process: true, code: -1, signal: "killed",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mods []func(*Config)
			if c.cfg != nil {
				mods = append(mods, c.cfg)
			}
			m, dir := newManager(t, mods...)
			s := c.spec(dir)
			pid, err := m.Start(s)
			if err == nil || pid != 0 || !strings.HasPrefix(err.Error(), "rank: ") {
				t.Fatalf("Start = %d, %v; want 0 and a rank: error", pid, err)
			}
			t.Logf("Start: %v", err)
			if !strings.Contains(err.Error(), c.errText) {
				t.Fatalf("Start: %v; want %q", err, c.errText)
			}
			e := nextExit(t, m)
			if e.Err == nil || e.Code != c.code || e.Signal != c.signal || (e.PID != 0) != c.process {
				t.Fatalf("Exit = %+v; want Err, code %d, signal %q, process %v", e, c.code, c.signal, c.process)
			}
			t.Logf("Exit.Err: %v", e.Err)
			if c.errLog != "" {
				b, _ := os.ReadFile(filepath.Join(dir, "rank-0.err"))
				if !strings.Contains(string(b), c.errLog) {
					t.Fatalf("rank-0.err = %q, want %q", b, c.errLog)
				}
			}
			if got := m.Ranks(4); len(got) != 0 {
				t.Fatalf("Ranks = %v after a failed start", got)
			}
		})
	}
}

// A rank already running cannot be started twice; once it has ended it can.
func TestStartDuplicate(t *testing.T) {
	m, dir := newManager(t)
	pid := mustStart(t, m, spec(dir, 5, 0, true, "true"))
	if _, err := m.Start(spec(dir, 5, 0, false, "true")); err == nil {
		t.Fatal("second Start of a running rank succeeded")
	}
	if e := nextExit(t, m); e.Err == nil || e.PID != 0 {
		t.Fatalf("duplicate's Exit = %+v, want Err", e)
	}
	if err := m.Cont(5); err != nil {
		t.Fatal(err)
	}
	if e := nextExit(t, m); e.PID != pid || e.Code != 0 {
		t.Fatalf("Exit = %+v", e)
	}
	mustStart(t, m, spec(dir, 5, 0, false, "true"))
	if e := nextExit(t, m); e.Err != nil || e.Code != 0 {
		t.Fatalf("restart's Exit = %+v", e)
	}
}

// stdout and stderr are appended to the log files; the environment has the
// agent's variables, Spec.Env and the manager's (which win); Dir defaults to
// the log directory.
func TestLogsEnvAndDir(t *testing.T) {
	t.Setenv("COSCHED_RANK_TEST_AGENT_VAR", "from-agent")
	m, dir := newManager(t)
	script := `echo "out $COSCHED_JOB $COSCHED_RANK $COSCHED_SIZE $EXTRA $COSCHED_RANK_TEST_AGENT_VAR $(pwd)"; echo "err $0" >&2`
	for _, stopped := range []bool{false, true} {
		s := spec(dir, 6, 3, stopped, "sh", "-c", script)
		s.Env = append(s.Env, "EXTRA=x", "EXTRA=y", "COSCHED_JOB=bogus")
		mustStart(t, m, s)
		if stopped {
			if err := m.Cont(6); err != nil {
				t.Fatal(err)
			}
		}
		if e := nextExit(t, m); e.Code != 0 || e.Err != nil {
			t.Fatalf("Exit = %+v", e)
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "rank-3.out"))
	line := "out 6 3 8 y from-agent " + real + "\n"
	if string(out) != line+line {
		t.Errorf("rank-3.out = %q, want twice %q", out, line)
	}
	// The program's argv[0] is the resolved absolute path.
	sh, err := resolve("sh", "")
	if err != nil {
		t.Fatal(err)
	}
	errb, _ := os.ReadFile(filepath.Join(dir, "rank-3.err"))
	if want := "err " + sh + "\n"; string(errb) != want+want {
		t.Errorf("rank-3.err = %q, want twice %q", errb, want)
	}

	work := t.TempDir()
	s := spec(dir, 6, 4, false, "sh", "-c", "pwd")
	s.Dir = work
	mustStart(t, m, s)
	nextExit(t, m)
	realWork, _ := filepath.EvalSymlinks(work)
	if out, _ := os.ReadFile(filepath.Join(dir, "rank-4.out")); string(out) != realWork+"\n" {
		t.Errorf("pwd with Dir = %q, want %q", out, realWork)
	}

	// A relative program is found in Dir, not in the agent's directory.
	if err := os.WriteFile(filepath.Join(work, "prog"), []byte("#!/bin/sh\necho prog in $PWD\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s = spec(dir, 6, 5, false, "./prog")
	s.Dir = work
	mustStart(t, m, s)
	if e := nextExit(t, m); e.Err != nil || e.Code != 0 {
		t.Fatalf("./prog in Dir: Exit = %+v", e)
	}
	if out, _ := os.ReadFile(filepath.Join(dir, "rank-5.out")); string(out) != "prog in "+realWork+"\n" {
		t.Errorf("./prog in Dir printed %q", out)
	}
}

// Pinned ranks have the CPU in their affinity (every thread, from the shim's
// start-up on); the agent's threads keep theirs.
func TestCPUPinning(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for c := range maxCPU {
		if allowed.IsSet(c) {
			cpu = c // the highest allowed: not CPU 0 when there are several
		}
	}
	before := threadAffinities(t, os.Getpid())
	m, dir := newManager(t)
	want := strconv.Itoa(cpu)

	s := spec(dir, 7, 0, false, "sleep", "1000")
	s.CPU = cpu
	pid := mustStart(t, m, s)
	if got := threadAffinities(t, pid); len(got) != 1 || got[want] == 0 {
		t.Errorf("running rank: Cpus_allowed_list = %v, want %s", got, want)
	}

	s = spec(dir, 7, 1, true, "sleep", "1000")
	s.CPU = cpu
	pid = mustStart(t, m, s)
	if got := threadAffinities(t, pid); len(got) != 1 || got[want] == 0 {
		t.Errorf("stopped rank (shim, all threads): Cpus_allowed_list = %v, want %s", got, want)
	}
	if err := m.Cont(7); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "S")
	if got := threadAffinities(t, pid); len(got) != 1 || got[want] == 0 {
		t.Errorf("stopped rank after Cont: Cpus_allowed_list = %v, want %s", got, want)
	}

	if after := threadAffinities(t, os.Getpid()); len(after) != 1 || len(before) != 1 {
		t.Errorf("agent threads' affinities: before %v, after %v; want one mask throughout", before, after)
	} else {
		for k := range before {
			if after[k] == 0 {
				t.Errorf("agent threads' affinities changed: before %v, after %v", before, after)
			}
		}
	}
}

// threadAffinities counts pid's threads by Cpus_allowed_list.
func threadAffinities(t *testing.T, pid int) map[string]int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/status")
		if err != nil {
			continue // the thread exited
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				got[strings.TrimSpace(v)]++
			}
		}
	}
	return got
}
