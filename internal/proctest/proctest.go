// Package proctest finds a cosched cluster's rank processes in /proc, for
// tests that check what runs, what is stopped and what was left behind.
// A rank is a live (not zombie) process with COSCHED_JOB in its
// environment (the shim passes it on to the program).
package proctest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Rank is one rank process as /proc shows it.
type Rank struct {
	PID    int
	PPID   int
	Job    int64
	State  byte   // the state letter of /proc/PID/stat
	Stdout string // where its standard output goes (a rank file in its agent's state directory)
}

// Ranks lists the rank processes keep accepts, this process excluded.
func Ranks(keep func(Rank) bool) ([]Rank, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Rank
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		r, ok := read(pid)
		if ok && r.State != 'Z' && keep(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// JobPIDs lists the pids of job id's ranks that keep accepts.
func JobPIDs(id int64, keep func(Rank) bool) ([]int, error) {
	ranks, err := Ranks(func(r Rank) bool { return r.Job == id && keep(r) })
	var pids []int
	for _, r := range ranks {
		pids = append(pids, r.PID)
	}
	return pids, err
}

// OutputUnder accepts the ranks whose standard output is under dir: the
// ranks of the cluster whose state directory is dir, even those a killed
// agent left (their parent is then another process).
func OutputUnder(dir string) func(Rank) bool {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	return func(r Rank) bool { return strings.HasPrefix(r.Stdout, dir+string(filepath.Separator)) }
}

// State is a process's state letter from /proc/PID/stat (0 if gone).
func State(pid int) byte {
	state, _, ok := stat(pid)
	if !ok {
		return 0
	}
	return state
}

// Frozen reports whether a process's cgroup is frozen or freezing: v1
// freezer.state FROZEN or FREEZING, v2 cgroup.freeze 1. Freezing is like a
// pending SIGSTOP: every task of the cgroup has been told (a fake signal,
// and an IPI if it is on a CPU) and freezes before it returns to user
// mode; one that reads R has not had a CPU yet to take the freeze on.
func Frozen(pid int) bool {
	if p := Cgroup(pid, "freezer"); p != "" {
		st, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup/freezer", p, "freezer.state"))
		if s := strings.TrimSpace(string(st)); s == "FROZEN" || s == "FREEZING" {
			return true
		}
	}
	if p := Cgroup(pid, ""); p != "" {
		for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			f, _ := os.ReadFile(filepath.Join(root, p, "cgroup.freeze"))
			if strings.TrimSpace(string(f)) == "1" {
				return true
			}
		}
	}
	return false
}

// Cgroup is a process's cgroup in the hierarchy of the controllers named
// (as /proc/PID/cgroup lists them: "freezer", "" for the unified one), or
// "" if it has none there or is gone.
func Cgroup(pid int, controllers string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == controllers {
			return parts[2]
		}
	}
	return ""
}

// Parent is a process's parent pid (0 if gone).
func Parent(pid int) int {
	_, ppid, _ := stat(pid)
	return ppid
}

// read describes pid if it is a rank.
func read(pid int) (Rank, bool) {
	env, err := readEnviron(pid)
	if err != nil {
		return Rank{}, false
	}
	r := Rank{PID: pid, Job: -1}
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "COSCHED_JOB="); ok {
			if r.Job, err = strconv.ParseInt(v, 10, 64); err != nil {
				return Rank{}, false
			}
		}
	}
	if r.Job < 0 {
		return Rank{}, false
	}
	var ok bool
	if r.State, r.PPID, ok = stat(pid); !ok {
		return Rank{}, false
	}
	r.Stdout, _ = os.Readlink(fmt.Sprintf("/proc/%d/fd/1", pid))
	return r, true
}

// readEnviron reads pid's environment. A process inside execve has
// an empty one for a moment after its parent saw the exec succeed (Go's
// Start returns once close-on-exec closed its pipe, before the new stack
// holds the environment); a rank caught there would be missed, so that
// read is repeated until the exec is through (at most a second).
func readEnviron(pid int) ([]byte, error) {
	path := fmt.Sprintf("/proc/%d/environ", pid)
	for deadline := time.Now().Add(time.Second); ; {
		env, err := os.ReadFile(path)
		if err != nil || len(env) > 0 || !inExec(pid) || time.Now().After(deadline) {
			return env, err
		}
		time.Sleep(time.Millisecond)
	}
}

// inExec tells a user process whose new stack is not yet set up (its
// env_start, field 50 of /proc/PID/stat, still 0) from one whose
// environment is really empty; kernel threads (PF_KTHREAD) have none.
func inExec(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 48 || f[0] == "Z" {
		return false
	}
	const pfKthread = 0x00200000
	flags, err1 := strconv.ParseUint(f[6], 10, 64)
	envStart, err2 := strconv.ParseUint(f[47], 10, 64)
	return err1 == nil && err2 == nil && flags&pfKthread == 0 && envStart == 0
}

// stat reads the state letter and parent pid of /proc/PID/stat.
func stat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0][0], ppid, true
}
