package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/cosched/cosched/node/jobcg"
	"github.com/cosched/cosched/node/rank"
)

// This file is the agent's cleanup guard. An agent that dies without
// stopping (SIGKILL, a crash, the OOM killer, srun answering scancel)
// cannot clean up after itself: its ranks die of their parent-death
// signal, but what they forked into a session of their own lives on in the
// job cgroups, and on cgroup v1 a rank frozen by --suspend freezer takes
// that SIGKILL only once thawed, which no one would do. Its next start,
// `agent --cleanup` (systemd's ExecStopPost) or `cluster down` clean up,
// but under Slurm none of them comes. So an agent whose jobs have cgroups
// starts a guard: a small process, no descendant of the agent, that waits
// for the agent's death (a pidfd: no wake-ups meanwhile), then cleans up
// as `agent --cleanup` does (thaw, kill, remove) and exits. An agent that
// stops cleanly has cleaned already: it stops its guard last, and waits
// for it. An agent's kept ranks (--keep-ranks) wait for its next life:
// its guard waits --controller-grace for that life (a new agent holding
// the state directory), as the controller waits before it fails their
// jobs; if none comes, it kills them too, rather than leave time-shared
// ones stopped for ever. An agent that detaches (SIGTERM with
// --keep-ranks) leaves its guard watching. An agent without cgroups or
// kept ranks has no guard: it would find nothing.

// GuardLogName is the file in the state directory where the guard logs.
const GuardLogName = "cleanup-guard.log"

// guardProc is a started guard: its pid and a pidfd of it (pid 0: none).
type guardProc struct {
	pid   int
	pidfd int
}

// guardStopTimeout bounds the wait for a guard told to stop: it exits at
// once, unless the host is starved.
const guardStopTimeout = 5 * time.Second

// needsGuard says whether the agent's death could leave processes in its
// job cgroups (see above), and a guard can be started.
func (a *Agent) needsGuard() bool {
	return len(a.cfg.Guard) > 0 && (a.cg.Mode() != jobcg.ModeNone || a.cfg.KeepRanks)
}

// startGuard starts the agent's cleanup guard through cfg.Guard, a
// starter that starts the guard and exits (StartGuard): the guard is then
// no descendant of the agent, so what kills the agent's process tree at
// once (srun answering SIGTERM, Slurm's proctrack/linuxproc) does not kill
// the guard with it. A guard that cannot start is logged: the agent runs,
// and the gap above is back.
func (a *Agent) startGuard() {
	if !a.needsGuard() {
		return
	}
	cmd := exec.Command(a.cfg.Guard[0], append(slices.Clone(a.cfg.Guard[1:]), GuardArgs(a.cfg)...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		var pid int
		if pid, err = strconv.Atoi(string(bytes.TrimSpace(out))); err == nil {
			// The guard waits for this process: its pid is its own.
			var fd int
			if fd, err = unix.PidfdOpen(pid, 0); err == nil {
				a.guard = guardProc{pid: pid, pidfd: fd}
				a.log.Info("cleanup guard started: it cleans up after this agent if it dies without stopping", zap.Int("pid", pid))
				return
			}
		}
	}
	a.log.Error("the cleanup guard did not start: if this agent dies without stopping, what its jobs leave waits for `cosched agent --cleanup` or its next start",
		zap.Error(err), zap.String("stderr", stderr.String()))
}

// stopGuard stops the agent's guard, once the agent has cleaned up, and
// waits for it to exit (guardStopTimeout at most). An agent that detaches
// leaves it: it watches for the next life.
func (a *Agent) stopGuard(detached bool) {
	g := a.guard
	if g.pid == 0 {
		return
	}
	a.guard = guardProc{}
	defer unix.Close(g.pidfd)
	if detached {
		return
	}
	if err := unix.PidfdSendSignal(g.pidfd, unix.SIGTERM, nil, 0); err != nil {
		if !errors.Is(err, unix.ESRCH) {
			a.log.Warn("stopping the cleanup guard", zap.Int("pid", g.pid), zap.Error(err))
		}
		return
	}
	switch exited, err := pidfdWait(g.pidfd, guardStopTimeout); {
	case err != nil:
		a.log.Warn("waiting for the cleanup guard to stop", zap.Int("pid", g.pid), zap.Error(err))
	case !exited:
		a.log.Warn("the cleanup guard did not stop", zap.Int("pid", g.pid), zap.Duration("waited", guardStopTimeout))
	}
}

// pidfdWait waits until the process of pidfd fd has exited, or timeout
// has passed (a negative timeout: no limit), and reports whether it
// exited.
func pidfdWait(fd int, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		ms := -1
		if timeout >= 0 {
			ms = int(max(time.Until(deadline), 0).Milliseconds())
		}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) && (timeout < 0 || time.Now().Before(deadline)) {
			continue
		}
		return n > 0, err
	}
}

// GuardArgs are the guard's flags for the agent of cfg, after the
// starter's command: what names the agent's state directory and cgroups.
func GuardArgs(cfg Config) []string {
	args := []string{"--name", cfg.Name, "--state-dir", cfg.StateDir}
	if cfg.Cgroups != "" {
		args = append(args, "--cgroups", cfg.Cgroups)
	}
	if cfg.KeepRanks {
		args = append(args, "--keep-ranks", "--controller-grace", cfg.ControllerGrace.String())
	}
	return args
}

// StartGuard starts a guard, guard (a command and its arguments, to which
// the agent's process is appended as --when-gone PID:TICKS), for the
// agent that is this process's parent: in a session of its own, its
// output appended to GuardLogName in cfg's state directory. It returns
// the guard's pid without waiting for it: the starter exits next, and the
// guard's parent becomes init (or the nearest subreaper).
func StartGuard(cfg Config, guard []string) (int, error) {
	agent := os.Getppid()
	ticks, err := rank.StartTicks(agent)
	if err != nil {
		return 0, fmt.Errorf("node: cleanup guard: the agent: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(cfg.StateDir, GuardLogName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("node: cleanup guard: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(guard[0], append(slices.Clone(guard[1:]), "--when-gone", FormatProcess(agent, ticks))...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("node: cleanup guard: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release() // not waited for: it outlives this process
	return pid, nil
}

// FormatProcess names a process by its pid and start time (clock ticks
// after boot, /proc/PID/stat): PID:TICKS, which ParseProcess reads.
func FormatProcess(pid int, ticks uint64) string {
	return strconv.Itoa(pid) + ":" + strconv.FormatUint(ticks, 10)
}

// ParseProcess reads PID:TICKS (FormatProcess).
func ParseProcess(s string) (pid int, ticks uint64, err error) {
	p, t, ok := strings.Cut(s, ":")
	if ok {
		pid, err = strconv.Atoi(p)
		if err == nil && pid > 0 {
			ticks, err = strconv.ParseUint(t, 10, 64)
			if err == nil {
				return pid, ticks, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("%q: want PID:TICKS, a process id and its start time in clock ticks", s)
}

// CleanupWhenGone waits until the process pid that started at ticks (the
// agent of cfg) has ended, then cleans up after it as CleanupCgroups does.
// With cfg.KeepRanks it first waits for the agent's next life as long as
// the controller waits for the agent (the grace the agent recorded from
// the controller's hello, else cfg.ControllerGrace), and cleans only if
// none came, its kept ranks included. If another life of the agent holds
// the state directory by then, that life cleaned up at its start (or took
// the kept ranks): it returns 0 and nil. It returns ctx's error if ctx
// ends first. It first leaves its agent's cgroup (jobcg.Escape).
func CleanupWhenGone(ctx context.Context, cfg Config, pid int, ticks uint64) (int, error) {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	// Out of the agent's own cgroup, beside its jobs': a batch system
	// that kills that cgroup's members with the agent (Slurm's
	// proctrack/cgroup) would kill its guard too, and leave the jobs.
	if abs, err := filepath.Abs(cfg.StateDir); err == nil {
		cfg.StateDir = abs
	}
	if back, err := jobcg.Escape(jobcg.Config{Agent: cgroupSubtree(cfg), Mode: cfg.Cgroups}); err != nil {
		cfg.Log.Warn("the guard stays in its agent's cgroup: what kills that cgroup's processes kills the guard too", zap.Error(err))
	} else {
		defer func() {
			if err := back(); err != nil {
				cfg.Log.Warn("the guard's own cgroup is left", zap.Error(err))
			}
		}()
	}
	if err := waitGone(ctx, pid, ticks); err != nil {
		return 0, err
	}
	if cfg.KeepRanks {
		grace, whose := guardGrace(cfg)
		switch next, err := waitNextLife(ctx, cfg, grace); {
		case err != nil:
			return 0, err
		case next == nextLifeCame:
			cfg.Log.Info("another life of the agent runs; it takes the kept ranks", zap.String("agent", cfg.Name))
			return 0, nil
		case next == nextLifeLate:
			cfg.Log.Warn("the agent did not come back within its grace: its kept ranks are killed", zap.String("agent", cfg.Name),
				zap.Duration("grace", grace), zap.String("whose", whose))
		}
		cfg.KeepRanks = false
	}
	n, err := CleanupCgroups(cfg)
	if errors.Is(err, errStateDirInUse) {
		cfg.Log.Info("another life of the agent runs; it cleaned up after this one", zap.String("agent", cfg.Name))
		return 0, nil
	}
	return n, err
}

// nextLifePoll is how often a guard looks for the next life of an agent
// that keeps its ranks, once the agent is gone: it then has time to spare.
const nextLifePoll = time.Second

// What became of an agent's kept ranks while its guard waited.
const (
	nextLifeCame     = iota // a new life of the agent holds the state directory
	nextLifeLate            // none came within the grace; ranks are still kept
	nextLifeNoneKept        // none is kept any more (cluster down killed them)
)

// waitNextLife waits, once the agent of cfg is gone, for its next life
// (a process holding its state directory's lock) for grace at most,
// looking every nextLifePoll, and says what came of it.
func waitNextLife(ctx context.Context, cfg Config, grace time.Duration) (int, error) {
	deadline := time.Now().Add(grace)
	for {
		held, err := stateDirHeld(cfg.StateDir)
		if err != nil {
			return 0, err
		}
		if held {
			return nextLifeCame, nil
		}
		kept, err := rank.ReadKept(keepDir(cfg), cfg.Name)
		if err != nil {
			return 0, fmt.Errorf("node: %w", err)
		}
		if len(liveJobs(kept)) == 0 {
			return nextLifeNoneKept, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nextLifeLate, nil
		}
		select {
		case <-time.After(min(left, nextLifePoll)):
		case <-ctx.Done():
			return 0, fmt.Errorf("node: waiting for the agent's next life: %w", context.Cause(ctx))
		}
	}
}

// stateDirHeld reports whether a process holds the state directory's
// lock: a running agent.
func stateDirHeld(dir string) (bool, error) {
	f, err := openStateDirLock(dir)
	if err != nil {
		return false, fmt.Errorf("node: %w", err)
	}
	defer f.Close() // and so the lock, if this took it
	return tryLock(f)
}

// waitGone returns once process pid, started at ticks, has ended: at
// once if it has (or pid is another process's now), else when its pidfd
// says so. The wait is one blocking poll: no wake-ups meanwhile. When ctx
// ends first it returns ctx's error and leaves a goroutine blocked in the
// poll until the process ends or this one exits (a guard exits next).
func waitGone(ctx context.Context, pid int, ticks uint64) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("node: watching process %d: %w", pid, err)
	}
	if t, err := rank.StartTicks(pid); err != nil || t != ticks { // after the open: the pidfd is of this very process
		unix.Close(fd)
		return nil
	}
	done := make(chan error, 1)
	go func() {
		defer unix.Close(fd)
		_, err := pidfdWait(fd, -1)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("node: watching process %d: %w", pid, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("node: watching process %d: %w", pid, context.Cause(ctx))
	}
}
