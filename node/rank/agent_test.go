package rank

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Ranks survive the retirement of the threads their Start ran on and the
// coming and going of other goroutines and threads: only the spawner's
// thread, which lives until Close, is their Pdeathsig parent.
func TestRanksSurviveThreadRetirement(t *testing.T) {
	t.Run("control", func(t *testing.T) {
		// Without the spawner: a child forked with Pdeathsig by a thread
		// that is then retired dies. This shows the hazard is real and
		// that the test below can see it.
		sleep, err := exec.LookPath("sleep")
		if err != nil {
			t.Fatal(err)
		}
		forked := make(chan int)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			pid, err := syscall.ForkExec(sleep, []string{"sleep", "1000"}, &syscall.ProcAttr{
				Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
			})
			if err != nil {
				t.Error(err)
			}
			forked <- pid
		}()
		pid := <-forked
		if pid == 0 {
			return
		}
		reaped := make(chan unix.WaitStatus)
		go func() {
			var ws unix.WaitStatus
			for {
				if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
					break
				}
			}
			reaped <- ws
		}()
		select {
		case ws := <-reaped:
			if !ws.Signaled() || ws.Signal() != unix.SIGKILL {
				t.Errorf("control child ended with %v, want SIGKILL", ws)
			}
		case <-time.After(waitLong):
			_ = unix.Kill(-pid, unix.SIGKILL)
			<-reaped
			t.Errorf("control: a Pdeathsig child survived its thread's retirement; this kernel or runtime does not show the hazard")
		}
	})

	m, dir := newManager(t)
	type started struct {
		pid, tid int
		err      error
	}
	var pids []int
	for i := range 4 {
		res := make(chan started)
		go func() {
			runtime.LockOSThread() // never unlocked: the runtime retires this thread when we return
			pid, err := m.Start(spec(dir, 30, i, i%2 == 1, "sleep", "1000"))
			res <- started{pid, unix.Gettid(), err}
		}()
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		pids = append(pids, r.pid)
		deadline := time.Now().Add(waitLong)
		for {
			if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", r.tid)); err != nil {
				break // the caller's thread is gone
			}
			if time.Now().After(deadline) {
				t.Fatalf("thread %d was not retired", r.tid)
			}
			time.Sleep(poll)
		}
	}
	if err := m.Cont(30); err != nil {
		t.Fatal(err)
	}

	// Goroutines come and go, some retiring their threads.
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			if i%4 == 0 {
				runtime.LockOSThread()
			}
			time.Sleep(time.Millisecond)
		})
	}
	wg.Wait()
	time.Sleep(300 * time.Millisecond) // a Pdeathsig would have been delivered by now

	for _, pid := range pids {
		if s := state(pid); s != 'S' {
			t.Errorf("rank pid %d: state %q, want alive and sleeping", pid, s)
		}
	}
	select {
	case e := <-m.Exits():
		t.Fatalf("unexpected Exit %+v", e)
	default:
	}
}

// Ranks die when their agent is SIGKILLed: a rank started running, one
// started stopped and never continued, and ones continued after a stopped
// start (whose program the shim exec'd, from the forked thread and from
// another thread).
func TestRanksDieWithAgent(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), agentEnv+"=1", "COSCHED_RANK_TEST_DIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// The helper waits for EOF on stdin, so it ends even if this test dies.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper agent: %v; stderr:\n%s", err, stderr.String())
	}
	var pids []int
	starts := map[int]uint64{}
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("helper agent said %q", line)
		}
		pids = append(pids, pid)
		starts[pid] = mustStat(t, pid).startTime
	}
	t.Cleanup(func() { // if a rank survived, do not leave it behind
		for pid, st := range starts {
			if !dead(pid, st) {
				_ = unix.Kill(-pid, unix.SIGKILL)
			}
		}
	})
	if len(pids) != 4 {
		t.Fatalf("helper agent said %q, want 4 pids", line)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for i, pid := range pids {
		d := waitDead(t, pid, starts[pid])
		t.Logf("rank %d (pid %d) gone %v after its agent was reaped", i, pid, d)
	}
}

// helperAgent runs in a child test process (agentEnv): it starts the ranks
// TestRanksDieWithAgent describes, prints their pids, and waits to be killed
// (or for EOF on stdin, should the test process die first).
func helperAgent() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "helper agent:", err)
		return 1
	}
	dir := os.Getenv("COSCHED_RANK_TEST_DIR")
	m, err := NewManager(Config{Shim: []string{os.Args[0]}})
	if err != nil {
		return fail(err)
	}
	running := spec(dir, 1, 0, false, "sleep", "1000")
	stopped := spec(dir, 2, 0, true, "sleep", "1000")
	contd := spec(dir, 3, 0, true, "sleep", "1000")
	contdThread := spec(dir, 4, 0, true, "sleep", "1000")
	contdThread.Env = append(contdThread.Env, shimEnv+"=thread")
	var pids []string
	for _, s := range []Spec{running, stopped, contd, contdThread} {
		pid, err := m.Start(s)
		if err != nil {
			return fail(err)
		}
		if s.Job == 3 || s.Job == 4 {
			if err := m.Cont(s.Job); err != nil {
				return fail(err)
			}
			if err := awaitExec(pid); err != nil {
				return fail(err)
			}
		}
		pids = append(pids, strconv.Itoa(pid))
	}
	fmt.Println(strings.Join(pids, " "))
	_, _ = io.Copy(io.Discard, os.Stdin) // until SIGKILLed
	return 0
}

// awaitExec waits until pid no longer runs this binary (the shim has
// exec'd the program).
func awaitExec(pid int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(waitLong)
	for time.Now().Before(deadline) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe != self {
			return nil
		}
		time.Sleep(poll)
	}
	return fmt.Errorf("pid %d did not exec its program", pid)
}
