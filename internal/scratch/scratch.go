// Package scratch makes temporary directories that a later maker removes
// when theirs died without removing them (SIGKILL, a second signal, a
// crash): a benchmark's cluster state, a PMIx job's sockets.
//
// A directory holds a lock file its maker keeps locked (flock) for as
// long as it lives. The kernel drops the lock when the maker dies,
// however it dies, so the next New with the same prefix finds the lock
// free and removes the directory (unless the caller's InUse says a
// process of it still runs).
package scratch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockName is the lock file's name in a directory.
const lockName = ".cosched-scratch.lock"

// Dir is a scratch directory, locked by this process.
type Dir struct {
	path string
	lock *os.File
}

// InUse reports whether something other than its maker still uses an
// abandoned directory (e.g. a process recorded in it that is finishing
// its stop): such a directory is left for a later sweep.
type InUse func(dir string) bool

// New removes the abandoned directories named prefix* in the system's
// temporary directory (removed names them), then makes a new one and
// locks it. inUse may be nil.
func New(prefix string, inUse InUse) (d *Dir, removed []string, err error) {
	removed = Sweep(os.TempDir(), prefix, inUse)
	d, err = Make(prefix)
	return d, removed, err
}

// Make makes a new directory named pattern* (os.MkdirTemp's pattern) in
// the system's temporary directory and locks it, sweeping nothing.
func Make(pattern string) (*Dir, error) {
	path, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, fmt.Errorf("scratch directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(path, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(path)
		return nil, fmt.Errorf("scratch directory %s: locking it: %w", path, err)
	}
	return &Dir{path: path, lock: f}, nil
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// Remove removes the directory and everything in it.
func (d *Dir) Remove() error {
	err := os.RemoveAll(d.path)
	d.lock.Close()
	return err
}

// Keep leaves the directory for the user (its lock file removed first,
// so that no later sweep takes it).
func (d *Dir) Keep() error {
	err := os.Remove(filepath.Join(d.path, lockName))
	d.lock.Close()
	return err
}

// Sweep removes the directories prefix* in tmp that are abandoned (their
// lock file is this user's and unlocked) and not inUse, and returns their
// paths. Whatever it cannot read or lock it leaves.
func Sweep(tmp, prefix string, inUse InUse) []string {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		path := filepath.Join(tmp, e.Name())
		if abandoned(path) && (inUse == nil || !inUse(path)) && os.RemoveAll(path) == nil {
			removed = append(removed, path)
		}
	}
	return removed
}

// abandoned reports whether dir's maker is gone: its lock file can be
// locked. The file must be this user's: another user (a job's owner, in
// whose directory it is) could make one but not give it away, so no
// user can have root sweep a directory of its choosing. The lock taken is
// dropped at once: a racing sweep may remove the directory too, which is
// harmless.
func abandoned(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false // not a scratch directory, or kept
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || int(sys.Uid) != os.Geteuid() {
		return false
	}
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}
