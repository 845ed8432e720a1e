package rank

import (
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
)

// Spec describes one rank to launch.
type Spec struct {
	Job  int64
	Rank int
	Size int
	// Argv is the program and its arguments. Argv[0] is resolved with
	// exec.LookPath against the agent's PATH and made absolute; the program
	// receives the resolved path as its argv[0]. Resolution failures are
	// spawn failures (an error from Start and an Exit with Err).
	Argv []string
	// Env is extra environment, appended to the agent's. The manager then
	// sets COSCHED_JOB, COSCHED_RANK and COSCHED_SIZE (they override Env).
	// When a variable appears more than once the last value wins.
	Env []string
	// Dir is the working directory; empty means LogDir.
	Dir string
	// LogDir receives rank-<Rank>.out and rank-<Rank>.err (stdout and
	// stderr, opened O_APPEND). It is created if missing. Required.
	LogDir string
	// CPU pins the rank to one CPU when ≥ 0; -1 means no pinning.
	CPU int
	// ExtraFiles are open files the rank inherits as descriptors 3, 4, …
	// (a PMI socket, for instance). The caller keeps ownership: it closes
	// its copies once Start returns.
	ExtraFiles []*os.File
	// Stopped starts the rank stopped: its program does not execute a
	// single instruction before the first Cont (see the package doc).
	Stopped bool
	// Credential, when set, runs the rank (and its shim) as this user,
	// group and supplementary groups (the manager must run as root), and
	// its environment is then Env and the manager's variables only: none
	// of the agent's. Nil: the agent's user and environment.
	Credential *syscall.Credential
	// Cgroup, when set, is the control group the rank is born in (its
	// job's; node/jobcg implements it). Nil: the rank stays in the
	// agent's cgroups.
	Cgroup Cgroup
}

// Cgroup places a rank in its job's control group from its birth, so not
// even a child it forks at once can be outside.
type Cgroup interface {
	// Enter runs on the spawner's locked thread (tid) just before the
	// fork. It returns either a cgroup directory descriptor (≥ 0) for
	// clone3(CLONE_INTO_CGROUP), or -1 after moving the thread itself
	// into the cgroup (the child inherits it). leave runs right after the
	// fork, on the same thread, and must undo Enter.
	Enter(tid int) (fd int, leave func() error, err error)
}

// Exit reports how a rank ended. Exactly one Exit is delivered per Start
// (except a Start refused with ErrClosed).
type Exit struct {
	Job  int64
	Rank int
	PID  int // 0 when no process was created
	// Code is the exit status, or -1 when the rank was killed by a signal.
	// A spawn failure without a process reports 127 (the shell's "command
	// not found"), as the shim does.
	Code int
	// Signal names the terminating signal ("killed", "terminated", with
	// " (core dumped)" when applicable); "" when the rank exited normally.
	Signal  string
	CPUTime time.Duration // user + system, from rusage
	MaxRSS  int64         // bytes
	Started time.Time
	Ended   time.Time
	// Err is non-nil when the rank's program could not be started: the
	// spec was invalid, argv[0] was not found, the fork or exec failed
	// (PID is 0), or the shim exited or was killed before it stopped
	// itself (PID is the shim's; Code is usually 127 and its message is in
	// rank-<Rank>.err). Err is nil for every exit of a program that ran.
	Err error
}

// Config configures a Manager.
type Config struct {
	// Shim is the command prefix that runs ShimMain, e.g.
	// {"/usr/local/bin/cosched", "__rank-exec"}. Shim[0] is resolved with
	// exec.LookPath by NewManager. Empty means ranks cannot be started
	// Stopped (such a Start fails).
	Shim []string
	// StartTimeout bounds how long Start waits for the shim of a Stopped
	// rank to stop itself; past it the shim is killed and Start fails.
	// Zero means 30s.
	StartTimeout time.Duration
	// Log receives the manager's structured logs; nil means no logging.
	Log *zap.Logger
	// Nice is the nice value ranks are born with. It is set once on the
	// spawner's thread, whose children inherit it, so a rank never runs at
	// the agent's own (typically raised) priority, not even for an
	// instant. Nil leaves the spawner at the agent's value.
	Nice *int
	// KeepDir, when set, starts every rank through a keeper (ShimMain's
	// keeper mode; needs Shim) that outlives the agent, and records each
	// keeper there so that a later life of the agent can Adopt it (see
	// the package doc, "Keepers"). Empty: ranks die with the agent.
	KeepDir string
	// KeepOwner names the agent in its keeper records: a record of
	// another owner is refused.
	KeepOwner string
}

// defaultStartTimeout is generous: the shim starts in its job's cgroup,
// which may weigh a tenth of the agent's, beside every other job's busy
// ranks. A shim that is a large binary re-executed (cosched __rank-exec
// spends about 40 ms of CPU before it stops itself, a race-built test
// binary about 100 ms) passed 10 s at load 20–30 on 2 cores and, rarely,
// 30 s. cosched-rank stops itself after about 10 ms of CPU, so 30 s is
// reached only by a shim that is stuck or that the node starves almost
// entirely; its error says which (schedTimes.why).
const defaultStartTimeout = 30 * time.Second

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("rank: manager closed")

// Environment variables the manager sets in every rank.
const (
	EnvJob  = "COSCHED_JOB"
	EnvRank = "COSCHED_RANK"
	EnvSize = "COSCHED_SIZE"
)

// maxCPU bounds Spec.CPU: the affinity calls use a fixed-size CPU set.
const maxCPU = 1024

func (s *Spec) validate() error {
	switch {
	case len(s.Argv) == 0 || s.Argv[0] == "":
		return errors.New("empty argv")
	case s.LogDir == "":
		return errors.New("no log directory")
	case s.Rank < 0 || s.Size <= 0 || s.Rank >= s.Size:
		return fmt.Errorf("rank %d outside size %d", s.Rank, s.Size)
	case s.CPU < -1 || s.CPU >= maxCPU:
		return fmt.Errorf("cpu %d outside [-1, %d)", s.CPU, maxCPU)
	}
	return nil
}

// Resolve is the program a rank of argv[0] name in dir would run (see
// resolve): the agent's checks of it before a launch.
func Resolve(name, dir string) (string, error) { return resolve(name, dir) }

// resolve finds argv[0] as exec.LookPath does, a relative path with a
// slash in dir (the rank's working directory; "": the agent's), and makes
// it absolute, so it means the same thing in the rank as where it was
// submitted.
func resolve(name, dir string) (string, error) {
	if dir != "" && strings.Contains(name, "/") && !filepath.IsAbs(name) {
		name = filepath.Join(dir, name)
	}
	path, err := exec.LookPath(name)
	if err != nil && !errors.Is(err, exec.ErrDot) {
		return "", err
	}
	return filepath.Abs(path)
}

// usableDir says why dir cannot be a working directory for the user of
// cred (nil: the agent's own): it must exist, be a directory, and be
// searchable by that user along its whole path. A root agent checks the
// permission bits as the kernel would for that user (owner, group, then
// others; ACLs aside), so a job is refused with the reason instead of a
// chdir failure that exec would report as a missing program.
func usableDir(dir string, cred *syscall.Credential) error {
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return errors.Unwrap(err) // the path is the caller's to name
	case !fi.IsDir():
		return errors.New("not a directory")
	case cred == nil || cred.Uid == 0:
		return nil
	}
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if !searchable(d, cred) {
			return fmt.Errorf("permission denied to uid %d on %s", cred.Uid, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// searchable reports whether cred's user may search (x) directory d.
func searchable(d string, cred *syscall.Credential) bool {
	var st syscall.Stat_t
	if err := syscall.Stat(d, &st); err != nil {
		return false
	}
	perm := st.Mode & 0o777
	switch {
	case st.Uid == cred.Uid:
		return perm&0o100 != 0
	case st.Gid == cred.Gid || slices.Contains(cred.Groups, st.Gid):
		return perm&0o010 != 0
	}
	return perm&0o001 != 0
}

// environ is the agent's environment, then extra, then the manager's
// variables; when a name repeats the last value wins, at the position of
// its first appearance (raw execve does not deduplicate, and C's getenv
// returns the first match).
func environ(s *Spec) []string {
	var all []string
	if s.Credential == nil {
		all = os.Environ()
	}
	all = append(all, s.Env...)
	all = append(all,
		EnvJob+"="+strconv.FormatInt(s.Job, 10),
		EnvRank+"="+strconv.Itoa(s.Rank),
		EnvSize+"="+strconv.Itoa(s.Size),
	)
	index := make(map[string]int, len(all))
	out := make([]string, 0, len(all))
	for _, kv := range all {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := index[name]; ok {
			out[i] = kv
			continue
		}
		index[name] = len(out)
		out = append(out, kv)
	}
	return out
}

// logFiles opens (creating the directory) the rank's stdin (/dev/null),
// stdout and stderr.
func logFiles(s *Spec) ([]*os.File, error) {
	if err := os.MkdirAll(s.LogDir, 0o755); err != nil {
		return nil, err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	files := []*os.File{null}
	for _, ext := range []string{"out", "err"} {
		name := filepath.Join(s.LogDir, fmt.Sprintf("rank-%d.%s", s.Rank, ext))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			closeAll(files)
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close() // read-only or append-only descriptors the child now holds
	}
}
