package pmix

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosched/cosched/internal/scratch"
	"github.com/cosched/cosched/pmi"
)

// kit is what built makes, once per test binary run; TestMain removes
// its directory.
var kit struct {
	once               sync.Once
	dir, helper, check string
	skip               string
	err                error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if kit.dir != "" {
		os.RemoveAll(kit.dir)
	}
	os.Exit(code)
}

// built compiles the helper (build.sh) and the Open MPI check program,
// skipping without gcc, libpmix-dev or Open MPI's mpicc (.ci/run
// installs them).
func built(t *testing.T) (helper, check string) {
	t.Helper()
	kit.once.Do(func() {
		if _, err := exec.LookPath("mpicc.openmpi"); err != nil {
			kit.skip = "no mpicc.openmpi (apt-get install openmpi-bin libopenmpi-dev libpmix-dev)"
			return
		}
		if kit.dir, kit.err = os.MkdirTemp("", "cosched-pmix-test"); kit.err != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		here := filepath.Dir(file)
		out, err := exec.Command("sh", filepath.Join(here, "build.sh"), kit.dir).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
			kit.skip = "PMIx helper not built: " + strings.TrimSpace(string(out))
			return
		}
		if err != nil {
			kit.err = fmt.Errorf("build.sh: %v\n%s", err, out)
			return
		}
		kit.helper = filepath.Join(kit.dir, HelperName)
		kit.check = filepath.Join(kit.dir, "check")
		if out, err := exec.Command("mpicc.openmpi", "-O2", "-o", kit.check, filepath.Join(here, "testdata", "check.c")).CombinedOutput(); err != nil {
			kit.err = fmt.Errorf("mpicc.openmpi: %v\n%s", err, out)
		}
	})
	switch {
	case kit.err != nil:
		t.Fatal(kit.err)
	case kit.skip != "":
		t.Skip(kit.skip)
	}
	return kit.helper, kit.check
}

// cluster is a job's servers on several "nodes" in one process, with the
// controller's gather between them, as the agents do it.
type cluster struct {
	mu      sync.Mutex
	gather  *pmi.Gather
	servers map[string]*Server
	failed  chan string
}

func newCluster(t *testing.T, nodes []string) *cluster {
	c := &cluster{gather: pmi.NewGather(nodes), servers: map[string]*Server{}, failed: make(chan string, 16)}
	for _, n := range nodes {
		c.servers[n] = NewServer(Hooks{
			Barrier: func(job int64, b pmi.Barrier) {
				c.mu.Lock()
				done, to, err := c.gather.In(n, b)
				c.mu.Unlock()
				if err != nil {
					c.failed <- err.Error()
					return
				}
				for _, node := range to {
					go c.servers[node].BarrierDone(job, *done)
				}
			},
			Fail: func(job int64, reason string) { c.failed <- reason },
		}, nil)
	}
	t.Cleanup(func() {
		for _, s := range c.servers {
			s.Close()
		}
	})
	return c
}

type rankProc struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// run starts a job of the check program on nodes with args; it returns
// the started ranks.
func (c *cluster) run(t *testing.T, helperPath, check string, nodes []string, args ...string) []*rankProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	procs := make([]*rankProc, len(nodes))
	seen := map[string]bool{}
	for _, n := range nodes {
		if seen[n] {
			continue
		}
		seen[n] = true
		env, err := c.servers[n].AddJob(ctx, JobConfig{Job: 7, Nodes: nodes, Here: n, Helper: helperPath, LogDir: t.TempDir()})
		if err != nil {
			t.Fatalf("AddJob on %s: %v", n, err)
		}
		for r, node := range nodes {
			if node != n {
				continue
			}
			if env[r] == nil {
				t.Fatalf("no environment for rank %d on %s", r, n)
			}
			p := &rankProc{cmd: exec.Command(check, args...)}
			p.cmd.Env = append(os.Environ(), env[r]...)
			p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
			if err := p.cmd.Start(); err != nil {
				t.Fatal(err)
			}
			procs[r] = p
		}
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if p != nil && p.cmd.ProcessState == nil {
				p.cmd.Process.Kill()
				p.cmd.Wait()
			}
		}
	})
	return procs
}

func waitAll(t *testing.T, procs []*rankProc) {
	t.Helper()
	for r, p := range procs {
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("rank %d: %v\n%s", r, err, p.out.String())
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("rank %d did not end\n%s", r, p.out.String())
		}
		t.Logf("rank %d: %s", r, strings.TrimSpace(p.out.String()))
		if want := fmt.Sprintf("OK rank %d of %d", r, len(procs)); !strings.Contains(p.out.String(), want) {
			t.Fatalf("rank %d: no OK\n%s", r, p.out.String())
		}
	}
}

// Open MPI's ranks, direct-launched under cosched's helpers on two
// "nodes" with the fence gathered across them, pass their own checks.
func TestOpenMPIRanksUnderHelpers(t *testing.T) {
	helperPath, check := built(t)
	nodes := []string{"a", "a", "b", "b"}
	c := newCluster(t, []string{"a", "b"})
	procs := c.run(t, helperPath, check, nodes)
	waitAll(t, procs)
	for r := range nodes {
		if f := c.servers[nodes[r]].Failure(7, r, true); f != "" {
			t.Errorf("rank %d: failure %q", r, f)
		}
	}
	select {
	case f := <-c.failed:
		t.Fatalf("job failed: %s", f)
	default:
	}
}

// A rank's MPI_Abort reaches the server as the job's failure, with the
// rank and the code.
func TestOpenMPIAbortFailsJob(t *testing.T) {
	helperPath, check := built(t)
	nodes := []string{"a", "b", "b"}
	c := newCluster(t, []string{"a", "b"})
	procs := c.run(t, helperPath, check, nodes, "abort", "2", "7")
	select {
	case f := <-c.failed:
		if !strings.Contains(f, "rank 2 called MPI_Abort") || !strings.Contains(f, "exit code 7") {
			t.Fatalf("failure %q", f)
		}
	case <-time.After(20 * time.Second):
		procs[2].cmd.Process.Kill()
		procs[2].cmd.Wait()
		t.Fatalf("no failure after MPI_Abort; rank 2: %s", procs[2].out.String())
	}
}

// The helper refuses a start it cannot serve, with the reason.
func TestHelperMissing(t *testing.T) {
	s := NewServer(Hooks{Barrier: func(int64, pmi.Barrier) {}, Fail: func(int64, string) {}}, nil)
	defer s.Close()
	_, err := s.AddJob(context.Background(), JobConfig{Job: 1, Nodes: []string{"a"}, Here: "a", Helper: "/nonexistent/cosched-pmix"})
	if err == nil || !strings.Contains(err.Error(), "no PMIx helper") || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("err = %v", err)
	}
}

// A job's directory (the helper's sockets) is locked while the agent
// lives; one an earlier agent left when it died (unlocked) is removed when
// the next job starts, and the job's own directory goes with RemoveJob.
func TestAbandonedDirectorySwept(t *testing.T) {
	helperPath, check := built(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // after built: the kit stays where it is
	left, err := scratch.Make(tmpDirPrefix + "99-")
	if err != nil {
		t.Fatal(err)
	}
	left.Keep() // drops its lock and lock file: put an unlocked one back, as a death leaves it
	if err := os.WriteFile(filepath.Join(left.Path(), ".cosched-scratch.lock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"a", "a"}
	c := newCluster(t, []string{"a"})
	procs := c.run(t, helperPath, check, nodes)
	if _, err := os.Stat(left.Path()); !os.IsNotExist(err) {
		t.Errorf("the abandoned %s is still there (%v)", left.Path(), err)
	}
	mine, _ := filepath.Glob(filepath.Join(tmp, tmpDirPrefix+"7-*"))
	if len(mine) != 1 {
		t.Fatalf("job 7's directories: %q", mine)
	}
	if got := scratch.Sweep(tmp, tmpDirPrefix, nil); len(got) > 0 {
		t.Errorf("a live job's directory swept: %q", got)
	}
	waitAll(t, procs)
	c.servers["a"].RemoveJob(7)
	if _, err := os.Stat(mine[0]); !os.IsNotExist(err) {
		t.Errorf("RemoveJob left %s (%v)", mine[0], err)
	}
}

// A rank's end that its helper's death caused carries that death as the
// reason: Failure, whose ping cannot be written to a dead helper, waits
// for the helper's reader to have seen the end (CI once saw a job fail
// with "rank 1 on n1 exited with status 1" instead,
// node.TestOpenMPIHelperDeathFailsJob). Each round is a fresh chance of
// the race: Failure is asked the moment the helper is dead.
func TestFailureAfterHelperDeathNamesIt(t *testing.T) {
	helper, _ := built(t)
	s := NewServer(Hooks{Barrier: func(int64, pmi.Barrier) {}, Fail: func(int64, string) {}}, nil)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for round := range 20 {
		id := int64(100 + round)
		if _, err := s.AddJob(ctx, JobConfig{Job: id, Nodes: []string{"n0"}, Here: "n0", Helper: helper, LogDir: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		proc := s.jobs[id].h.cmd.Process
		s.mu.Unlock()
		if err := proc.Kill(); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("/proc/%d/stat", proc.Pid)
		for deadline := time.Now().Add(10 * time.Second); ; {
			b, err := os.ReadFile(stat)
			if err != nil || strings.Contains(string(b), ") Z ") {
				break // dead: its pipe is closed
			}
			if time.Now().After(deadline) {
				t.Fatalf("the helper (pid %d) did not die", proc.Pid)
			}
		}
		if got := s.Failure(id, 0, false); !strings.Contains(got, "PMIx server on n0 ended") {
			t.Fatalf("round %d: Failure %q, want the helper's end", round, got)
		}
		s.RemoveJob(id)
	}
}
