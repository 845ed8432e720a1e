package rank

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// reap owns one forked process from its fork to its Exit. It blocks in
// waitid on that pid only (never on -1, so children the rest of the agent
// forks are left alone), which costs one OS thread per rank while it waits.
//
// Reaping is in two steps so that a pid is never signalled after it may
// have been recycled: waitid(WNOWAIT) sees the exit but leaves the zombie,
// which pins the pid and the process group id; under mu the rank is marked
// exiting (Signal skips it from then on); the rest of the group, if any, is
// killed (a rank never leaves processes behind); only then does wait4 free
// the pid and collect the status and rusage.
//
// For a Stopped rank, ready receives whether the shim reached its stop
// before anything else (exactly one message).
func (m *Manager) reap(p *proc, s *Spec, started time.Time, ready chan<- readyMsg) {
	defer m.reapers.Done()
	pid := p.pid // written before this goroutine started, never again
	log := m.log.With(zap.Int64("job", s.Job), zap.Int("rank", s.Rank), zap.Int("pid", pid))

	sawStop := false
	if ready != nil {
		code, err := waitNoReap(pid, unix.WSTOPPED|unix.WEXITED)
		if err == nil && code == cldStopped {
			sawStop = true
			ready <- readyMsg{stopped: true}
		}
	}
	_, werr := waitNoReap(pid, unix.WEXITED)
	ended := time.Now()

	m.mu.Lock()
	p.exiting = true
	m.removeLocked(p)
	startErr, kept, killed := p.startErr, p.kept, p.killed
	m.mu.Unlock()

	e := Exit{Job: s.Job, Rank: s.Rank, PID: pid, Code: -1, Started: started, Ended: ended}
	if werr == nil {
		// The zombie leader pins the group id: this reaches only what is
		// left of this rank's group (children it forked).
		_ = unix.Kill(-pid, unix.SIGKILL) // ESRCH: nothing left
		var ws unix.WaitStatus
		var ru unix.Rusage
		for {
			_, werr = unix.Wait4(pid, &ws, 0, &ru)
			if werr != unix.EINTR {
				break
			}
		}
		if werr == nil {
			describe(&e, ws, &ru)
		}
	}
	if kept && werr == nil && startErr == nil && (ready == nil || sawStop) {
		m.keptExit(&e, s, killed)
	}
	switch {
	case werr != nil:
		// ECHILD: someone else reaped it (e.g. the agent set SIGCHLD to
		// SIG_IGN). The status is lost; the process is gone.
		e.Err = fmt.Errorf("rank: job %d rank %d: waiting for pid %d: %w", s.Job, s.Rank, pid, werr)
	case startErr != nil:
		e.Err = startErr
	case ready != nil && !sawStop:
		e.Err = fmt.Errorf("rank: job %d rank %d: shim %s before stopping itself; its message, if any, is in rank-%d.err",
			s.Job, s.Rank, e.how(), s.Rank)
	}
	if ready != nil && !sawStop {
		ready <- readyMsg{err: e.Err}
	}

	m.mu.Lock()
	m.pushLocked(e)
	m.mu.Unlock()
	log.Info("rank ended", zap.Int("code", e.Code), zap.String("signal", e.Signal),
		zap.Duration("cpu", e.CPUTime), zap.Int64("maxrss", e.MaxRSS),
		zap.Duration("elapsed", e.Ended.Sub(e.Started)), zap.Error(e.Err))
}

// keptExit replaces a keeper's exit status with its program's, from the
// keeper's record: a keeper that exits without one failed to start the
// program (its status says how, as the shim's would), or was killed.
func (m *Manager) keptExit(e *Exit, s *Spec, killed bool) {
	base := keepBase(m.keepDir, s.Job, s.Rank)
	rec, ok, err := readExit(base)
	switch {
	case err != nil:
		e.Err = fmt.Errorf("rank: job %d rank %d: %w", s.Job, s.Rank, err)
	case ok:
		cpu, rss := e.CPUTime, e.MaxRSS // the keeper's: its reaped program included
		applyExit(rec, e)
		e.CPUTime, e.MaxRSS = max(e.CPUTime, cpu), max(e.MaxRSS, rss)
	case e.Signal != "" && !killed:
		e.Err = keeperLost(s.Job, s.Rank, e.PID, "was terminated by a signal ("+e.Signal+")")
	}
}

// cldStopped is si_code CLD_STOPPED (include/uapi/asm-generic/siginfo.h),
// which x/sys/unix does not define.
const cldStopped = 5

// waitNoReap waits for pid to reach one of the states in options without
// reaping it, and returns the siginfo code (CLD_EXITED, CLD_STOPPED, …).
func waitNoReap(pid, options int) (int32, error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, options|unix.WNOWAIT, nil)
		if err == nil {
			return info.Code, nil
		}
		if !errors.Is(err, unix.EINTR) {
			return 0, err
		}
	}
}

// how says how the process ended, for messages.
func (e *Exit) how() string {
	if e.Signal != "" {
		return fmt.Sprintf("was terminated by a signal (%s)", e.Signal)
	}
	return fmt.Sprintf("exited with status %d", e.Code)
}
