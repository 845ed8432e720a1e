package rank

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file is the manager's side of keepers: with Config.KeepDir every
// rank is started through a small process that stays its parent, so that
// the rank outlives its agent (see the package doc, "Keepers"); the
// keeper itself is node/rank/shim's.

// keepRecord is what the manager writes for each kept rank when it has
// forked its keeper (JOB.RANK.keeper in KeepDir): enough for a later life
// of the agent to find the keeper again and to know it is the same
// process (its start time, not its bare pid).
type keepRecord struct {
	Version int    `json:"version"`
	Owner   string `json:"owner"` // Config.KeepOwner: the agent's name
	Job     int64  `json:"job"`
	Rank    int    `json:"rank"`
	PID     int    `json:"pid"`
	// StartTicks is field 22 of /proc/PID/stat: when the process started,
	// in clock ticks after boot. A recycled pid has another.
	StartTicks uint64    `json:"start_ticks"`
	Started    time.Time `json:"started"`
}

const keepVersion = 1

func keepBase(dir string, job int64, rank int) string {
	return filepath.Join(dir, strconv.FormatInt(job, 10)+"."+strconv.Itoa(rank))
}

// writeJSON writes v to path atomically (a reader sees all or nothing).
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// StartTicks reads when process pid started (field 22 of /proc/pid/stat).
func StartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("pid %d has exited", pid) // a zombie is not a keeper
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22; f[0] is field 3
}

// readExit reads a kept rank's exit record; ok is false when there is none.
func readExit(base string) (exitRecord, bool, error) {
	var rec exitRecord
	b, err := os.ReadFile(base + ".exit")
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if len(b) == 0 {
		return rec, false, nil // made for the keeper, not yet written
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("%s.exit: %w", base, err)
	}
	return rec, true, nil
}

// applyExit fills e from the keeper's record of its program's end.
func applyExit(r exitRecord, e *Exit) {
	e.Code, e.Signal, e.CPUTime, e.MaxRSS, e.Ended = r.Code, r.Signal, time.Duration(r.CPUTime), r.MaxRSS, r.Ended
}

// makeExitFile makes a rank's empty exit record, writable by the user its
// keeper runs as (a previous run's under this name goes).
func makeExitFile(path string, cred *syscall.Credential) error {
	os.Remove(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if cred != nil {
		return f.Chown(int(cred.Uid), int(cred.Gid))
	}
	return nil
}

// forgetKept removes a rank's records.
func forgetKept(base string) {
	os.Remove(base + ".keeper")
	os.Remove(base + ".exit")
}

// Kept is a rank a previous life of the agent started and whose keeper
// Adopt found (Alive) or whose end it found recorded.
type Kept struct {
	Job   int64
	Rank  int
	PID   int
	Alive bool
}

// ReadKept lists the kept ranks recorded in dir without touching them:
// the jobs a restarting agent must not clean up. A record that cannot be
// read, or that belongs to another owner, is an error naming the file:
// the directory is refused rather than misread.
func ReadKept(dir, owner string) ([]Kept, error) {
	recs, err := readKeepRecords(dir, owner)
	if err != nil {
		return nil, err
	}
	var out []Kept
	for _, r := range recs {
		t, err := StartTicks(r.PID)
		out = append(out, Kept{Job: r.Job, Rank: r.Rank, PID: r.PID, Alive: err == nil && t == r.StartTicks})
	}
	return out, nil
}

func readKeepRecords(dir, owner string) ([]keepRecord, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.keeper"))
	if err != nil {
		return nil, err
	}
	var out []keepRecord
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("rank: keeper record %s: %w", name, err)
		}
		var r keepRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("rank: keeper record %s is corrupt (%v); move the state directory aside or remove the file (its rank, if alive, is then not adopted)", name, err)
		}
		switch {
		case r.Version != keepVersion:
			return nil, fmt.Errorf("rank: keeper record %s has version %d; this agent reads version %d", name, r.Version, keepVersion)
		case r.Owner != owner:
			return nil, fmt.Errorf("rank: keeper record %s belongs to agent %q, not %q: a state directory of another agent", name, r.Owner, owner)
		case r.PID <= 1 || r.Rank < 0 || filepath.Base(keepBase(dir, r.Job, r.Rank))+".keeper" != filepath.Base(name):
			return nil, fmt.Errorf("rank: keeper record %s is corrupt (job %d rank %d pid %d)", name, r.Job, r.Rank, r.PID)
		}
		out = append(out, r)
	}
	return out, nil
}

// KillKept kills the process groups of the kept ranks recorded in dir
// that still run (verified by start time) and removes the records: the
// cleanup of an agent that will not come back. It returns how many it
// killed.
func KillKept(dir, owner string) (int, error) {
	recs, err := readKeepRecords(dir, owner)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if t, err := StartTicks(r.PID); err == nil && t == r.StartTicks {
			_ = unix.Kill(-r.PID, unix.SIGKILL)
			_ = unix.Kill(-r.PID, unix.SIGCONT)
			n++
		}
		forgetKept(keepBase(dir, r.Job, r.Rank))
	}
	return n, nil
}

// Adopt takes over the kept ranks a previous life of the agent left in
// Config.KeepDir, before any Start: a live keeper (same pid and start
// time) becomes a rank of this manager, signalled and reported like any
// other (its Exit comes from its record when the keeper ends); a rank
// that ended meanwhile has its recorded Exit queued at once; one whose
// keeper is gone without a record gets an Exit with Err. It returns the
// ranks, by job and rank, with Alive telling which run.
func (m *Manager) Adopt() ([]Kept, error) {
	if m.keepDir == "" {
		return nil, nil
	}
	recs, err := readKeepRecords(m.keepDir, m.keepOwner)
	if err != nil {
		return nil, err
	}
	var out []Kept
	for _, r := range recs {
		base := keepBase(m.keepDir, r.Job, r.Rank)
		fd, err := unix.PidfdOpen(r.PID, 0)
		var t uint64
		if err == nil {
			t, err = StartTicks(r.PID) // after the open: the pidfd is of this very process
		}
		if err != nil || t != r.StartTicks {
			if fd >= 0 && err == nil {
				unix.Close(fd)
			}
			out = append(out, Kept{Job: r.Job, Rank: r.Rank, PID: r.PID})
			m.pushEnded(r, base)
			continue
		}
		p := &proc{job: r.Job, rank: r.Rank, pid: r.PID, ready: true, kept: true}
		m.mu.Lock()
		m.addLocked(p)
		m.reapers.Add(1)
		m.mu.Unlock()
		go m.watchAdopted(p, fd, r, base)
		out = append(out, Kept{Job: r.Job, Rank: r.Rank, PID: r.PID, Alive: true})
	}
	return out, nil
}

// pushEnded queues the Exit of a kept rank found ended.
func (m *Manager) pushEnded(r keepRecord, base string) {
	m.pushKeptExit(r, base, false, fmt.Errorf("rank: job %d rank %d: its keeper (pid %d) ended while the agent was away and left no exit record: killed", r.Job, r.Rank, r.PID))
}

// watchAdopted owns an adopted keeper as reap owns a forked one: it is not
// this process's child, so it waits for its pidfd to become readable
// (the keeper has exited), then reports the recorded exit.
func (m *Manager) watchAdopted(p *proc, fd int, r keepRecord, base string) {
	defer m.reapers.Done()
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, -1); err != unix.EINTR {
			break
		}
	}
	m.mu.Lock()
	p.exiting = true
	m.removeLocked(p)
	killed := p.killed
	m.mu.Unlock()
	m.pushKeptExit(r, base, killed, keeperLost(r.Job, r.Rank, r.PID, "ended"))
}

// pushKeptExit queues the Exit of kept rank r, whose keeper has ended:
// the program's status from its exit record; without one, "killed" if
// the manager killed it, else Err noRecord. What is left of its group is
// killed.
func (m *Manager) pushKeptExit(r keepRecord, base string, killed bool, noRecord error) {
	e := Exit{Job: r.Job, Rank: r.Rank, PID: r.PID, Code: -1, Started: r.Started, Ended: time.Now()}
	rec, ok, err := readExit(base)
	switch {
	case err != nil:
		e.Err = fmt.Errorf("rank: job %d rank %d: %w", r.Job, r.Rank, err)
	case ok:
		applyExit(rec, &e)
	case killed:
		e.Signal = "killed"
	default:
		e.Err = noRecord
	}
	_ = unix.Kill(-r.PID, unix.SIGKILL) // leftovers of its group, if any (the id is pinned while it has members)
	m.mu.Lock()
	m.pushLocked(e)
	m.mu.Unlock()
}

// Forget removes the records of a kept rank once its agent has delivered
// its Exit to a controller; pid is the Exit's (the keeper's), so that a
// later run of the same rank keeps its own. Until then the records stay:
// an agent that exits (or is killed) between a rank's end and its
// report leaves the end to its next life, which finds the keeper gone
// and reports the recorded exit (Adopt). Without Config.KeepDir it does
// nothing.
func (m *Manager) Forget(job int64, rank, pid int) {
	if m.keepDir == "" {
		return
	}
	base := keepBase(m.keepDir, job, rank)
	if b, err := os.ReadFile(base + ".keeper"); err == nil {
		var r keepRecord
		if json.Unmarshal(b, &r) == nil && r.PID != pid {
			return // another run's
		}
	}
	forgetKept(base)
}

func keeperLost(job int64, rank, pid int, how string) error {
	return fmt.Errorf("rank: job %d rank %d: its keeper (pid %d) %s before its program did (killed from outside cosched?); the program was killed with it", job, rank, pid, how)
}

// Detach ends the manager's service without touching the ranks: Start
// refuses from now on, nothing is killed or waited for, and Exits is never
// closed. For an agent that exits leaving its kept ranks to its next life
// (their keepers outlive it); the process must exit soon after, since the
// reapers stay blocked until it does.
func (m *Manager) Detach() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.log.Info("rank manager detached: kept ranks left to the agent's next life")
}

// writeKeepRecord records a forked keeper for the next life of the agent.
func (m *Manager) writeKeepRecord(s *Spec, pid int, started time.Time) error {
	t, err := StartTicks(pid)
	if err != nil {
		return err
	}
	return writeJSON(keepBase(m.keepDir, s.Job, s.Rank)+".keeper", keepRecord{Version: keepVersion, Owner: m.keepOwner,
		Job: s.Job, Rank: s.Rank, PID: pid, StartTicks: t, Started: started})
}
