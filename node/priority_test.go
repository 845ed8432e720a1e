package node

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/internal/rtprio"
)

// threadPolicies returns the scheduling policy of every thread of this
// process.
func threadPolicies(t *testing.T) map[int]uint32 {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]uint32{}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if a, err := unix.SchedGetAttr(tid, 0); err == nil {
			out[tid] = a.Policy
		}
	}
	return out
}

// The agent's real-time policy covers the threads the Go runtime creates
// after it is set (SCHED_RESET_ON_FORK would not: it put switch skew p99
// at hundreds of milliseconds), and DropRealtime puts every thread back at
// the normal policy, keeping its nice value.
func TestRealtimePolicyReachesLaterThreadsAndDrops(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (real-time policies)")
	}
	t.Cleanup(func() { rtprio.DropRealtime() })
	if err := setOwnRealtime(1); err != nil {
		t.Fatal(err)
	}
	// Goroutines locked to their threads need threads of their own: the
	// runtime clones new ones, which must be at SCHED_RR too.
	const locked = 8
	policies := make(chan uint32, locked)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range locked {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			a, err := unix.SchedGetAttr(0, 0)
			if err != nil {
				policies <- 999
			} else {
				policies <- a.Policy
			}
			<-release
		}()
	}
	for range locked {
		if p := <-policies; p != unix.SCHED_RR {
			t.Errorf("a thread of the agent runs at policy %d, want SCHED_RR", p)
		}
	}
	close(release)
	wg.Wait()
	nice := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_FIFO, Priority: 1}
	if err := unix.SchedSetAttr(0, &nice, 0); err != nil {
		t.Fatal(err)
	}
	dropped, err := rtprio.DropRealtime()
	if err != nil || !dropped {
		t.Fatalf("DropRealtime: %v %v", dropped, err)
	}
	for tid, p := range threadPolicies(t) {
		if p != unix.SCHED_NORMAL {
			t.Errorf("thread %d still at policy %d", tid, p)
		}
	}
	if dropped, _ := rtprio.DropRealtime(); dropped {
		t.Error("nothing left to drop, yet DropRealtime dropped")
	}
}
