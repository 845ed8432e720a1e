package jobcg_test

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/node/jobcg"
)

// The test binary doubles as the programs the tests contain.
func TestMain(m *testing.M) {
	switch os.Getenv("JOBCG_HELPER") {
	case "alloc": // touch 256 MiB, page by page
		buf := make([]byte, 256<<20)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 1
		}
		fmt.Println("allocated", len(buf))
		os.Exit(0)
	case "open": // print what Open decides for this user
		tr, err := jobcg.Open(jobcg.Config{Agent: "i15-nonroot"})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(tr.Status())
		os.Exit(0)
	case "escape": // Escape, print the cgroups, wait for a line, go back, print them again
		back, err := jobcg.Escape(jobcg.Config{Agent: os.Getenv("JOBCG_AGENT"), Mode: os.Getenv("JOBCG_MODE")})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		b, _ := os.ReadFile("/proc/self/cgroup")
		fmt.Printf("%s--\n", b)
		fmt.Scanln()
		if err := back(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		b, _ = os.ReadFile("/proc/self/cgroup")
		fmt.Printf("%s--\n", b)
		os.Exit(0)
	case "spin": // burn CPU until killed
		for time.Now().After(time.Time{}) {
		}
	}
	os.Exit(m.Run())
}

// modes are the hierarchies usable here; each test runs on every one.
func modes(t *testing.T) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	var ms []string
	for _, m := range []string{"v1", "v2"} {
		tr, err := jobcg.Open(jobcg.Config{Agent: "i15-probe-" + strconv.Itoa(os.Getpid()), Mode: m})
		if err != nil {
			t.Logf("mode %s unavailable here: %v", m, err)
			continue
		}
		tr.Close()
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		t.Skip("no usable cgroup hierarchy (not root, or no cgroupfs mounted)")
	}
	return ms
}

func open(t *testing.T, mode string) *jobcg.Tree {
	t.Helper()
	tr, err := jobcg.Open(jobcg.Config{Agent: agentName(t, mode), Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
	})
	return tr
}

// openWithJob opens a tree in mode and creates job id in it with a
// memory limit of limit bytes (0: none).
func openWithJob(t *testing.T, mode string, id, limit int64) (*jobcg.Tree, *jobcg.Job) {
	t.Helper()
	tr := open(t, mode)
	j, err := tr.Create(id, limit)
	if err != nil {
		t.Fatal(err)
	}
	return tr, j
}

func agentName(t *testing.T, mode string) string {
	return fmt.Sprintf("i15-%s-%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), mode, os.Getpid())
}

// startIn starts cmd born inside j, as the rank manager's spawner does.
func startIn(t testing.TB, j *jobcg.Job, cmd *exec.Cmd) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fd, leave, err := j.Enter(unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if fd >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	err = cmd.Start()
	if lerr := leave(); lerr != nil {
		t.Error(lerr)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// startHelper starts this test binary as the helper program named
// (TestMain), born inside j.
func startHelper(t *testing.T, j *jobcg.Job, helper string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "JOBCG_HELPER="+helper)
	startIn(t, j, cmd)
	return cmd
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z'
}

func TestRemoveKillsWhatLeftTheGroup(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			tr, j := openWithJob(t, mode, 1, 0)
			// A double fork into a new session: out of reach of the
			// rank's process group, not of its cgroup.
			cmd := exec.Command("sh", "-c", `setsid sh -c 'sleep 300 & wait' & sleep 300`)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			startIn(t, j, cmd)
			var pids []int
			waitFor(t, "four processes in the job's cgroup", func() bool {
				pids, _ = j.Pids()
				return len(pids) >= 4
			})
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the rank manager does
			_ = cmd.Wait()
			escaped := 0
			for _, p := range pids {
				if alive(p) {
					escaped++
				}
			}
			if escaped < 2 {
				t.Fatalf("test is broken: %d processes survived the group kill, want the setsid pair", escaped)
			}
			st, ok, err := tr.Remove(1)
			if err != nil || !ok {
				t.Fatalf("Remove: ok=%v err=%v", ok, err)
			}
			for _, p := range pids {
				if alive(p) {
					t.Errorf("pid %d survived the job's removal", p)
				}
			}
			if st.Processes < 4 {
				t.Errorf("processes seen %d, want at least 4", st.Processes)
			}
			if tr.Job(1) != nil {
				t.Error("job still known after Remove")
			}
		})
	}
}

func TestOpenCleansPreviousLife(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			name := agentName(t, mode)
			first, err := jobcg.Open(jobcg.Config{Agent: name, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			j, err := first.Create(9, 0)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", `setsid sleep 300 & sleep 300`)
			startIn(t, j, cmd)
			var pids []int
			waitFor(t, "three processes", func() bool { pids, _ = j.Pids(); return len(pids) >= 3 })
			// The agent "dies": first is abandoned, its job left behind.
			second, err := jobcg.Open(jobcg.Config{Agent: name, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			defer second.Close()
			_ = cmd.Wait()
			for _, p := range pids {
				if alive(p) {
					t.Errorf("pid %d of the previous life survived", p)
				}
			}
			if second.Job(9) != nil {
				t.Error("the new life adopted the old job")
			}
		})
	}
}

func cpuTicks(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

func TestFreezeStopsWithoutAStopNotification(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			_, j := openWithJob(t, mode, 2, 0)
			cmd := startHelper(t, j, "spin")
			pid := cmd.Process.Pid
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			waitFor(t, "the spinner to run", func() bool { return cpuTicks(t, pid) > 0 })
			if err := j.Freeze(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond) // let the freeze complete
			before := cpuTicks(t, pid)
			time.Sleep(300 * time.Millisecond)
			if after := cpuTicks(t, pid); after != before {
				t.Errorf("frozen process ran: %d ticks while frozen", after-before)
			}
			// Its parent (this test) is told nothing: no stop.
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil); err != nil {
				t.Fatal(err)
			}
			if info.Signo != 0 {
				t.Errorf("the parent saw a state change (si_code %d) of a frozen child", info.Code)
			}
			if err := j.Thaw(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the thawed spinner to run", func() bool { return cpuTicks(t, pid) > before+5 })
		})
	}
}

func TestMemoryLimitKillsAndCounts(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			const limit = 64 << 20
			_, j := openWithJob(t, mode, 3, limit)
			st, err := j.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if st.MemoryLimit == 0 {
				t.Skipf("%s: no memory controller for jobs here", mode)
			}
			cmd := startHelper(t, j, "alloc")
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("allocating 256 MiB under a 64 MiB limit: %v, want killed", err)
			}
			if st, err = j.Stats(); err != nil {
				t.Fatal(err)
			}
			if st.OOMKills < 1 {
				t.Errorf("OOM kills %d, want ≥ 1", st.OOMKills)
			}
			if st.PeakMemory < limit/2 || st.PeakMemory > limit+(1<<20) {
				t.Errorf("peak %d bytes, want about the limit %d", st.PeakMemory, limit)
			}
			if st.Memory < 0 || st.Memory >= st.PeakMemory {
				t.Errorf("memory in use %d bytes once the allocator was killed, want below its peak %d", st.Memory, st.PeakMemory)
			}
		})
	}
}

func TestAccountsCPU(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			tr, j := openWithJob(t, mode, 4, 0)
			cmd := startHelper(t, j, "spin")
			pid := cmd.Process.Pid
			waitFor(t, "some CPU time", func() bool { return cpuTicks(t, pid) >= 10 })
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			st, _, err := tr.Remove(4)
			if err != nil {
				t.Fatal(err)
			}
			if st.CPUTime < 50*time.Millisecond {
				t.Skipf("%s: CPU time %v: no CPU accounting for jobs here", mode, st.CPUTime)
			}
		})
	}
}

// Without the right to make cgroups (not root), auto mode falls back to
// process groups and says why; explicit modes and bad names are errors.
func TestFallbackWithoutCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a helper as another user")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // nobody must reach the copy
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := dir + "/jobcg.test"
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "JOBCG_HELPER=open")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody: %s", out)
	if !strings.HasPrefix(string(out), "none (") {
		t.Errorf("auto mode as nobody: %q, want none (with the reason)", out)
	}
	tr, err := jobcg.Open(jobcg.Config{Agent: "x", Mode: "none"})
	if err != nil || tr.Mode() != jobcg.ModeNone {
		t.Fatalf("mode none: %v %v", tr, err)
	}
	if j, err := tr.Create(1, 1<<20); j != nil || err != nil {
		t.Errorf("Create in mode none: %v %v, want nothing", j, err)
	}
	for _, bad := range []jobcg.Config{{Agent: "../x"}, {Agent: ""}, {Agent: "a", Mode: "v3"}} {
		if _, err := jobcg.Open(bad); err == nil {
			t.Errorf("Open(%+v) accepted", bad)
		}
	}
}

// Kill ends a job's processes without freezing its cgroup unless they
// keep forking (v1: a frozen task gets its SIGKILL only at the thaw, so an
// agent killed between a freeze and its thaw left a rank frozen for ever),
// kills a suspended (frozen) job all the same, and still ends a tree that
// forks without pause.
func TestKillFreezesOnlyWhatKeepsForking(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			cases := []struct {
				name, script string
				suspended    bool
			}{
				{"tree", `sleep 300 & sleep 300 & wait`, false},
				{"suspended tree", `sleep 300 & sleep 300 & wait`, true},
				{"fork loop", `while :; do sleep 300 & done`, false},
			}
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					tr, j := openWithJob(t, mode, int64(10+i), 0)
					cmd := exec.Command("sh", "-c", c.script)
					cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
					startIn(t, j, cmd)
					defer func() {
						_ = j.Thaw() // a kill that left it frozen would leave Wait waiting
						_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
						_ = cmd.Wait()
					}()
					waitFor(t, "three processes in the job's cgroup", func() bool {
						pids, _ := j.Pids()
						return len(pids) >= 3
					})
					if c.suspended {
						if err := j.Freeze(); err != nil {
							t.Fatal(err)
						}
					}
					if err := j.Kill(); err != nil {
						t.Fatal(err)
					}
					if _, ok, err := tr.Remove(int64(10 + i)); err != nil || !ok {
						t.Fatalf("Remove after the kill: ok=%v err=%v", ok, err)
					}
					if n := jobcg.FrozenKills(j); mode == "v1" && c.name == "tree" && n != 0 {
						t.Errorf("a tree that does not fork was frozen to be killed (%d kills froze it)", n)
					}
				})
			}
		})
	}
}

// A guard escapes its own cgroup into one beside the agent's subtree (in
// every hierarchy jobs use but cpu), where a kill of its own cgroup's
// members misses it, and goes back, removing that cgroup. A stale one (its
// guard killed) is removed by the next Open.
func TestEscape(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			agent := agentName(t, mode)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "JOBCG_HELPER=escape", "JOBCG_AGENT="+agent, "JOBCG_MODE="+mode)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer stdin.Close()
			r := bufio.NewReader(stdout)
			section := func() string {
				var b strings.Builder
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						t.Fatalf("helper: %v (%q)", err, b.String())
					}
					if l == "--\n" {
						return b.String()
					}
					b.WriteString(l)
				}
			}
			before, _ := os.ReadFile("/proc/self/cgroup") // the helper's own, before: this process's
			in := section()
			want := "/cosched/" + agent + jobcg.GuardSuffix
			hier := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(in), "\n") {
				f := strings.SplitN(l, ":", 3)
				if len(f) == 3 && strings.HasSuffix(f[2], want) {
					hier[f[1]] = true
				}
			}
			if mode == "v1" && !hier["freezer"] || mode == "v2" && !hier[""] {
				t.Fatalf("escaped: %s\nwant the freezer (v1) or unified (v2) cgroup to end in %s", in, want)
			}
			if mode == "v1" && hier["cpu"] {
				t.Errorf("escaped in the cpu hierarchy too: %s", in)
			}
			dirs, _ := filepath.Glob("/sys/fs/cgroup/*/cosched/" + agent + jobcg.GuardSuffix)
			dirs2, _ := filepath.Glob("/sys/fs/cgroup/*/*/cosched/" + agent + jobcg.GuardSuffix)
			dirs = append(dirs, dirs2...)
			if len(dirs) == 0 {
				t.Fatalf("no guard cgroup directory found for %s", agent)
			}
			fmt.Fprintln(stdin)
			if out := section(); out != string(before) {
				t.Errorf("back: %s\nwant the cgroups it had:\n%s", out, before)
			}
			for _, d := range dirs {
				if _, err := os.Stat(d); err == nil {
					t.Errorf("%s left", d)
				}
				// and its parent, <own>/cosched, when nothing else is in it
				if ents, err := os.ReadDir(filepath.Dir(d)); err == nil && !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.IsDir() }) {
					t.Errorf("%s left empty", filepath.Dir(d))
				}
			}

			// Left behind (its guard killed): the next Open removes it.
			for _, d := range dirs {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			open(t, mode)
			for _, d := range dirs {
				if _, err := os.Stat(d); err == nil {
					t.Errorf("stale %s left after Open", d)
					os.Remove(d)
				}
			}
		})
	}
}

// TestCreateAfterCloseMakesNothing: a launch that comes while its agent
// stops (its Close done) must not make a job cgroup again, which nobody
// would remove: Close ends the tree.
func TestCreateAfterCloseMakesNothing(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			name := agentName(t, mode)
			tr, err := jobcg.Open(jobcg.Config{Agent: name, Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			j, err := tr.Create(7, 0)
			if !errors.Is(err, jobcg.ErrClosed) || j != nil {
				t.Errorf("Create after Close = %v, %v; want nil, ErrClosed", j, err)
			}
			if dirs := cgroupDirsNamed(t, name); len(dirs) > 0 {
				t.Errorf("left after Close and a Create: %v", dirs)
				for _, d := range slices.Backward(dirs) {
					os.Remove(d)
				}
			}
		})
	}
}

// cgroupDirsNamed lists the directories under /sys/fs/cgroup whose path
// holds name, deepest last.
func cgroupDirsNamed(t *testing.T, name string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir("/sys/fs/cgroup", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a cgroup removed while walking
		}
		if d.IsDir() && strings.Contains(p, name) {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}
