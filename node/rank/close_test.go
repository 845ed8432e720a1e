package rank

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"
)

// Close kills running, stopped and never-continued ranks and their children,
// reaps them, delivers their Exits, closes Exits and leaves no goroutine.
func TestCloseKillsEverything(t *testing.T) {
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	m, err := NewManager(Config{Shim: []string{os.Args[0]}, Log: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel))})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			closeAndDrain(t, m)
		}
	})

	var pids []int
	pids = append(pids, mustStart(t, m, spec(dir, 20, 0, false, "sh", "-c", "while :; do :; done")))
	pids = append(pids, mustStart(t, m, spec(dir, 20, 1, true, "sleep", "1000")))
	stopped := mustStart(t, m, spec(dir, 21, 0, false, "sleep", "1000"))
	pids = append(pids, stopped)
	if err := m.Stop(21); err != nil {
		t.Fatal(err)
	}
	waitState(t, stopped, "T")
	childFile := filepath.Join(dir, "child")
	pids = append(pids, mustStart(t, m, spec(dir, 22, 0, false, "sh", "-c", `sleep 1000 & echo $! > "$1"; wait`, "sh", childFile)))
	child := waitPidFile(t, childFile)
	childStart := mustStat(t, child).startTime

	exits := closeAndDrain(t, m)
	closed = true
	if len(exits) != len(pids) {
		t.Fatalf("%d Exits after Close, want %d: %+v", len(exits), len(pids), exits)
	}
	for _, e := range exits {
		if e.Signal != "killed" || e.Err != nil {
			t.Errorf("Exit = %+v, want killed", e)
		}
	}
	for _, pid := range pids {
		if _, ok := readStat(pid); ok {
			t.Errorf("pid %d still in /proc after Close", pid)
		}
	}
	waitDead(t, child, childStart)

	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := m.Start(spec(dir, 23, 0, false, "true")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v, want ErrClosed", err)
	}
	if n, err := m.Signal(20, unix.SIGCONT); n != 0 || err != nil {
		t.Fatalf("Signal after Close = %d, %v", n, err)
	}
	if err := m.Kill(20); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(waitLong)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(poll)
	}
}

// Close racing with Starts: every Start that is not refused with ErrClosed
// yields exactly one Exit, and nothing is left running.
func TestCloseDuringStarts(t *testing.T) {
	m, dir := newManager(t)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
		pids     []int
	)
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				pid, err := m.Start(spec(dir, int64(1000*(g+1)+i), 0, i%2 == 0, "sleep", "1000"))
				if errors.Is(err, ErrClosed) {
					return
				}
				mu.Lock()
				accepted++
				if pid != 0 {
					pids = append(pids, pid)
				}
				mu.Unlock()
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	exits := closeAndDrain(t, m)
	wg.Wait()
	if len(exits) != accepted {
		t.Fatalf("%d Exits for %d accepted Starts", len(exits), accepted)
	}
	for _, pid := range pids {
		if _, ok := readStat(pid); ok {
			t.Errorf("pid %d still in /proc after Close", pid)
		}
	}
	t.Logf("%d Starts accepted before Close", accepted)
}

// Reaping does not wait for the reader of Exits: ranks that end while
// nobody reads are reaped at once (no zombies), and their Exits are kept.
func TestReapingDoesNotWaitForReader(t *testing.T) {
	m, dir := newManager(t)
	const n = 100 // more than the channel's buffer
	pids := make(map[int]bool)
	for i := range n {
		pids[mustStart(t, m, spec(dir, int64(200+i), 0, false, "true"))] = true
	}
	deadline := time.Now().Add(waitLong)
	for pid := range pids {
		for {
			if _, ok := readStat(pid); !ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d not reaped (state %q) while Exits is unread", pid, state(pid))
			}
			time.Sleep(poll)
		}
	}
	for range n {
		if e := nextExit(t, m); !pids[e.PID] || e.Code != 0 {
			t.Fatalf("Exit = %+v", e)
		}
	}
}
