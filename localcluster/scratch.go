package localcluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// scratchLock is the file a scratch directory's maker holds locked
// (flock) for as long as it lives. The kernel drops the lock when the
// maker dies, however it dies, so a directory with this file unlocked was
// abandoned by a forced exit (SIGKILL, a second signal, a crash).
const scratchLock = ".cosched-scratch.lock"

// Scratch is a temporary directory holding the state of a command's own
// clusters (a benchmark's: agent logs, rank output). A command that ends
// normally removes it, or keeps it on request; one killed first leaves it
// behind, and the next Scratch with the same prefix removes it once the
// agents of every cluster recorded in it are gone (a Temporary cluster's
// agents stop themselves when their command dies).
type Scratch struct {
	dir  string
	lock *os.File
}

// NewScratch sweeps the abandoned scratch directories named prefix* in
// the system's temporary directory, then makes a new one and locks it.
// removed names the directories swept.
func NewScratch(prefix string) (s *Scratch, removed []string, err error) {
	removed = sweepScratch(os.TempDir(), prefix)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, removed, fmt.Errorf("scratch directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, scratchLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		if err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, removed, fmt.Errorf("scratch directory %s: locking it: %w", dir, err)
	}
	return &Scratch{dir: dir, lock: f}, removed, nil
}

// Dir is the directory's path.
func (s *Scratch) Dir() string { return s.dir }

// Remove removes the directory and everything in it.
func (s *Scratch) Remove() error {
	err := os.RemoveAll(s.dir)
	s.lock.Close()
	return err
}

// Keep leaves the directory for the user (its lock file removed first,
// so that no later sweep takes it).
func (s *Scratch) Keep() error {
	err := os.Remove(filepath.Join(s.dir, scratchLock))
	s.lock.Close()
	return err
}

// sweepScratch removes the directories prefix* in tmp that hold an
// unlocked scratch lock and no cluster with a live agent, and returns
// their paths. Whatever it cannot read or lock it leaves.
func sweepScratch(tmp, prefix string) []string {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		if abandoned(dir) && os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// abandoned reports whether dir is a scratch directory whose maker is
// gone (its lock can be taken) and no agent of whose clusters still runs
// (one may be finishing its orderly stop). The lock taken is dropped at
// once: a racing sweep may remove the directory too, which is harmless.
func abandoned(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, scratchLock), os.O_RDWR, 0)
	if err != nil {
		return false // not a scratch directory, or kept
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // its maker lives
	}
	live := false
	// The clusters' records are at most two levels down (a benchmark's
	// directory is a cluster's, or holds one per run).
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || live {
			return fs.SkipAll
		}
		if d.IsDir() && strings.Count(strings.TrimPrefix(path, dir), string(filepath.Separator)) > 2 {
			return fs.SkipDir
		}
		if d.Name() == filepath.Base(File(dir)) {
			c, err := Load(filepath.Dir(path))
			live = err != nil && !errors.Is(err, fs.ErrNotExist) || err == nil && c.Alive()
		}
		return nil
	})
	return !live
}
