package rank

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// spawnReq asks the spawner goroutine to fork and exec one process.
type spawnReq struct {
	path  string
	argv  []string
	env   []string
	dir   string
	files []*os.File // stdin, stdout, stderr, then Spec.ExtraFiles
	cpu   int        // ≥ 0: pin the child to this CPU from its first instruction
	cred  *syscall.Credential
	cg    Cgroup // where the child is born (nil: the agent's cgroups)
	keep  bool   // a keeper: its own session, not killed by the agent's death
	reply chan spawnResult
}

type spawnResult struct {
	pid int
	err error
}

// spawner forks every rank. It runs on one OS thread that it locks and never
// unlocks, because Linux delivers Pdeathsig when the *thread* that forked a
// child exits, and the Go runtime retires threads (for instance when a
// goroutine exits while locked to one). This thread lives until Close has
// reaped every rank: spawnc is closed only then, and returning while locked
// makes the runtime terminate the thread.
//
// The lock also makes the affinity trick in forkExec safe: the runtime never
// clones new threads from a thread locked with LockOSThread (it hands thread
// creation to its template thread), so the temporary CPU mask of this thread
// cannot leak into the agent's other threads.
//
// The same per-thread property gives ranks their priority: scheduling
// policy and nice are per thread on Linux and a forked child inherits its
// forking thread's, so this thread's settings become every rank's.
func (m *Manager) spawner(reqs <-chan spawnReq, done chan<- struct{}) {
	runtime.LockOSThread() // never unlocked: see above
	defer close(done)
	for r := range reqs {
		m.normalPolicy()
		pid, err := forkExec(r, m.log)
		r.reply <- spawnResult{pid: pid, err: err}
	}
}

// forkExec runs on the spawner's locked thread. When the rank is pinned the
// thread itself is pinned around the fork: the child inherits the mask, so
// it never runs (not even the shim's runtime start-up) on another CPU, and
// every thread a Go shim creates inherits it too. Setting the mask on the
// child's pid afterwards would pin only the thread whose tid equals the pid;
// a Go shim's other threads (one of which may be the one that execs) would
// keep the old mask.
func forkExec(r spawnReq, log *zap.Logger) (int, error) {
	if r.cpu >= 0 {
		var saved, want unix.CPUSet
		if err := unix.SchedGetaffinity(0, &saved); err != nil {
			return 0, fmt.Errorf("sched_getaffinity: %w", err)
		}
		want.Set(r.cpu)
		if err := unix.SchedSetaffinity(0, &want); err != nil {
			return 0, fmt.Errorf("pin to cpu %d: %w", r.cpu, err)
		}
		defer func() {
			if err := unix.SchedSetaffinity(0, &saved); err != nil {
				// Only this thread is affected; it only forks ranks,
				// each of which sets its own mask or inherits this one.
				log.Error("rank: restoring the spawner thread's affinity", zap.Error(err))
			}
		}()
	}
	fds := make([]uintptr, len(r.files))
	for i, f := range r.files {
		fds[i] = f.Fd()
	}
	sys := &syscall.SysProcAttr{
		Setpgid:    true, // own group: pgid = pid
		Pdeathsig:  syscall.SIGKILL,
		Credential: r.cred, // nil: the agent's user
	}
	if r.keep {
		// Its own session (and group: pgid = pid): the agent's death
		// neither kills it nor orphans its group into a SIGHUP. No
		// parent-death signal yet: the keeper arms SIGUSR2 itself once it
		// catches it (a signal armed here would kill a keeper whose
		// runtime has not started), then looks whether its agent is gone.
		sys.Setpgid, sys.Setsid, sys.Pdeathsig = false, true, 0
	}
	if r.cg != nil {
		// Like the CPU mask: the child is born in its job's cgroup,
		// either cloned into it or inheriting this thread's (which goes
		// back at once), so it never runs a single instruction outside.
		fd, leave, err := r.cg.Enter(unix.Gettid())
		if err != nil {
			return 0, fmt.Errorf("entering the job's cgroup: %w", err)
		}
		defer func() {
			if err := leave(); err != nil {
				log.Error("rank: the spawner thread did not leave a job's cgroup", zap.Error(err))
			}
		}()
		if fd >= 0 {
			sys.UseCgroupFD, sys.CgroupFD = true, fd
		}
	}
	pid, err := syscall.ForkExec(r.path, r.argv, &syscall.ProcAttr{
		Dir:   r.dir,
		Env:   r.env,
		Files: fds,
		Sys:   sys,
	})
	// ForkExec returns once the child has exec'd (or failed to): the child
	// has called setpgid, so kill(-pid, …) reaches it from now on.
	runtime.KeepAlive(r.files)
	if err != nil {
		return 0, fmt.Errorf("fork/exec %s: %w", r.path, err)
	}
	return pid, nil
}

// normalPolicy puts the spawner's thread (and so the next rank) at the
// normal time-sharing policy with Config.Nice. It runs before every fork:
// the agent may have raised all its threads, this one included, to a
// real-time policy, which a rank must never inherit.
func (m *Manager) normalPolicy() {
	attr := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_NORMAL}
	if m.nice != nil {
		attr.Nice = int32(*m.nice)
	} else if cur, err := unix.SchedGetAttr(0, 0); err == nil {
		attr.Nice = cur.Nice
	}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		m.log.Warn("rank scheduling policy not reset", zap.Error(err))
	}
}
