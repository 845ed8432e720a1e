package rank

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Signal sends sig to the process group of every rank of job on this node
// and returns how many groups it addressed. A rank still being started is
// addressed too: a signal sent before its fork completes is delivered right
// after it; SIGSTOP and SIGCONT sent to a Stopped rank whose shim has not yet
// stopped itself are folded into whether Start will continue it (the last
// one wins), so the shim is never woken before its own SIGSTOP.
func (m *Manager) Signal(job int64, sig unix.Signal) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.signalLocked(job, sig)
}

func (m *Manager) signalLocked(job int64, sigs ...unix.Signal) (int, error) {
	var errs []error
	n := 0
	for _, p := range m.jobs[job] {
		for _, sig := range sigs {
			if err := m.deliverLocked(p, sig); err != nil {
				errs = append(errs, err)
			}
		}
		n++
	}
	return n, errors.Join(errs...)
}

// Stop sends SIGSTOP to the job's groups. It returns once the signals are
// sent; the processes stop asynchronously (within a scheduler tick or so).
func (m *Manager) Stop(job int64) error {
	_, err := m.Signal(job, unix.SIGSTOP)
	return err
}

// Cont sends SIGCONT to the job's groups.
func (m *Manager) Cont(job int64) error {
	_, err := m.Signal(job, unix.SIGCONT)
	return err
}

// Kill sends SIGKILL, then SIGCONT (harmless; nothing stays stopped), to the
// job's groups. The Exits follow as the ranks are reaped.
func (m *Manager) Kill(job int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, err := m.signalLocked(job, unix.SIGKILL, unix.SIGCONT)
	return err
}

// deliverLocked applies sig to one rank according to its state (see Signal).
func (m *Manager) deliverLocked(p *proc, sig unix.Signal) error {
	switch {
	case p.exiting:
		return nil
	case p.pid == 0:
		p.pending = append(p.pending, sig)
		return nil
	case !p.ready && sig == unix.SIGSTOP:
		p.contPending = false
		return nil
	case !p.ready && sig == unix.SIGCONT:
		p.contPending = true
		return nil
	}
	return m.killLocked(p, sig)
}

// killLocked signals the rank's process group. Holding mu with p.exiting
// false guarantees the group id is still this rank's: the leader has not
// been reaped (its zombie pins the id), see reap.
func (m *Manager) killLocked(p *proc, sig unix.Signal) error {
	if sig == unix.SIGKILL {
		p.killed = true // a keeper that dies of it was killed by us, not lost
	}
	if err := unix.Kill(-p.pid, sig); err != nil {
		return fmt.Errorf("rank: job %d rank %d: kill(-%d, %s): %w", p.job, p.rank, p.pid, unix.SignalName(sig), err)
	}
	if sig == unix.SIGCONT {
		p.released = true
	}
	if ce := m.log.Check(zap.DebugLevel, "rank signalled"); ce != nil { // no field allocation on the hot path
		ce.Write(zap.Int64("job", p.job), zap.Int("rank", p.rank),
			zap.Int("pgid", p.pid), zap.String("signal", unix.SignalName(sig)))
	}
	return nil
}

// Release continues the job's ranks that were started Stopped and have
// never been continued (their shims), and no other: with a suspension
// that does not use signals (a cgroup freezer), the first continue is
// the only SIGCONT a rank gets, and it reaches the shim, before the
// program exists. A rank still starting is released as by Cont.
func (m *Manager) Release(job int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, p := range m.jobs[job] {
		if !p.released {
			if err := m.deliverLocked(p, unix.SIGCONT); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// SignalRank sends sig to the process group of one rank of job, with the
// same handling of ranks still starting as Signal. It reports whether the
// rank is known here.
func (m *Manager) SignalRank(job int64, rank int, sig unix.Signal) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.jobs[job][rank]
	if p == nil {
		return false, nil
	}
	return true, m.deliverLocked(p, sig)
}

// StopRank sends SIGSTOP to one rank (process-level slot reuse).
func (m *Manager) StopRank(job int64, rank int) error {
	_, err := m.SignalRank(job, rank, unix.SIGSTOP)
	return err
}

// ContRank sends SIGCONT to one rank.
func (m *Manager) ContRank(job int64, rank int) error {
	_, err := m.SignalRank(job, rank, unix.SIGCONT)
	return err
}
