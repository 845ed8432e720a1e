package rank

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// schedTimes is how long a process's threads have run on a processor and
// waited runnable for one, summed (/proc/PID/task/*/schedstat).
type schedTimes struct {
	ran, waited time.Duration
}

// readSchedTimes reads pid's schedTimes; ok is false when the kernel does
// not keep them (no CONFIG_SCHED_INFO) or the process is gone.
func readSchedTimes(pid int) (t schedTimes, ok bool) {
	files, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "schedstat"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		fs := strings.Fields(string(b))
		if len(fs) < 2 {
			continue
		}
		ran, err1 := strconv.ParseInt(fs[0], 10, 64)
		waited, err2 := strconv.ParseInt(fs[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		t.ran += time.Duration(ran)
		t.waited += time.Duration(waited)
		ok = true
	}
	return t, ok
}

// why says, for a shim that has not stopped itself within wall, where
// its time went: waiting for a processor (starved: the node is
// overloaded, or its job's cgroup weighs too little against what else
// runs), running (it does not stop: is the shim command a rank shim?), or
// neither (blocked: asleep, or in I/O). It goes into the rank's error,
// which the job's reason quotes.
func (t schedTimes) why(wall time.Duration) string {
	state := "blocked"
	switch {
	case 2*t.waited >= wall:
		state = "starved of CPU"
	case 2*t.ran >= wall:
		state = "running, not stopping"
	}
	return fmt.Sprintf("it ran %v and waited %v for a processor: %s", t.ran.Round(time.Millisecond), t.waited.Round(time.Millisecond), state)
}
