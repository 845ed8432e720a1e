package node

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setOwnNice gives every thread of this process the nice value n. Linux
// keeps nice per thread and new threads inherit their creator's, so doing
// this early covers the threads the Go runtime starts later. A negative
// value (a higher priority than the ranks') needs CAP_SYS_NICE.
//
// Why: an agent must switch rows and answer the controller promptly while
// its node's processors are busy with ranks; a woken agent thread with a
// higher weight preempts a spinning rank at once instead of queueing
// behind it.
func setOwnNice(n int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// ESRCH: the thread exited since it was listed (the runtime
		// retires threads): nothing to set.
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, n); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("set nice %d on thread %d: %w", n, tid, err)
		}
	}
	return nil
}

// setOwnRealtime puts every thread of this process at SCHED_RR priority
// prio; threads the Go runtime creates later inherit it from their
// creator. The strobe path then runs above that (its own thread at SCHED_FIFO
// at a higher priority), and every runtime thread it may wait for (one
// that holds a P it needs after a system call, or the garbage collector's
// stop-the-world) also preempts busy ranks instead of queueing behind
// them: without this, measured switch skew p99 was milliseconds, with it
// under 200 µs.
//
// Round-robin, not FIFO: the Go runtime spins in places until another of
// its threads moves (a goroutine reaching a safe point for the garbage
// collector), and at SCHED_FIFO a spinning thread is never preempted by an
// equal-priority one queued on its processor. With several real-time Go
// processes on 2 cores that livelocked for 14 minutes; at SCHED_RR the
// spinner loses the processor after its time slice (100 ms by default).
//
// Ranks do not inherit it: the rank spawner resets its own thread to the
// normal policy before every fork. (Not SCHED_RESET_ON_FORK: it also resets
// the threads the Go runtime clones later, which put switch skew p99 back
// at hundreds of milliseconds.) Other children may inherit it, which is why
// every cosched command starts by dropping a real-time policy it inherited
// (rtprio.DropRealtime).
func setOwnRealtime(prio int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	attr := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_RR, Priority: uint32(prio)}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil && !errors.Is(err, unix.ESRCH) { // exited since listed
			return fmt.Errorf("SCHED_RR %d on thread %d: %w", prio, tid, err)
		}
	}
	return nil
}
