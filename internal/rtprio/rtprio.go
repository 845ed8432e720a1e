// Package rtprio drops a real-time scheduling policy a process inherited.
// It is apart from node (which raises the agent's) so that the light CLI
// binary can call it without linking the agent.
package rtprio

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DropRealtime puts every thread of this process that runs at a
// real-time policy back at the normal one (its nice value kept), and
// reports whether any did. Every cosched command calls it first: a process
// started by a real-time parent (an agent's test binary, a real-time shell)
// inherits its policy, and a CLI command or an agent not told to use
// real-time priority must not keep it: several of them spinning at
// real-time priority starved a 2-core machine for 14 minutes. An agent
// that is told raises itself afterwards.
func DropRealtime() (bool, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false, err
	}
	dropped := false
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		cur, err := unix.SchedGetAttr(tid, 0)
		if err != nil || (cur.Policy != unix.SCHED_FIFO && cur.Policy != unix.SCHED_RR) {
			continue
		}
		attr := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_NORMAL, Nice: cur.Nice}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil && !errors.Is(err, unix.ESRCH) { // exited since listed
			return dropped, fmt.Errorf("normal policy on thread %d: %w", tid, err)
		}
		dropped = true
	}
	return dropped, nil
}
