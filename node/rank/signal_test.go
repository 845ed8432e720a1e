package rank

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Stop and Cont reach a busy rank and a busy child it forked (its group).
func TestStopContReachesGroup(t *testing.T) {
	m, dir := newManager(t)
	childFile := filepath.Join(dir, "child")
	pid := mustStart(t, m, spec(dir, 10, 0, false, "sh", "-c",
		`sh -c 'while :; do :; done' & echo $! > "$1"; while :; do :; done`, "sh", childFile))
	child := waitPidFile(t, childFile)
	if st := mustStat(t, child); st.pgid != pid {
		t.Fatalf("child's pgid = %d, want the rank's %d", st.pgid, pid)
	}
	childStart := mustStat(t, child).startTime

	for i := range 3 {
		if err := m.Stop(10); err != nil {
			t.Fatal(err)
		}
		dl, dc := waitState(t, pid, "T"), waitState(t, child, "T")
		time.Sleep(50 * time.Millisecond)
		if s, c := state(pid), state(child); s != 'T' || c != 'T' {
			t.Fatalf("round %d: states %q %q after Stop, want 'T'", i, s, c)
		}
		if err := m.Cont(10); err != nil {
			t.Fatal(err)
		}
		cl, cc := waitState(t, pid, "RS"), waitState(t, child, "RS")
		t.Logf("round %d: observed stopped after %v/%v, running after %v/%v (leader/child, /proc polling)", i, dl, dc, cl, cc)
	}
	if n, err := m.Signal(10, unix.SIGCONT); n != 1 || err != nil {
		t.Fatalf("Signal = %d, %v; want 1 group", n, err)
	}
	if n, err := m.Signal(99, unix.SIGCONT); n != 0 || err != nil {
		t.Fatalf("Signal to an unknown job = %d, %v; want 0", n, err)
	}

	if err := m.Kill(10); err != nil {
		t.Fatal(err)
	}
	if e := nextExit(t, m); e.Signal != "killed" || e.Code != -1 || e.PID != pid {
		t.Fatalf("Exit = %+v, want killed", e)
	}
	waitDead(t, child, childStart)
}

// Kill ends stopped ranks (a shim that was never continued, and a program
// stopped by Stop with a child) and leaves nothing behind.
func TestKillStopped(t *testing.T) {
	m, dir := newManager(t)

	shim := mustStart(t, m, spec(dir, 12, 0, true, "sleep", "1000"))
	if err := m.Kill(12); err != nil {
		t.Fatal(err)
	}
	if e := nextExit(t, m); e.PID != shim || e.Signal != "killed" || e.Code != -1 || e.Err != nil {
		t.Fatalf("Exit = %+v, want killed without Err", e)
	}
	if _, ok := readStat(shim); ok {
		t.Fatalf("pid %d still in /proc", shim)
	}

	childFile := filepath.Join(dir, "child")
	pid := mustStart(t, m, spec(dir, 13, 0, false, "sh", "-c", `sleep 1000 & echo $! > "$1"; wait`, "sh", childFile))
	child := waitPidFile(t, childFile)
	childStart := mustStat(t, child).startTime
	if err := m.Stop(13); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "T")
	waitState(t, child, "T")
	if err := m.Kill(13); err != nil {
		t.Fatal(err)
	}
	if e := nextExit(t, m); e.PID != pid || e.Signal != "killed" {
		t.Fatalf("Exit = %+v, want killed", e)
	}
	if _, ok := readStat(pid); ok {
		t.Fatalf("pid %d still in /proc", pid)
	}
	waitDead(t, child, childStart)
	if got := m.Ranks(13); len(got) != 0 {
		t.Fatalf("Ranks = %v", got)
	}
}

// When the rank's leader exits, what is left of its group is killed.
func TestLeaderExitKillsGroup(t *testing.T) {
	m, dir := newManager(t)
	childFile := filepath.Join(dir, "child")
	pid := mustStart(t, m, spec(dir, 14, 0, false, "sh", "-c", `sleep 1000 & echo $! > "$1"; exit 0`, "sh", childFile))
	if e := nextExit(t, m); e.PID != pid || e.Code != 0 {
		t.Fatalf("Exit = %+v", e)
	}
	child := waitPidFile(t, childFile)
	if st, ok := readStat(child); ok && st.state != 'Z' {
		// The child may still be dying: SIGKILL is asynchronous.
		waitDead(t, child, st.startTime)
	}
}

// SIGSTOP/SIGCONT that arrive while a Stopped rank's shim has not yet
// stopped itself are neither lost nor able to release it early; other
// signals are delivered at once.
func TestSignalsDuringStart(t *testing.T) {
	slowShim := func(c *Config) {
		c.Shim = []string{"sh", "-c", `sleep 0.3; exec "$0" "$@"`, os.Args[0]}
	}
	type result struct {
		pid int
		err error
	}
	// start begins a Stopped start, waits until the process exists (the
	// slow shim is sleeping), sends sigs, and returns Start's result.
	start := func(t *testing.T, m *Manager, s Spec, sigs ...unix.Signal) result {
		res := make(chan result, 1)
		go func() {
			pid, err := m.Start(s)
			res <- result{pid, err}
		}()
		deadline := time.Now().Add(waitLong)
		for len(m.Ranks(s.Job)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("rank never appeared")
			}
			time.Sleep(time.Millisecond)
		}
		if pid := m.Ranks(s.Job)[0]; state(pid) == 'T' {
			t.Log("the shim stopped before the signals were sent: the pending path is not exercised")
		}
		for _, sig := range sigs {
			if _, err := m.Signal(s.Job, sig); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case r := <-res:
			return r
		case <-time.After(waitLong):
			t.Fatal("Start did not return")
		}
		panic("unreachable")
	}

	t.Run("cont wins", func(t *testing.T) {
		m, dir := newManager(t, slowShim)
		r := start(t, m, spec(dir, 15, 0, true, "true"), unix.SIGSTOP, unix.SIGCONT)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if e := nextExit(t, m); e.PID != r.pid || e.Code != 0 || e.Err != nil {
			t.Fatalf("Exit = %+v, want the program to have run", e)
		}
	})
	t.Run("stop wins", func(t *testing.T) {
		m, dir := newManager(t, slowShim)
		r := start(t, m, spec(dir, 16, 0, true, "true"), unix.SIGCONT, unix.SIGSTOP)
		if r.err != nil {
			t.Fatal(r.err)
		}
		time.Sleep(100 * time.Millisecond)
		if s := state(r.pid); s != 'T' {
			t.Fatalf("state %q, want still stopped", s)
		}
		if err := m.Cont(16); err != nil {
			t.Fatal(err)
		}
		if e := nextExit(t, m); e.PID != r.pid || e.Code != 0 || e.Err != nil {
			t.Fatalf("Exit = %+v", e)
		}
	})
	t.Run("kill", func(t *testing.T) {
		m, dir := newManager(t, slowShim)
		r := start(t, m, spec(dir, 17, 0, true, "true"), unix.SIGKILL, unix.SIGCONT)
		if r.err == nil {
			t.Fatal("Start succeeded for a rank killed while starting")
		}
		if e := nextExit(t, m); e.PID == 0 || e.Signal != "killed" || e.Err == nil {
			t.Fatalf("Exit = %+v, want killed with Err", e)
		}
	})
}

// StopRank and ContRank address one rank of a job, not its siblings.
func TestStopRankAddressesOneRank(t *testing.T) {
	m, dir := newManager(t)
	busy := []string{"sh", "-c", "while :; do :; done"}
	p0 := mustStart(t, m, spec(dir, 20, 0, false, busy...))
	p1 := mustStart(t, m, spec(dir, 20, 1, false, busy...))
	if err := m.StopRank(20, 0); err != nil {
		t.Fatal(err)
	}
	waitState(t, p0, "T")
	time.Sleep(50 * time.Millisecond)
	if s := state(p1); s == 'T' {
		t.Fatalf("rank 1 stopped by StopRank(20, 0)")
	}
	if err := m.ContRank(20, 0); err != nil {
		t.Fatal(err)
	}
	waitState(t, p0, "RS")
	if ok, err := m.SignalRank(20, 7, unix.SIGCONT); ok || err != nil {
		t.Fatalf("SignalRank to an unknown rank = %v, %v", ok, err)
	}
	if err := m.Kill(20); err != nil {
		t.Fatal(err)
	}
	nextExit(t, m)
	nextExit(t, m)
}
